"""Defaults a user relies on: an empty ``FakeClient`` for code that must not call, one repair by
default once repair is on, and undeclared inputs refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient, UnexpectedCall

JSON_PROMPT = """---
profile: offline
output:
  format: json_schema
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
---
Give n.
"""
INPUTS_PROMPT = """---
profile: offline
inputs:
  type: object
  properties: {max_sentences: {type: integer}, topic: {type: string}}
---
Write {{ max_sentences | default(3) }} sentences about {{ topic | default('cats') }}.
"""
OPEN_PROMPT = """---
profile: offline
inputs:
  type: object
  properties: {topic: {type: string}}
  additionalProperties: true
---
About {{ topic }}.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "num.prompt.md").write_text(JSON_PROMPT, encoding="utf-8")
    (tmp_path / "prompts" / "write.prompt.md").write_text(INPUTS_PROMPT, encoding="utf-8")
    (tmp_path / "prompts" / "open.prompt.md").write_text(OPEN_PROMPT, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text("provider: fake\n", encoding="utf-8")
    return tmp_path


def test_an_empty_fake_client_lets_prepare_through_and_fails_a_call_naming_the_prompt(
    project: Path,
) -> None:
    """``FakeClient()`` is allowed; a call is an AssertionError naming the prompt, still recorded."""
    client = FakeClient()
    engine = Engine(project, client=client)
    engine.prepare("num")
    assert client.calls == 0
    with pytest.raises(AssertionError, match="'num'"):
        engine.run("num")
    with pytest.raises(AssertionError, match="'num'"):
        asyncio.run(engine.arun("num"))
    assert client.calls == 2


def test_only_the_fake_clients_own_refusal_escapes_translation(project: Path) -> None:
    """Any other AssertionError a client raises is a client failure like any exception."""

    def broken(request: object) -> str:
        raise AssertionError("a bug in a scripted callable")

    engine = Engine(project, client=FakeClient([broken]))
    with pytest.raises(errors.LLMGenerateError) as caught:
        engine.run("num")
    assert isinstance(caught.value.__cause__, AssertionError)
    with pytest.raises(UnexpectedCall):
        FakeClient().generate(_request())


def _request() -> LLMRequest:
    return LLMRequest(target=Target(provider="fake"), messages=(Message(role="user", content="x"),))


def test_repair_on_means_one_attempt_when_the_prompt_sets_none(project: Path) -> None:
    """``repair_attempts`` defaults to 1: Engine(repair=True) repairs once without prompt changes."""
    assert Engine(project, client=FakeClient()).prepare("num").output.repair_attempts == 1
    client = FakeClient(['{"n": "three"}', '{"n": 3}'])
    result = Engine(project, client=client, repair=True).run("num")
    assert result.validation.valid
    assert result.validation.repaired
    assert [a.kind for a in result.attempts] == ["initial", "repair"]
    # Without a repairer the default changes nothing: one call, invalid output reported.
    plain = Engine(project, client=FakeClient(['{"n": "three"}'])).run("num")
    assert not plain.validation.valid
    assert len(plain.attempts) == 1


def test_an_undeclared_input_is_refused_naming_it_and_the_declared_ones(project: Path) -> None:
    client = FakeClient()
    engine = Engine(project, client=client)
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare("write", inputs={"max_sentence": 3})
    message = caught.value.message
    assert "'max_sentence'" in message
    assert "'max_sentences'" in message
    assert "'topic'" in message
    assert caught.value.field == "inputs"
    assert engine.prepare("write", inputs={"max_sentences": 3}).messages


def test_a_schema_allowing_extras_accepts_them(project: Path) -> None:
    engine = Engine(project, client=FakeClient())
    prepared = engine.prepare("open", inputs={"topic": "owls", "tone": "dry"})
    assert prepared.messages[0].content == "About owls."
