"""One harness per LLM adapter: how to script it, how to call it, what can be observed of it.

The contract tests speak only to a :class:`Harness`; each adapter's harness turns "answer this
text", "fail with 429 and retry-after 4", "cut the stream off after this text" into what its
server or fake understands. A case an adapter cannot express is skipped by its harness with the
reason (:meth:`Harness.cannot`), so it shows as skipped, never as passed.

- ``anthropic``, ``openai`` and ``gemini``: the adapter through its real SDK against the loopback
  fake server of ``scriptorium.testing``; backoff sleeps are recorded, not slept, and the retry
  clock moves only by them (:class:`RetryClock`).
- ``gemini_vertex``: the gemini adapter on Vertex AI (``options.vertexai``), the access token as
  the key.
- ``bedrock``, ``vertex`` and ``azure``: the same adapters reached through a cloud platform (a
  profile's ``options.platform``), through ``AnthropicBedrock`` / ``AnthropicVertex`` /
  ``AzureOpenAI`` against the fakes of those platforms' own routes, with fake credentials (AWS
  keys in the environment, set by the fixture; an access token or an Azure key as the key).
- ``openai_responses`` and ``azure_responses``: the openai adapter on the Responses API
  (``options.api: responses``) against the same fakes, which serve ``/v1/responses`` (Azure's
  ``/openai/responses``) from the same script.
- ``fake``: the profile-configured canned responder, built from a profile's ``options``.
- ``replay``: every operation runs twice, first against a record-mode ``ReplayClient`` over the
  ``anthropic`` harness (which consumes the script and writes the cassette), then against a fresh
  replay-mode one reading that cassette; the second pass is what the test sees.
- ``fake_client``: ``scriptorium.testing.FakeClient``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import pytest

from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium.llm.anthropic import AnthropicClient
from scriptorium.llm.bedrock.client import BedrockClient
from scriptorium.llm.fake import FakeProviderClient
from scriptorium.llm.gemini import GeminiClient
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.openai import OpenAIClient
from scriptorium.llm.replay import ReplayClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.prompt.model import Message
from scriptorium.testing import (
    FakeAnthropicServer,
    FakeAzureOpenAIServer,
    FakeBedrockServer,
    FakeClient,
    FakeGeminiServer,
    FakeOpenAIServer,
    FakeVertexServer,
)
from scriptorium.usecase import Runner, RunRequest
from tests.conftest import RunnerFactory

T = TypeVar("T")

KEY = "sk-contract-canary-5b0e7d31c2a94f68"
KEY_ENV = "CONTRACT_API_KEY"

#: What every contract test sends unless it says otherwise.
USER_TEXT = "Say hello."

#: The one run of the contract's Runner-level cases (see :func:`runner_over`).
SAY = RunRequest(prompt_id="say")


class RetryClock:
    """The retry loop's clock and sleeps: sleeping is recorded and moves the clock, nothing else
    does, so budgets and backoffs are exact and take no real time."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        return sum(self.slept)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    @property
    def total(self) -> float:
        return round(sum(self.slept), 6)

    def hooks(self) -> RetryHooks:
        return RetryHooks(
            clock=self.now, sleep=self.sleep, asleep=self.asleep, jitter=lambda _lo, _hi: 1.0
        )


