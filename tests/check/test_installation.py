"""``check`` says what a run of each profile would miss on this machine: its provider's package
(with the install line) and, for Bedrock, any sign of AWS credentials."""

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


def test_bedrock_without_any_aws_credentials_gets_a_hint(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    problems = Engine(_project(tmp_path / "p"), env={"HOME": str(home)}).check()
    hints = [p for p in problems if p.kind == "credentials_hint"]
    assert [p.file for p in hints] == ["profiles/bedrock.yaml"]
    assert "aws_profile" in hints[0].message


@pytest.mark.parametrize("variable", ["AWS_ACCESS_KEY_ID", "AWS_PROFILE"])
def test_bedrock_with_aws_credentials_gets_none(tmp_path: Path, variable: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), variable: "AKIAEXAMPLEEXAMPLE1"}
    problems = Engine(_project(tmp_path / "p"), env=env).check()
    assert not [p for p in problems if p.kind == "credentials_hint"]


def test_a_shared_credentials_file_counts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("[default]\n", encoding="utf-8")
    problems = Engine(_project(tmp_path / "p"), env={"HOME": str(home)}).check()
    assert not [p for p in problems if p.kind == "credentials_hint"]
