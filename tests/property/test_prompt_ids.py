"""Whatever the id, a prompt repository opens no file outside its root."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium.errors import InvalidRequestError, PromptLoadError
from scriptorium.promptdef import PROMPT_ID_PATTERN, FileRepository, is_valid_prompt_id

_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # An audit hook sees every open() and os.open() in the process, including ones our code would
    # not admit to; it stays installed for the session but records only inside ``_recording``.
    if _opened is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@contextmanager
def _recording() -> Iterator[list[str]]:
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``prompts/`` with one valid prompt, next to a secret prompt file that must stay unread."""
    base = tmp_path_factory.mktemp("project")
    (base / "prompts" / "a").mkdir(parents=True)
    (base / "prompts" / "a" / "b.prompt.md").write_text("Hi\n")
    (base / "secret.prompt.md").write_text("---\ndescription: SECRET\n---\nleak\n")
    (base / "prompts" / "link.prompt.md").symlink_to(base / "secret.prompt.md")
    return base / "prompts"


ids = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="ab/.-_\\\x00 ", max_size=30),
    st.sampled_from(["../secret", "a/../../secret", "/etc/passwd", "link", "a/b", "..", "."]),
    st.from_regex(PROMPT_ID_PATTERN, fullmatch=True),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt_id=ids)
def test_get_never_opens_a_file_outside_the_root(root: Path, prompt_id: str) -> None:
    """get() returns, or raises InvalidRequestError/PromptLoadError, and opens only files inside."""
    repo = FileRepository(root)
    real_root = os.path.realpath(root)
    with _recording() as opened:
        try:
            definition = repo.get(prompt_id)
        except InvalidRequestError:
            assert not is_valid_prompt_id(prompt_id)
        except PromptLoadError:
            pass
        else:
            assert definition.description != "SECRET"
    for path in opened:
        real = os.path.realpath(path)
        assert os.path.commonpath((real_root, real)) == real_root, path


def test_the_audit_hook_sees_prompt_reads(root: Path) -> None:
    """The check above is not vacuous: loading a prompt is recorded as an open of its file."""
    with _recording() as opened:
        FileRepository(root).get("a/b")
    assert os.path.realpath(root / "a" / "b.prompt.md") in opened


@settings(max_examples=200, deadline=None)
@given(prompt_id=st.from_regex(PROMPT_ID_PATTERN, fullmatch=True))
def test_every_valid_id_names_a_path_inside_the_root(prompt_id: str) -> None:
    """An id the grammar accepts cannot spell ``..``, an absolute path or anything outside."""
    root = "/srv/project/prompts"
    path = os.path.normpath(os.path.join(root, prompt_id + ".prompt.md"))
    assert path.startswith(root + "/")
    assert ".." not in Path(prompt_id).parts