class Harness:
    """What the contract tests need of an adapter. Methods an adapter cannot honour skip."""

    name: ClassVar[str]
    #: The provider and model its requests name.
    provider: ClassVar[str]
    model: ClassVar[str]
    #: The price table's name for ``model``, where they differ (a cloud platform's model id).
    priced_as: ClassVar[str | None] = None
    #: HTTP requests one answer costs (0: it is answered from a recording).
    requests_per_answer: ClassVar[int] = 1
    #: How an answer is priced: ``table`` (now, from the price table), ``recorded`` (nothing now;
    #: what the recording cost is in ``metadata["replay"]``), ``none`` (no price at all).
    pricing: ClassVar[str] = "none"
    #: Whether an answer's token counts can be scripted.
    scripts_usage: ClassVar[bool] = True
    #: The strategy ``auto`` picks for the contract's schema (None: no structured-output
    #: strategies at all).
    auto_picks: ClassVar[str | None] = None
    #: Requests ``verify`` makes on a working setup.
    requests_to_verify: ClassVar[int] = 1
    #: What cannot be expressed, and why (the key is the capability).
    reasons: ClassVar[Mapping[str, str]] = {}
    #: The route's options (a cloud platform's, an API's) that every request, profile and
    #: verify carries.
    options: ClassVar[Mapping[str, Any]] = {}
    #: The key requests and verify carry (None: the route signs with other credentials).
    sent_key: ClassVar[str | None] = KEY

    def __init__(self) -> None:
        self.clock = RetryClock()

    # --- calling ---------------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The client under test."""
        raise NotImplementedError

    def run(self, op: Callable[[Any], T], *, record: Callable[[Any], object] | None = None) -> T:
        """``op(client)``. (``record`` is what a recording harness records with first, when it
        is not ``op`` itself.)"""
        return op(self.client)

    def request(self, **fields: Any) -> LLMRequest:
        """A request this adapter serves."""
        base: dict[str, Any] = {
            "target": self.target(),
            "api_key": self.sent_key,
            "messages": (Message(role="user", content=USER_TEXT),),
            "options": dict(self.options),
        }
        base.update(fields)
        return LLMRequest(**base)

    def target(self) -> Target:
        return Target(provider=self.provider, model=self.model)

    def profile(self) -> dict[str, Any]:
        """A profile whose runs this adapter serves (``env`` holds its key)."""
        return {"provider": self.provider, "model": self.model}

    env: Mapping[str, str] = {KEY_ENV: KEY}

    def close(self) -> None:
        """Release what the harness opened."""

    # --- scripting -------------------------------------------------------------------------------

    def cannot(self, capability: str) -> NoReturn:
        """Skip the test: this adapter cannot express ``capability``."""
        pytest.skip(f"{self.name}: {self.reasons[capability]}")

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        """The next request is answered with ``text`` (``finish``: stop, length or refusal);
        streamed in pieces of ``chunks`` characters, ``pace_s`` apart."""
        raise NotImplementedError

    def answer_structured(self, value: Any, strategy: str) -> None:
        """The next request is answered with ``value`` in the shape ``strategy`` asks for."""
        self.cannot("strategies")

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        """The next request is answered with ``text`` after the model reasoned ``reasoning``,
        ``reasoning_tokens`` of its ``output_tokens`` (input: 10 tokens)."""
        self.cannot("reasoning")

    def fail(self, status: int, *, headers: Mapping[str, str] | None = None) -> None:
        """The next request is answered with an error status."""
        self.cannot("transport")

    def reset_connection(self) -> None:
        """The next request's connection is dropped without an answer."""
        self.cannot("transport")

    def slow(self, seconds: float, text: str = "late") -> None:
        """The next request is answered only after ``seconds``."""
        self.cannot("transport")

    def refuse_connections(self) -> None:
        """From now on, requests go where nothing listens."""
        self.cannot("transport")

    def cut_stream(self, text: str, *, how: str) -> None:
        """The next streaming request gets ``text`` and then no terminator: the body ends there
        (``how="eof"``) or the connection is reset (``how="reset"``)."""
        self.cannot("transport")

    def foreign_body_to_stream(self, kind: str, text: str = "") -> None:
        """The next streaming request is answered with something that is not a stream: the
        complete answer ``text`` as JSON (``answer``), JSON that is no answer (``json``), HTML
        (``html``), or an event stream with no events (``empty``)."""
        self.cannot("transport")

    def provider_count(self, tokens: int) -> bool:
        """Make the provider's token counting answer ``tokens``; False when it has none."""
        return False

    def break_verify(self) -> str:
        """Make the next ``verify`` fail; the reason it must fail with."""
        self.cannot("verify")

    # --- observing -------------------------------------------------------------------------------

    def requests_made(self) -> int:
        """HTTP requests the adapter has sent."""
        self.cannot("transport")

    def last_body(self) -> dict[str, Any]:
        """The JSON body of the last request sent."""
        self.cannot("transport")

    def wire_strategy(self) -> str:
        """The structured-output strategy the last request's body shows (native, tool, prompt)."""
        self.cannot("strategies")

    def output_limits(self, body: dict[str, Any]) -> list[int]:
        """The output-token limits a request body sets, where this provider's wire puts them."""
        return [body[k] for k in ("max_tokens", "max_completion_tokens") if k in body]

    def messages_of(self, body: dict[str, Any]) -> list[Any]:
        """The conversation messages of a request body, where this provider's wire puts them."""
        messages: list[Any] = body["messages"]
        return messages

    def connections(self) -> set[int] | None:
        """The client-side ports of the open connections to the adapter's server (None: it has
        no connection)."""
        return None

    def verify(self) -> LLMResponse:
        """``verify`` of a working setup."""
        self.cannot("verify")

    def verify_as_set_up(self, key: str) -> Any:
        """The client's ``verify`` of :meth:`target` with ``key``, as the setup is now (through
        the route a platform harness's options choose)."""
        sent = key if self.sent_key is not None else None
        return self.client.verify(self.target(), sent, **self._route())

    def _route(self) -> dict[str, Any]:
        """The route's options as ``verify`` takes them (nothing without options: not every
        client's ``verify`` takes them)."""
        return {"options": dict(self.options)} if self.options else {}


