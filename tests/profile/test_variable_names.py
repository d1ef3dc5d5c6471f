"""One rule for every option that names a secret's variable (``api_key_env``, a platform's token
variable): a name, never a pasted secret, and never quoted when it is not one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, errors
from scriptorium.llm.anthropic.platforms import option_problems as anthropic_problems
from scriptorium.llm.gemini.api import option_problems as gemini_problems
from scriptorium.llm.model import key_from_env
from scriptorium.llm.openai.azure import option_problems as azure_problems
from scriptorium.profile.model import variable_name_problem

PASTED = [
    "ya29.a0AfH6SMBxQ7z9kLmN3pQrStUvWxYz0123456789",
    "sk-ant-api03-Zk9q8w7e6r5t4y3u2i1o",
    "AIzaSyD3x4mpl3K3yV4lu3F0rT3st1ngPurp0s",
    "two words",
]


@pytest.mark.parametrize("value", PASTED)
def test_what_is_not_a_variable_name_is_refused_without_being_quoted(value: str) -> None:
    problem = variable_name_problem("options.access_token_env", value)
    assert problem is not None
    assert problem.startswith("options.access_token_env must name")
    assert value not in problem


@pytest.mark.parametrize("value", ["GEMINI_TOKEN", "_x", "VERTEX_ACCESS_TOKEN_2"])
def test_a_variable_name_passes(value: str) -> None:
    assert variable_name_problem("api_key_env", value) is None


@pytest.mark.parametrize(
    "problems",
    [
        lambda v: anthropic_problems(
            {"platform": "vertex", "project": "p", "region": "us-east5", "access_token_env": v}
        ),
        lambda v: azure_problems(
            {"platform": "azure", "api_version": "2024-10-21", "azure_ad_token_env": v}
        ),
        lambda v: list(gemini_problems({"vertexai": True, "project": "p", "access_token_env": v})),
    ],
    ids=["anthropic-vertex", "azure", "gemini-vertex"],
)
@pytest.mark.parametrize("value", PASTED)
def test_every_platform_checks_its_token_variable_by_the_same_rule(
    problems: Any, value: str
) -> None:
    found = problems(value)
    assert any("must name" in p for p in found), found
    assert not any(value in p for p in found)


@pytest.mark.parametrize("value", PASTED)
def test_a_key_variable_that_is_no_name_is_never_shown_nor_looked_up(value: str) -> None:
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        key_from_env({value: "sk-real-value-1234567"}, value, reader="profile 'g'")
    assert value not in str(caught.value)
    assert value not in repr(caught.value.attrs())


def test_a_pasted_vertex_token_in_a_gemini_profile_is_refused_unquoted(tmp_path: Path) -> None:
    token = PASTED[0]
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hi.prompt.md").write_text("Hello\n", encoding="utf-8")
    (tmp_path / "profiles" / "g.yaml").write_text(
        "provider: gemini\nmodel: gemini-2.5-flash\n"
        f'options: {{vertexai: true, project: p, location: us-central1, access_token_env: "{token}"}}\n',
        encoding="utf-8",
    )
    engine = Engine(tmp_path, env={})
    with pytest.raises(errors.ScriptoriumError) as caught:
        engine.prepare("hi", profile="g")
    assert token not in str(caught.value)
    assert token not in repr(caught.value.attrs())
    messages = [p.message for p in engine.check()]
    assert any("options.access_token_env must name" in m for m in messages), messages
    assert not any(token in m for m in messages)
