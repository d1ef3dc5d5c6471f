"""One contract for every prompt repository: the file adapter and the in-memory one behave alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from scriptorium.errors import InvalidRequestError, PromptLoadError
from scriptorium.promptdef import FileRepository, MemoryRepository, Repository, Section

RepoFactory = Callable[[Mapping[str, str]], Repository]

SUMMARIZE = """---
description: Summarize a document for an audience
version: 3
profile: default
inputs:
  type: object
  required: [audience]
  properties: {audience: {type: string}}
artifacts:
  document: {required: true, media_type: "text/*", max_bytes: 1000000}
output:
  format: json_schema
  schema: schemas/summary.schema.json
  repair_attempts: 1
session_id: "summary-{{ audience }}"
---
## system
You write summaries for {{ audience }}.

## user
{{ artifacts.document.text }}
"""

INVOICE = """---
output: {format: json}
---
Extract the invoice fields as JSON.
"""

BAD_IDS = [
    "",
    "Upper",
    "../secret",
    "a/../b",
    "/etc/passwd",
    "a//b",
    "a/",
    "-leading-dash",
    "_leading",
    "a.b",
    "a b",
    "a\x00b",
    "x" * 65,
    "a/b/c/d/e",
    "extract/invoice.prompt.md",
    "é",
]


def _file_repo(tmp_path: Path) -> RepoFactory:
    def build(texts: Mapping[str, str]) -> Repository:
        root = tmp_path / "prompts"
        root.mkdir(exist_ok=True)
        for prompt_id, text in texts.items():
            path = root / f"{prompt_id}.prompt.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return FileRepository(root)

    return build


def _memory_repo(tmp_path: Path) -> RepoFactory:
    return lambda texts: MemoryRepository(dict(texts))


@pytest.fixture(params=["file", "memory"])
def make_repo(request: pytest.FixtureRequest, tmp_path: Path) -> RepoFactory:
    """A factory for a repository holding the given ``.prompt.md`` texts, once per adapter."""
    factories = {"file": _file_repo, "memory": _memory_repo}
    return factories[request.param](tmp_path)


def test_get_parses_front_matter_and_sections(make_repo: RepoFactory) -> None:
    """A definition comes back with its front matter, its sections and its derived id/source."""
    definition = make_repo({"summarize": SUMMARIZE}).get("summarize")
    assert definition.id == "summarize"
    assert definition.source == "summarize.prompt.md"
    assert definition.version == 3
    assert definition.profile == "default"
    assert definition.inputs is not None
    assert definition.inputs["required"] == ["audience"]
    assert definition.artifacts["document"].media_type == "text/*"
    assert definition.artifacts["document"].max_bytes == 1_000_000
    assert definition.output.format == "json_schema"
    assert definition.output.schema_ == "schemas/summary.schema.json"
    assert definition.output.repair_attempts == 1
    assert definition.session_id == "summary-{{ audience }}"
    assert definition.sections == (
        Section(role="system", template="You write summaries for {{ audience }}."),
        Section(role="user", template="{{ artifacts.document.text }}"),
    )


def test_nested_ids_live_in_folders(make_repo: RepoFactory) -> None:
    """``extract/invoice`` is found, with its source path relative to the root."""
    definition = make_repo({"extract/invoice": INVOICE}).get("extract/invoice")
    assert definition.id == "extract/invoice"
    assert definition.source == "extract/invoice.prompt.md"
    assert definition.sections == (
        Section(role="user", template="Extract the invoice fields as JSON."),
    )


def test_missing_prompt_is_a_load_error(make_repo: RepoFactory) -> None:
    """An id nobody defined raises PromptLoadError naming the id."""
    with pytest.raises(PromptLoadError, match="not found") as info:
        make_repo({"summarize": SUMMARIZE}).get("summary")
    assert info.value.prompt_id == "summary"


@pytest.mark.parametrize(
    "text",
    [
        "---\ndescription: [unclosed\n---\nHi\n",
        "---\n- a list\n---\nHi\n",
        "---\ndescription: x\nHi\n",
        "---\nversion: 1\nversion: 2\n---\nHi\n",
        "---\noutput: {format: xml}\n---\nHi\n",
        "---\noutput: {repair_attempts: 9}\n---\nHi\n",
    ],
    ids=["bad-yaml", "not-a-mapping", "unclosed", "duplicate-key", "bad-format", "out-of-range"],
)
def test_invalid_front_matter_is_a_load_error(make_repo: RepoFactory, text: str) -> None:
    """Malformed or invalid front matter raises PromptLoadError, not a YAML or pydantic error."""
    with pytest.raises(PromptLoadError) as info:
        make_repo({"broken": text}).get("broken")
    assert info.value.prompt_id == "broken"


def test_unknown_front_matter_keys_are_refused(make_repo: RepoFactory) -> None:
    """A key the format does not define is an error naming the key (typos do not pass)."""
    repo = make_repo({"typo": "---\ndescripton: Oops\n---\nHi\n"})
    with pytest.raises(PromptLoadError, match="descripton: unknown key"):
        repo.get("typo")


def test_a_malformed_body_is_a_load_error(make_repo: RepoFactory) -> None:
    """Text before the first role line is refused rather than silently dropped."""
    repo = make_repo({"stray": "Stray words\n## user\nHi\n"})
    with pytest.raises(PromptLoadError, match="before the first role line"):
        repo.get("stray")


def test_list_gives_every_id_sorted(make_repo: RepoFactory) -> None:
    """list() returns all ids, nested ones included, in sorted order."""
    repo = make_repo({"summarize": SUMMARIZE, "extract/invoice": INVOICE, "a": INVOICE})
    assert repo.list() == ["a", "extract/invoice", "summarize"]


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_malformed_ids_are_invalid_requests(make_repo: RepoFactory, bad_id: str) -> None:
    """An id outside the grammar is InvalidRequestError (a ValueError), never a load error."""
    repo = make_repo({"summarize": SUMMARIZE})
    with pytest.raises(InvalidRequestError) as info:
        repo.get(bad_id)
    assert isinstance(info.value, ValueError)
    assert info.value.field == "prompt_id"


def test_repeated_gets_return_the_same_definition(make_repo: RepoFactory) -> None:
    """The parsed definition is reused (it is frozen), not parsed again on every get."""
    repo = make_repo({"summarize": SUMMARIZE})
    assert repo.get("summarize") is repo.get("summarize")