# --- the two SDK adapters against their loopback servers ----------------------------------------


def _established_ports(server_port: int) -> set[int] | None:
    """Local ports of ESTABLISHED TCP connections to ``127.0.0.1:server_port`` (Linux's
    /proc/net/tcp; None elsewhere)."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        return None
    ports = set()
    for line in table.read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        if state == "01" and int(remote.rsplit(":", 1)[1], 16) == server_port:
            ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def _stream_request(path: str, model: str) -> RecordedRequest:
    body = {"model": model, "stream": True, "stream_options": {"include_usage": True}}
    return RecordedRequest("POST", path, {}, body, b"")


class _HTTPHarness(Harness):
    """What both SDK harnesses share: a server, a fresh adapter per test, the retry clock."""

    pricing = "table"
    auto_picks = "native"
    path: ClassVar[str]
    #: Where a streaming request goes, when not to ``path`` (a platform that says it by the path).
    stream_path: ClassVar[str | None] = None
    #: Parts of a streamed answer from which on it is complete (the terminator and what leads
    #: to it): cutting a stream drops them.
    terminators: ClassVar[tuple[bytes, ...]]

    server: FakeAnthropicServer | FakeOpenAIServer | FakeGeminiServer

    def __init__(self, server: FakeAnthropicServer | FakeOpenAIServer | FakeGeminiServer) -> None:
        super().__init__()
        self.server = server
        self.url = server.url
        self._client: Any = None

    def _build(self) -> Any:
        raise NotImplementedError

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._build()
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def target(self) -> Target:
        return Target(provider=self.provider, model=self.model, endpoint=self.url)

    #: Where the profile names its credential: ``api_key_env``, the option
    #: ``access_token_env`` (a platform taking an access token), or None (a route that signs).
    credential: ClassVar[str | None] = "api_key_env"

    def profile(self) -> dict[str, Any]:
        profile: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.url,
        }
        options = dict(self.options)
        if self.credential == "access_token_env":
            options["access_token_env"] = KEY_ENV
        if options:
            profile["options"] = options
        if self.credential == "api_key_env":
            profile["api_key_env"] = KEY_ENV
        return profile

    def _unsent(self, script: Callable[[Any], None], *, stream: bool) -> Answer:
        """The answer a fresh server of this kind gives for one scripted step: the servers' own
        shapes, to be sent as they are or cut."""
        helper = type(self.server)()
        script(helper)
        request = _stream_request(self.stream_path or self.path, self.model)
        if not stream:
            request = RecordedRequest("POST", self.path, {}, {"model": self.model}, b"")
        return helper.answer_unsent(request)

    def cut_stream(self, text: str, *, how: str) -> None:
        if how == "reset":
            self.server.reset_midstream(text, chunks=4)
            return
        whole = self._unsent(lambda s: s.reply(text, chunks=4), stream=True)
        assert whole.parts is not None
        kept: list[tuple[float, bytes]] = []
        for part in whole.parts:
            if any(marker in part[1] for marker in self.terminators):
                break
            kept.append(part)
        cut = Answer(parts=tuple(kept), content_type="text/event-stream")
        self.server.push(lambda _request: cut)

    def foreign_body_to_stream(self, kind: str, text: str = "") -> None:
        if kind == "answer":
            answer = self._unsent(lambda s: s.reply(text), stream=False)
        elif kind == "json":
            answer = Answer.json({"hello": "world"})
        elif kind == "html":
            answer = Answer(
                200, b"<html><body>gateway says hi</body></html>", content_type="text/html"
            )
        else:
            answer = Answer(parts=(), content_type="text/event-stream")
        self.server.push(lambda _request: answer)

    def fail(self, status: int, *, headers: Mapping[str, str] | None = None) -> None:
        self.server.fail(status, headers=headers)

    def reset_connection(self) -> None:
        self.server.reset_connection()

    def slow(self, seconds: float, text: str = "late") -> None:
        self.server.delay(seconds, text)

    def refuse_connections(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"  # nothing listens there once the probe is closed

    def requests_made(self) -> int:
        return len(self.server.requests)

    def last_body(self) -> dict[str, Any]:
        body = self.server.requests[-1].body
        assert isinstance(body, dict)
        return body

    def connections(self) -> set[int] | None:
        port = int(self.server.base_url.rsplit(":", 1)[1])
        return _established_ports(port)

    def verify(self) -> LLMResponse:
        self.answer("OK")
        response: LLMResponse = self.client.verify(self.target(), self.sent_key, **self._route())
        return response

    def break_verify(self) -> str:
        self.fail(401)
        return "auth"


class AnthropicHarness(_HTTPHarness):
    name = "anthropic"
    provider = "anthropic"
    model = "claude-sonnet-4-6"
    path = "/v1/messages"
    terminators = (b"content_block_stop", b"message_delta", b"message_stop")

    _FINISH: ClassVar[dict[str, str]] = {
        "stop": "end_turn",
        "length": "max_tokens",
        "refusal": "refusal",
    }

    server: FakeAnthropicServer

    def _build(self) -> AnthropicClient:
        return AnthropicClient(hooks=self.clock.hooks())

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        self.server.reply(
            text,
            usage={"input_tokens": input_tokens, "output_tokens": output_tokens},
            stop_reason=self._FINISH[finish],
            chunks=chunks,
            pace_s=pace_s,
        )

    def answer_structured(self, value: Any, strategy: str) -> None:
        if strategy == "tool":
            self.server.reply_tool(value)
        else:
            self.server.reply(json.dumps(value))

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        self.server.reply(
            text,
            thinking=reasoning,
            thinking_tokens=reasoning_tokens,
            usage={"input_tokens": 10, "output_tokens": output_tokens},
            chunks=chunks,
        )

    def wire_strategy(self) -> str:
        body = self.last_body()
        if "tools" in body:
            return "tool"
        if "output_config" in body:
            return "native"
        return "prompt" if "schema" in str(body.get("system", "")).lower() else "none"

    def provider_count(self, tokens: int) -> bool:
        self.server.count_tokens = tokens
        return True


class OpenAIHarness(_HTTPHarness):
    name = "openai"
    provider = "openai"
    model = "gpt-4o-mini"
    path = "/v1/chat/completions"
    terminators = (b'"finish_reason":"', b"[DONE]")

    server: FakeOpenAIServer

    def _build(self) -> OpenAIClient:
        return OpenAIClient(hooks=self.clock.hooks())

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        common: dict[str, Any] = {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "chunks": chunks,
            "pace_s": pace_s,
        }
        if finish == "refusal":  # a refusal is the message's refusal field, not its content
            self.server.reply(None, refusal=text, **common)
        else:
            self.server.reply(text, finish_reason=finish, **common)

    def answer_structured(self, value: Any, strategy: str) -> None:
        if strategy == "tool":
            self.server.reply_tool(json.dumps(value))
        else:
            self.server.reply(json.dumps(value))

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        # As an OpenAI-compatible server returns it (OpenAI's own returns only the count).
        self.server.reply(
            text,
            reasoning=reasoning,
            reasoning_tokens=reasoning_tokens,
            prompt_tokens=10,
            completion_tokens=output_tokens,
            chunks=chunks,
        )

    def provider_count(self, tokens: int) -> bool:
        self.server.count_tokens = tokens
        return True

    def wire_strategy(self) -> str:
        body = self.last_body()
        if "tools" in body:
            return "tool"
        if "response_format" in body:
            return "native"
        system: dict[str, Any] = next((m for m in body["messages"] if m["role"] == "system"), {})
        return "prompt" if "schema" in str(system.get("content", "")).lower() else "none"


class ResponsesHarness(OpenAIHarness):
    """The openai adapter on the Responses API (``options.api: responses``), against the same
    fake, which answers ``/v1/responses`` from the same script."""

    name = "openai_responses"
    path = "/v1/responses"
    terminators = (b"event: response.completed", b"event: response.incomplete")
    options: ClassVar[dict[str, Any]] = {"api": "responses"}

    def wire_strategy(self) -> str:
        body = self.last_body()
        if "tools" in body:
            return "tool"
        if "text" in body:
            return "native"
        return "prompt" if "schema" in str(body.get("instructions", "")).lower() else "none"

    def output_limits(self, body: dict[str, Any]) -> list[int]:
        return [body["max_output_tokens"]] if "max_output_tokens" in body else []

    def messages_of(self, body: dict[str, Any]) -> list[Any]:
        messages: list[Any] = body["input"]
        return messages


class GeminiHarness(_HTTPHarness):
    name = "gemini"
    provider = "gemini"
    model = "gemini-2.5-flash"
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    stream_path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    terminators = (b'"finishReason"',)

    _FINISH: ClassVar[dict[str, str]] = {
        "stop": "STOP",
        "length": "MAX_TOKENS",
        "refusal": "SAFETY",
    }

    server: FakeGeminiServer

    def _build(self) -> GeminiClient:
        return GeminiClient(hooks=self.clock.hooks())

    def _unsent(self, script: Callable[[Any], None], *, stream: bool) -> Answer:
        helper = FakeGeminiServer()
        script(helper)
        path = self.stream_path if stream else self.path
        return helper.answer_unsent(RecordedRequest("POST", path, {}, {}, b""))

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        self.server.reply(
            text,
            prompt_tokens=input_tokens,
            candidates_tokens=output_tokens,
            finish_reason=self._FINISH[finish],
            chunks=chunks,
            pace_s=pace_s,
        )

    def answer_structured(self, value: Any, strategy: str) -> None:
        if strategy == "tool":
            self.server.reply_tool(value)
        else:
            self.server.reply(json.dumps(value))

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        # The contract's output tokens are the whole output, reasoning included (as a response's
        # usage reports them). Gemini's wire counts the thoughts apart from the answer's tokens:
        # ``thoughtsTokenCount`` beside ``candidatesTokenCount``, the two adding up to what is
        # billed at the output rate. So the answer's own tokens are the rest.
        self.server.reply(
            text,
            thoughts=reasoning,
            prompt_tokens=10,
            candidates_tokens=output_tokens - reasoning_tokens,
            thoughts_tokens=reasoning_tokens,
            chunks=chunks,
        )

    def wire_strategy(self) -> str:
        body = self.last_body()
        if "tools" in body:
            return "tool"
        config = body.get("generationConfig", {})
        if config.get("responseMimeType") == "application/json":
            return "native"
        system = str(body.get("systemInstruction", ""))
        return "prompt" if "schema" in system.lower() else "none"

    def provider_count(self, tokens: int) -> bool:
        self.server.count_tokens = tokens
        return True

    def output_limits(self, body: dict[str, Any]) -> list[int]:
        config = body.get("generationConfig", {})
        return [config["maxOutputTokens"]] if "maxOutputTokens" in config else []

    def messages_of(self, body: dict[str, Any]) -> list[Any]:
        contents: list[Any] = body["contents"]
        return contents


# --- the same adapters through the cloud platforms -------------------------------------------------


class GeminiVertexHarness(GeminiHarness):
    """The gemini adapter on Vertex AI (``options.vertexai``): the project and location in the
    path, the access token a run reads from ``options.access_token_env`` as the request's key."""

    name = "gemini_vertex"
    path = (
        "/v1beta1/projects/contract/locations/us-central1/publishers/google/models/"
        "gemini-2.5-flash:generateContent"
    )
    stream_path = path.replace(":generateContent", ":streamGenerateContent?alt=sse")
    options: ClassVar[dict[str, Any]] = {
        "vertexai": True,
        "project": "contract",
        "location": "us-central1",
    }
    # The key is the access token options.access_token_env names.
    credential = "access_token_env"


