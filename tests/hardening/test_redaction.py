"""Fault 7: a key never reaches a traceback, a log or a message, whichever way it travels: echoed
by a server in an error body (kept in the SDK exception chained as ``__cause__``), as the error's
``type`` (case kept for the case-sensitive redaction), or as an input value failing the schema."""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.errors import (
    ForeignError,
    InvalidRequestError,
    LLMGenerateError,
    PromptLoadError,
    scrub_chain,
    translate,
)
from scriptorium.llm.anthropic import AnthropicClient
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient
from tests.conftest import RunnerFactory

KEY = "sk-ant-api03-CaNaRy0123456789abcdefXYZ"
HOOKS = RetryHooks(sleep=lambda s: None, jitter=lambda low, high: 1.0)


def printed(err: BaseException) -> str:
    """Everything a traceback and ``logging.exception`` show of ``err``."""
    text = "".join(traceback.format_exception(err))
    stream = io.StringIO()
    logger = logging.getLogger("scriptorium.test.redaction")
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        try:
            raise err
        except type(err):
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    return text + stream.getvalue()


def request(provider: str, url: str) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, model="m", endpoint=url),
        api_key=KEY,
        messages=(Message(role="user", content="hi"),),
    )


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("status", [400, 401, 500])
def test_a_key_echoed_in_an_anthropic_error_body_is_in_no_traceback(
    anthropic_server: FakeAnthropicServer, status: int
) -> None:
    """The SDK error holding the echoed key is replaced in the chain by a scrubbed stand-in."""
    anthropic_server.clear()
    for _ in range(3):
        anthropic_server.fail(status, message=f"invalid x-api-key: {KEY}")
    with AnthropicClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        client.generate(request("anthropic", anthropic_server.base_url))
    assert KEY not in printed(caught.value)
    assert isinstance(caught.value.__cause__, ForeignError)
    assert caught.value.__context__ is caught.value.__cause__


def test_a_key_echoed_by_an_openai_server_is_in_no_traceback(
    openai_server: FakeOpenAIServer,
) -> None:
    """The same through the openai SDK."""
    openai_server.clear()
    openai_server.fail(401, message=f"Incorrect API key provided: {KEY}")
    client = OpenAIClient(hooks=HOOKS)
    try:
        with pytest.raises(LLMGenerateError) as caught:
            client.generate(request("openai", openai_server.url))
    finally:
        client.close()
    assert KEY not in printed(caught.value)


@pytest.mark.parametrize("where", ["type", "code"])
def test_an_error_type_holding_the_key_is_redacted_with_its_case_kept(
    anthropic_server: FakeAnthropicServer, where: str
) -> None:
    """The error type is shown as sent, so the case-sensitive redaction still finds the key."""
    anthropic_server.clear()
    anthropic_server.fail(400, body={"type": "error", "error": {where: KEY, "message": "no"}})
    with AnthropicClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        client.generate(request("anthropic", anthropic_server.base_url))
    assert KEY not in printed(caught.value)
    assert KEY.lower() not in printed(caught.value).lower()


def test_a_client_raising_with_the_key_is_scrubbed_at_the_run_boundary(
    make_runner: RunnerFactory,
) -> None:
    """A custom client's exception chain and message are scrubbed where they enter the run."""

    def broken(req: LLMRequest) -> str:
        try:
            raise ConnectionError(f"proxy refused key {KEY}")
        except ConnectionError as inner:
            raise RuntimeError(f"wrapped: {KEY}") from inner

    runner = make_runner(client=FakeClient([broken]))
    with pytest.raises(LLMGenerateError) as caught:
        runner.run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}, api_key=KEY))
    assert KEY not in printed(caught.value)

    def own(req: LLMRequest) -> str:
        raise LLMGenerateError(f"my adapter saw {KEY}", reason="auth") from ValueError(KEY)

    runner = make_runner(client=FakeClient([own]))
    with pytest.raises(LLMGenerateError) as caught:
        runner.run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}, api_key=KEY))
    assert KEY not in printed(caught.value)


def test_an_input_holding_a_key_is_not_quoted_by_the_inputs_error(
    make_runner: RunnerFactory,
) -> None:
    """An inputs-schema failure names the place and the rule, never the value."""
    runner = make_runner(FakeClient(["unused"]))
    with pytest.raises(InvalidRequestError) as caught:
        runner.prepare(RunRequest(prompt_id="greet", inputs={"name": [KEY]}))
    assert KEY not in printed(caught.value)
    assert "/name" in caught.value.message


def test_inputs_with_non_string_keys_are_refused(make_runner: RunnerFactory) -> None:
    """``{1: 2}`` would hash like ``{"1": 2}`` but render differently: refused at any depth,
    not converted (the request model refuses the top level; prepare checks what it holds)."""
    runner = make_runner(FakeClient(["unused"]))
    nested = RunRequest(prompt_id="greet", inputs={"name": "Ada", "x": [{1: 2}]})
    with pytest.raises(InvalidRequestError, match="keys must be strings"):
        runner.prepare(nested)
    int_keyed: dict[Any, Any] = {1: 2}
    built = RunRequest.model_construct(prompt_id="greet", inputs=int_keyed)
    with pytest.raises(InvalidRequestError, match="keys must be strings"):
        runner.prepare(built)


def test_a_chain_without_the_key_keeps_its_exceptions() -> None:
    """Only exceptions that hold a key are replaced: others stay matchable by class."""
    cause = OSError("disk full")
    with pytest.raises(PromptLoadError) as caught, translate(PromptLoadError, "x", secrets=[KEY]):
        raise cause
    assert caught.value.__cause__ is cause


class Carrier(Exception):
    """An exception keeping the canary in an attribute only (as an SDK error keeps its body)."""

    def __init__(self, message: str, body: Any) -> None:
        super().__init__(message)
        self.body = body


WORDS = st.sampled_from(["error", "key", KEY, "token", " ", "sk-", "\n"])
TEXTS = st.lists(WORDS, max_size=6).map("".join)
LINKS = st.lists(
    st.tuples(st.sampled_from([ValueError, RuntimeError, Carrier, KeyError]), TEXTS, st.booleans()),
    min_size=1,
    max_size=6,
)


@settings(max_examples=100, deadline=None)
@given(LINKS)
def test_any_exception_chain_carrying_the_canary_prints_without_it(links: list[Any]) -> None:
    """However the canary sits in a chain (message, attribute, cause or context), the scrubbed
    chain prints without it."""
    error: BaseException | None = None
    for kind, text, as_cause in links:
        new = Carrier(text, {"echo": text}) if kind is Carrier else kind(text)
        if error is not None:
            if as_cause:
                new.__cause__ = error
            else:
                new.__context__ = error
        error = new
    assert error is not None
    wrapped = LLMGenerateError("call failed", reason="server_error")
    wrapped.__cause__ = error
    scrubbed = scrub_chain(wrapped, [KEY])
    shown = printed(scrubbed)
    assert KEY not in shown
