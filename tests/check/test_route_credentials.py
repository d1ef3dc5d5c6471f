"""A key variable a profile's route cannot take is reported by ``check`` and refused at prepare by
the same rule (the route's ``no_key_env``), before any key is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, errors

PROFILES = {
    "bedrock": (
        "provider: anthropic\nmodel: us.anthropic.claude-sonnet-4-6-v1:0\n"
        "api_key_env: ANTHROPIC_API_KEY\noptions: {platform: bedrock, region: us-east-1}\n",
        "name no api_key_env",
    ),
    "vertex": (
        "provider: anthropic\nmodel: claude-sonnet-4-6@20251001\napi_key_env: ANTHROPIC_API_KEY\n"
        "options: {platform: vertex, project: my-project, region: us-east5}\n",
        "name no api_key_env",
    ),
    "gemini-vertex": (
        "provider: gemini\nmodel: gemini-2.5-flash\napi_key_env: GEMINI_API_KEY\n"
        "options: {vertexai: true, project: my-project, location: us-central1}\n",
        "name no api_key_env",
    ),
    "azure": (
        "provider: openai\nmodel: my-deployment\nendpoint: https://r.openai.azure.com\n"
        "api_key_env: AZURE_OPENAI_API_KEY\n"
        "options: {platform: azure, api_version: '2024-10-21', azure_ad_token_env: AZURE_TOKEN}\n",
        "not both",
    ),
}


def _project(root: Path, name: str) -> Path:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("Hello\n", encoding="utf-8")
    (root / "profiles" / f"{name}.yaml").write_text(PROFILES[name][0], encoding="utf-8")
    return root


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_check_reports_a_key_variable_the_route_takes_no(tmp_path: Path, name: str) -> None:
    messages = [p.message for p in Engine(_project(tmp_path, name)).check()]
    assert any(PROFILES[name][1] in m for m in messages), messages


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_prepare_refuses_it_naming_the_field_whatever_the_environment(
    tmp_path: Path, name: str
) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-set-1234567", "GEMINI_API_KEY": "AIza-set-12345678"}
    engine = Engine(_project(tmp_path, name), env={**env, "AZURE_OPENAI_API_KEY": "k" * 32})
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare("hi", profile=name)
    assert caught.value.field == "api_key_env"
    assert PROFILES[name][1] in caught.value.message


def test_a_profile_of_the_providers_own_api_is_not_reported(tmp_path: Path) -> None:
    root = tmp_path
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("Hello\n", encoding="utf-8")
    (root / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: ANTHROPIC_API_KEY\n",
        encoding="utf-8",
    )
    assert Engine(root).check() == []