#: The AWS credentials the Bedrock harness signs with (the standard chain's environment link).
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKE0CONTRACT0ID",
    "AWS_SECRET_ACCESS_KEY": "aws-contract-secret-canary",
    "AWS_EC2_METADATA_DISABLED": "true",
}


class BedrockHarness(AnthropicHarness):
    name = "bedrock"
    model = "us.anthropic.claude-sonnet-4-6-v1:0"
    priced_as = "claude-sonnet-4-6"
    path = f"/model/{model}/invoke"
    stream_path = f"/model/{model}/invoke-with-response-stream"
    options: ClassVar[dict[str, Any]] = {"platform": "bedrock", "region": "us-east-1"}
    # Signed with the AWS chain: no key travels, none is named.
    sent_key = None
    credential = None
    reasons: ClassVar[Mapping[str, str]] = {
        "count_tokens": "AnthropicBedrock has no token-counting route (runs get the local "
        "estimate: tests/llm/anthropic/test_platforms.py)"
    }

    server: FakeBedrockServer

    def provider_count(self, tokens: int) -> bool:
        self.cannot("count_tokens")


class BedrockConverseHarness(BedrockHarness):
    """``provider: bedrock``: a non-Claude model through Converse and ConverseStream, boto3
    signing with the AWS chain (the same fake server answers in the Converse shape)."""

    name = "bedrock_converse"
    provider = "bedrock"
    model = "us.amazon.nova-pro-v1:0"
    priced_as = "amazon.nova-pro-v1:0"
    auto_picks = "tool"
    path = f"/model/{model}/converse"
    stream_path = f"/model/{model}/converse-stream"
    options: ClassVar[dict[str, Any]] = {"region": "us-east-1"}
    reasons: ClassVar[Mapping[str, str]] = {
        "count_tokens": "Converse has no token-counting route for every model (runs get the "
        "local estimate)",
        "native": "no model of the dated table offers a JSON-schema output format through "
        "Converse: native is refused at prepare (tests/llm/bedrock/test_converse.py)",
        "reasoning": "Converse reports no reasoning-token count apart from the output tokens "
        "(thinking through Converse: tests/llm/bedrock/test_converse.py)",
        "json_answer_to_stream": "boto3 reads the streamed body itself: a JSON answer to "
        "ConverseStream fails its event-stream framing (invalid_response), it is not read as "
        "an answer",
    }

    def foreign_body_to_stream(self, kind: str, text: str = "") -> None:
        if kind == "answer":
            self.cannot("json_answer_to_stream")
        super().foreign_body_to_stream(kind, text)

    def _build(self) -> Any:
        return BedrockClient(options=self.options, hooks=self.clock.hooks())

    def answer_structured(self, value: Any, strategy: str) -> None:
        if strategy == "native":
            self.cannot("native")
        super().answer_structured(value, strategy)

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        self.cannot("reasoning")

    def wire_strategy(self) -> str:
        body = self.last_body()
        if "toolConfig" in body:
            return "tool"
        system = " ".join(str(part.get("text", "")) for part in body.get("system", []))
        return "prompt" if "schema" in system.lower() else "none"

    def output_limits(self, body: dict[str, Any]) -> list[int]:
        return [body["inferenceConfig"]["maxTokens"]]

    def messages_of(self, body: dict[str, Any]) -> list[Any]:
        return list(body["messages"])


