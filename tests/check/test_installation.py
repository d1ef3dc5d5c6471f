"""``check`` says what a run of each profile would miss on this machine: its provider's package,
or its platform's library, with the install line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scriptorium import Engine

PROFILES = {
    "gem": ("provider: gemini\nmodel: gemini-2.5-flash\n", "google.genai", "[gemini]"),
    "gpt": ("provider: openai\nmodel: gpt-4.1-mini\n", "openai", "[openai]"),
    "claude": ("provider: anthropic\nmodel: claude-sonnet-4-6\n", "anthropic", "[anthropic]"),
    "bedrock": (
        "provider: anthropic\nmodel: us.anthropic.claude-sonnet-4-6-v1:0\n"
        "options: {platform: bedrock, region: us-east-1}\n",
        "boto3",
        "[bedrock]",
    ),
}


def _project(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("Hello\n", encoding="utf-8")
    for name, (text, _, _) in PROFILES.items():
        (root / "profiles" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_provider_whose_package_is_missing_is_reported_with_its_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    module, extra = PROFILES[name][1], PROFILES[name][2]
    monkeypatch.setitem(sys.modules, module, None)  # as if the extra were not installed
    problems = Engine(_project(tmp_path), env={}).check()
    found = [p for p in problems if p.kind == "provider_not_installed"]
    if module == "anthropic":  # Bedrock's route is Claude's too
        assert {p.file for p in found} == {"profiles/claude.yaml", "profiles/bedrock.yaml"}
    else:
        assert [p.file for p in found] == [f"profiles/{name}.yaml"]
    assert f"scriptorium-llm{extra}" in found[0].message
    assert found[0].severity == "warning"


def test_installed_providers_are_not_reported(tmp_path: Path) -> None:
    problems = Engine(_project(tmp_path), env={}).check()
    assert not [p for p in problems if p.kind == "provider_not_installed"]
