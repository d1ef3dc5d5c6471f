"""Fault 2: a lone surrogate in a model answer (legal JSON: ``"\\ud800"``) is replaced by U+FFFD and
reported as an ``encoding`` issue, so every result serialises, hashes and lands in a batch file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium import Engine, RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.errors import ScriptoriumError
from scriptorium.llm.model import LLMResponse
from scriptorium.testing import FakeClient
from scriptorium.usecase.model import RunResult
from scriptorium.usecase.unicode import KEYWORD, clean_value, replace_surrogates
from tests.conftest import RunnerFactory

DOC = "doc.txt"


def assert_serialisable(result: RunResult) -> None:
    wire = result.model_dump_json()
    json.dumps(json.loads(wire), ensure_ascii=False).encode("utf-8")
    assert result.output.sha256.startswith("sha256:")


def test_surrogates_in_text_model_and_stop_reason_are_replaced_and_reported(
    make_runner: RunnerFactory,
) -> None:
    """The result serialises; the output is invalid with an encoding issue; nothing is lost."""
    answer = LLMResponse(
        text="Hello \ud800 world",
        model="m\udfff",
        finish_reason="st\ud801op",
        metadata={"x": "\udc00"},
    )
    result = make_runner(FakeClient([answer])).run(
        RunRequest(prompt_id="greet", inputs={"name": "Ada"})
    )
    assert_serialisable(result)
    assert result.output.text == "Hello \ufffd world"
    assert result.model == "m\ufffd"
    assert result.finish_reason == "st\ufffdop"
    assert not result.validation.valid
    assert result.validation.issues[0].keyword == KEYWORD


def test_a_surrogate_escape_in_json_output_never_reaches_the_value(
    make_runner: RunnerFactory,
) -> None:
    """``{"name": "\\ud800"}`` parses to a lone surrogate: the value is cleaned or refused."""
    result = make_runner(FakeClient(['{"name": "A\\ud800", "email": "x"}'])).run(
        RunRequest(prompt_id="extract/contact", artifacts={"document": DOC})
    )
    assert_serialisable(result)
    assert not result.validation.valid
    assert any(i.keyword == KEYWORD for i in result.validation.issues)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def anthropic_project(root: Path, url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "p.prompt.md").write_text("---\nprofile: a\n---\nhi {{ n }}\n")
    (root / "profiles" / "a.yaml").write_text(
        f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {url}\napi_key_env: K\n"
        "settings: {max_retries: 0}\n"
    )
    return root


def test_a_surrogate_from_the_real_sdk_keeps_run_many_and_the_batch_whole(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """Through the anthropic SDK: the poisoned answer is one result among the others, and every
    result of run_many serialises."""
    server.clear()
    body = (
        '{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6\\ud800",'
        ' "content": [{"type": "text", "text": "bad \\ud800 text"}], "stop_reason": "end_turn",'
        ' "usage": {"input_tokens": 3, "output_tokens": 2}}'
    )
    server.malformed(body.encode(), status=200)
    server.reply("fine")
    engine = Engine(anthropic_project(tmp_path, server.base_url), env={"K": "sk-test-000000000"})
    results = engine.run_many(
        [RunRequest(prompt_id="p", inputs={"n": i}) for i in range(2)], concurrency=1
    )
    assert all(not isinstance(r, ScriptoriumError) for r in results)
    texts = sorted(r.output.text for r in results if isinstance(r, RunResult))
    assert texts == ["bad \ufffd text", "fine"]
    for r in results:
        assert isinstance(r, RunResult)
        assert_serialisable(r)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(st.characters(codec=None), max_size=60),
    model=st.text(max_size=10),
    extra=st.sampled_from(["", "\ud800", "\udfff", "\\ud800", '"\\udc00"']),
)
def test_any_unicode_answer_gives_a_result_that_serialises(
    make_runner: RunnerFactory, text: str, model: str, extra: str
) -> None:
    """Any code points, surrogates included, in the text or the model name."""
    answer = LLMResponse(text=text + extra, model=model + extra)
    result = make_runner(FakeClient([answer])).run(
        RunRequest(prompt_id="extract/contact", artifacts={"document": DOC})
    )
    assert_serialisable(result)


@given(
    st.recursive(
        st.text(max_size=5),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=10,
    )
)
def test_cleaning_leaves_valid_values_alone_and_fixes_the_rest(value: object) -> None:
    """A value is returned as is when clean; cleaned values always encode."""
    cleaned, count = clean_value(value)
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")
    if count == 0:
        assert cleaned is value
    assert replace_surrogates("a\ud800b") == ("a\ufffdb", 1)


def test_an_error_quoting_a_surrogate_is_still_writable(server: FakeAnthropicServer) -> None:
    """An error body quoting a lone surrogate gives an LLMGenerateError whose message encodes."""
    from scriptorium.errors import LLMGenerateError
    from scriptorium.llm.anthropic import AnthropicClient
    from scriptorium.llm.model import LLMRequest, Target
    from scriptorium.llm.retry import RetryHooks
    from scriptorium.prompt.model import Message

    server.clear()
    server.fail(400, message="bad input \ud800 here")
    request = LLMRequest(
        target=Target(provider="anthropic", model="claude-sonnet-4-6", endpoint=server.base_url),
        api_key="sk-ant-test-000000000000",
        messages=(Message(role="user", content="hi"),),
    )
    hooks = RetryHooks(sleep=lambda s: None)
    with AnthropicClient(hooks=hooks) as client, pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    caught.value.message.encode("utf-8")
    json.dumps(caught.value.to_dict(), ensure_ascii=False).encode("utf-8")