class VertexHarness(AnthropicHarness):
    name = "vertex"
    model = "claude-sonnet-4-6"
    path = (
        f"/v1/projects/contract/locations/us-east5/publishers/anthropic/models/{model}:rawPredict"
    )
    stream_path = path.replace(":rawPredict", ":streamRawPredict")
    options: ClassVar[dict[str, Any]] = {
        "platform": "vertex",
        "project": "contract",
        "region": "us-east5",
    }

    # The key is the access token options.access_token_env names.
    credential = "access_token_env"

    server: FakeVertexServer


class AzureHarness(OpenAIHarness):
    name = "azure"
    model = "contract-deployment"
    priced_as = "gpt-4o-mini"
    path = "/openai/deployments/contract-deployment/chat/completions"
    options: ClassVar[dict[str, Any]] = {"platform": "azure", "api_version": "2024-10-21"}

    server: FakeAzureOpenAIServer
    reasons: ClassVar[Mapping[str, str]] = {
        "count_tokens": "Azure serves no input-token count (runs get the local estimate: "
        "tests/llm/openai/test_azure.py)"
    }

    def provider_count(self, tokens: int) -> bool:
        self.cannot("count_tokens")

    def target(self) -> Target:
        return Target(
            provider=self.provider, model=self.model, endpoint=self.url, api_key_env=KEY_ENV
        )


class AzureResponsesHarness(AzureHarness):
    """Azure's Responses API (``/openai/responses``, the deployment named by the body)."""

    name = "azure_responses"
    path = "/openai/responses"
    terminators = ResponsesHarness.terminators
    options: ClassVar[dict[str, Any]] = {**AzureHarness.options, "api": "responses"}
    wire_strategy = ResponsesHarness.wire_strategy
    output_limits = ResponsesHarness.output_limits
    messages_of = ResponsesHarness.messages_of


# --- the in-process adapters ----------------------------------------------------------------------

_IN_PROCESS = {
    "transport": "answers in process: there is no HTTP request to fail, retry, cut or count",
    "verify": "has no verify of its own (the router proves it by building it)",
    "pricing": "prices nothing: no price table stands behind it",
}


class FakeProviderHarness(Harness):
    """The ``fake`` provider, built the way a profile builds it: from its ``options``."""

    name = "fake"
    provider = "fake"
    model = "fake-1"
    scripts_usage = False
    reasons: ClassVar[Mapping[str, str]] = {
        **_IN_PROCESS,
        "strategies": "follows no structured-output strategy (it answers its canned text)",
        "finish": "always finishes with stop",
        "usage": "estimates its token counts from the text (a quarter of its length)",
        "reasoning": "answers its canned text: it returns no reasoning",
    }

    def __init__(self) -> None:
        super().__init__()
        self._responses: list[str] = []
        self._client: FakeProviderClient | None = None

    @property
    def client(self) -> FakeProviderClient:
        if self._client is None:
            self._client = FakeProviderClient.from_options({"responses": list(self._responses)})
        return self._client

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        if finish != "stop":
            self.cannot("finish")
        self._responses.append(text)


class FakeClientHarness(Harness):
    """``scriptorium.testing.FakeClient``: the text scripted as users script it, a whole
    ``LLMResponse`` when tokens or the finish reason matter."""

    name = "fake_client"
    provider = "fake"
    model = "fake-1"
    reasons: ClassVar[Mapping[str, str]] = {
        **_IN_PROCESS,
        "strategies": "returns what it is scripted with; it follows no strategy",
    }

    def __init__(self) -> None:
        super().__init__()
        self._script: list[str | LLMResponse] = []
        self._client: FakeClient | None = None

    @property
    def client(self) -> FakeClient:
        if self._client is None:
            self._client = FakeClient(self._script, chunks=4)
        return self._client

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        self._script.append(
            LLMResponse(text=text, model=self.model, finish_reason=finish, usage=usage)
        )

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        usage = Usage(
            input_tokens=10, output_tokens=output_tokens, reasoning_tokens=reasoning_tokens
        )
        self._script.append(
            LLMResponse(text=text, reasoning=reasoning, model=self.model, usage=usage)
        )


class ReplayHarness(Harness):
    """``ReplayClient`` over a cassette the test records through the ``anthropic`` harness."""

    name = "replay"
    # The requests are the recorded adapter's.
    provider = AnthropicHarness.provider
    model = AnthropicHarness.model
    auto_picks = AnthropicHarness.auto_picks
    requests_per_answer = 0
    pricing = "recorded"
    requests_to_verify = 0
    reasons: ClassVar[Mapping[str, str]] = {
        "transport": "answers from its cassette: failures happen while recording, in the "
        "recorded adapter, and nothing is written for them",
    }

    def __init__(self, inner: AnthropicHarness, cassette: Path) -> None:
        super().__init__()
        self.inner = inner
        self.cassette = cassette

    @property
    def client(self) -> ReplayClient:
        return ReplayClient(self.cassette)

    def run(self, op: Callable[[Any], T], *, record: Callable[[Any], object] | None = None) -> T:
        (record or op)(ReplayClient(self.cassette, mode="record", inner=self.inner.client))
        return op(self.client)

    def target(self) -> Target:
        return self.inner.target()

    def profile(self) -> dict[str, Any]:
        return self.inner.profile()

    def close(self) -> None:
        self.inner.close()

    def answer(
        self,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        finish: str = "stop",
        chunks: int | None = None,
        pace_s: float = 0.0,
    ) -> None:
        self.inner.answer(
            text, input_tokens=input_tokens, output_tokens=output_tokens, finish=finish
        )

    def answer_structured(self, value: Any, strategy: str) -> None:
        self.inner.answer_structured(value, strategy)

    def answer_reasoning(
        self,
        text: str,
        reasoning: str,
        *,
        output_tokens: int,
        reasoning_tokens: int,
        chunks: int | None = None,
    ) -> None:
        self.inner.answer_reasoning(
            text, reasoning, output_tokens=output_tokens, reasoning_tokens=reasoning_tokens
        )

    def wire_strategy(self) -> str:
        return self.inner.wire_strategy()  # what the recording sent

    def verify(self) -> LLMResponse:
        self.inner.answer("recorded")
        self.run(lambda client: client.generate(self.request()))
        return self.client.verify(self.target())

    def break_verify(self) -> str:
        self.cassette.write_text("this is not a cassette line\n", encoding="utf-8")
        return "config"


def runner_over(harness: Harness, client: Any, make_runner: RunnerFactory) -> Runner:
    """A Runner over ``client`` whose one prompt, ``say``, runs on a profile this adapter serves:
    for the cases whose contract is what a run makes of an answer."""
    return make_runner(
        client,
        prompts={"say": "---\nprofile: p\n---\nSay hello.\n"},
        profiles={"p": harness.profile()},
        env=harness.env,
    )


# --- which adapters the suite runs over -------------------------------------------------------------

#: Every adapter the contract runs over. A new provider adds its harness here.
ADAPTERS = (
    "anthropic",
    "openai",
    "openai_responses",
    "gemini",
    "gemini_vertex",
    "bedrock",
    "bedrock_converse",
    "vertex",
    "azure",
    "azure_responses",
    "fake",
    "replay",
    "fake_client",
)


def adapters(*, xfail: Mapping[str, str] | None = None) -> pytest.MarkDecorator:
    """Run the test over every adapter, marking the ones named in ``xfail`` as known not to meet
    the contract yet (strict: the day they do, the mark must go)."""
    known = dict(xfail or {})
    unknown = set(known) - set(ADAPTERS)
    assert not unknown, f"no such adapters: {sorted(unknown)}"
    params = [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=known[name])] if name in known else [],
        )
        for name in ADAPTERS
    ]
    return pytest.mark.parametrize("harness", params, indirect=True)
