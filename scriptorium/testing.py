"""Fakes for testing code that uses scriptorium (and for scriptorium's own tests).

    from scriptorium.testing import FakeClient, MemoryPromptRepository, ...
    client = FakeClient(['{"name": "Ada"}'])
    engine = Engine("my_project", client=client)
    assert engine.run("extract/contact", ...).validation.valid
    assert client.requests[0].messages[0].content.startswith(...)

The in-memory repositories and reader are the same adapters scriptorium's contract tests run
against the file ones, so they cannot drift from the real thing. ``FakeAnthropicServer`` speaks the
Messages API on loopback so the real SDK can be tested end to end; it and ``FakeOpenAIServer`` also
serve the providers' batch endpoints (``server.batches`` scripts how batches run and rows end).
``FakeBedrockServer``, ``FakeVertexServer`` and ``FakeAzureOpenAIServer`` speak the cloud
platforms' own routes (Bedrock's invoke and its binary event stream, Vertex's rawPredict, an Azure
resource's deployments, files and batches) with the same scripting, for the real
``AnthropicBedrock``, ``AnthropicVertex`` and ``AzureOpenAI`` classes. ``FakeGeminiServer`` speaks
the Gemini API (and Vertex AI's paths for it) for ``google-genai``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from scriptorium._lazy import lazy_getattr
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.streaming import StreamItem, response_pieces

if TYPE_CHECKING:
    from scriptorium._testing.anthropic_server import FakeAnthropicServer
    from scriptorium._testing.azure_server import FakeAzureOpenAIServer
    from scriptorium._testing.bedrock_server import FakeBedrockServer
    from scriptorium._testing.gemini_server import FakeGeminiServer
    from scriptorium._testing.openai_server import FakeOpenAIServer
    from scriptorium._testing.vertex_server import FakeVertexServer
    from scriptorium.artifact.memory import MemoryReader as MemoryArtifactReader
    from scriptorium.profile.memory import MemoryRepository as MemoryProfileRepository
    from scriptorium.promptdef.memory import MemoryRepository as MemoryPromptRepository

__all__ = [
    "FakeAnthropicServer",
    "FakeAzureOpenAIServer",
    "FakeBedrockServer",
    "FakeClient",
    "FakeGeminiServer",
    "FakeOpenAIServer",
    "FakeVertexServer",
    "FixedClock",
    "MemoryArtifactReader",
    "MemoryProfileRepository",
    "MemoryPromptRepository",
    "Scripted",
    "SequentialIds",
    "UnexpectedCall",
]

#: One scripted turn: a text, a full response, an exception to raise, or a callable of the request
#: returning a text or a response (sync or async).
Scripted = (
    str
    | LLMResponse
    | BaseException
    | Callable[[LLMRequest], "str | LLMResponse | Awaitable[str | LLMResponse]"]
)

_lazy = lazy_getattr(
    "scriptorium",
    {
        "FakeAnthropicServer": "_testing.anthropic_server",
        "FakeAzureOpenAIServer": "_testing.azure_server",
        "FakeBedrockServer": "_testing.bedrock_server",
        "FakeGeminiServer": "_testing.gemini_server",
        "FakeOpenAIServer": "_testing.openai_server",
        "FakeVertexServer": "_testing.vertex_server",
    },
)
_ALIASES = {
    "MemoryPromptRepository": ("scriptorium.promptdef.memory", "MemoryRepository"),
    "MemoryProfileRepository": ("scriptorium.profile.memory", "MemoryRepository"),
    "MemoryArtifactReader": ("scriptorium.artifact.memory", "MemoryReader"),
}


def __getattr__(name: str) -> Any:
    alias = _ALIASES.get(name)
    if alias is not None:
        import importlib

        return getattr(importlib.import_module(alias[0]), alias[1])
    return _lazy(name)


class FakeClient:
    """A scripted LLM client, sync and async, streaming too.

    Each call takes the next scripted turn; the last one repeats once the script runs out. Every
    request is recorded in ``.requests`` (with its key, as a real client would receive it).
    ``stream``/``astream`` deliver a turn's text in ``chunks`` pieces, then its response; a
    scripted exception is raised before the first piece. A scripted response with
    ``reasoning`` streams it first, in as many ``ReasoningChunk`` pieces, as a provider that
    thinks does.

    ``by_profile`` scripts the requests of some profiles apart (``LLMRequest.profile`` picks
    the script; each has its own turns), so a test can make one profile of a fallback chain fail
    and the next answer: ``FakeClient(by_profile={"primary": [LLMGenerateError("busy",
    reason="overloaded")], "backup": ["ok"]})``. Requests of any other profile take
    ``responses``.

    An empty script (``FakeClient()``) is for code that must make no call: any call is recorded
    and then raises ``AssertionError`` naming the request's prompt (and its profile, when it
    has a script of its own to take none from).
    """

    def __init__(
        self,
        responses: Iterable[Scripted] = (),
        *,
        model: str = "fake-model",
        chunks: int = 4,
        by_profile: Mapping[str, Iterable[Scripted]] | None = None,
    ) -> None:
        self._script = list(responses)
        self._scripts = {name: list(items) for name, items in (by_profile or {}).items()}
        self._model = model
        self._chunks = chunks
        self._lock = threading.Lock()
        self._turn = 0
        self._turns = dict.fromkeys(self._scripts, 0)
        self.requests: list[LLMRequest] = []

    @property
    def calls(self) -> int:
        """How many requests were made."""
        return len(self.requests)

    def _next(self, request: LLMRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            profile = request.profile
            if profile is not None and profile in self._scripts:
                script = self._scripts[profile]
                if not script:
                    raise UnexpectedCall(_unexpected_call(request))
                turn = self._turns[profile]
                self._turns[profile] = turn + 1
                return script[min(turn, len(script) - 1)]
            if not self._script:
                raise UnexpectedCall(_unexpected_call(request))
            item = self._script[min(self._turn, len(self._script) - 1)]
            self._turn += 1
        return item

    def _wrap(self, value: str | LLMResponse) -> LLMResponse:
        if isinstance(value, LLMResponse):
            return value
        usage = Usage(input_tokens=0, output_tokens=len(value) // 4)
        return LLMResponse(text=value, model=self._model, usage=usage)

    def _called(self, request: LLMRequest) -> Any:
        """The next scripted item for ``request``: raised when it is an exception, called when
        it is a callable (its result may be awaitable: each driver below completes it)."""
        item = self._next(request)
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, LLMResponse):
            return item(request)
        return item

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The next scripted response (an async callable is run to completion)."""
        value = self._called(request)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        return self._wrap(value)

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`."""
        value = self._called(request)
        if inspect.isawaitable(value):
            value = await value
        return self._wrap(value)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """The next scripted response, its text in several chunks, then the response itself."""
        response = self.generate(request)
        yield from response_pieces(response, self._chunks)
        yield response

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        response = await self.agenerate(request)
        for piece in response_pieces(response, self._chunks):
            yield piece
        yield response


class UnexpectedCall(AssertionError):
    """Raised by a ``FakeClient`` with an empty script when it is called: the code under test
    made a call it must not make. The runner lets it through untranslated (``fails_the_test``), so
    the test fails with this message instead of an ``LLMGenerateError``."""

    fails_the_test = True


def _unexpected_call(request: LLMRequest) -> str:
    """Why an empty FakeClient refuses a call: which prompt made it, and how it begins."""
    prompt = repr(request.prompt_id) if request.prompt_id else "(no prompt id)"
    first = request.messages[0].text if request.messages else (request.system or "")
    excerpt = first if len(first) <= 80 else first[:77] + "..."
    on = f" on profile {request.profile!r}" if request.profile else ""
    return (
        f"FakeClient has no scripted response, but prompt {prompt}{on} called it "
        f"(first message: {excerpt!r})"
    )


async def _awaited(value: Awaitable[str | LLMResponse]) -> str | LLMResponse:
    return await value


class FixedClock:
    """A clock for ``Runner(clock=...)``: starts at ``start`` and advances ``step`` per reading."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        step: timedelta = timedelta(0),
    ) -> None:
        self._now = start
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now = self._now
            self._now = now + self._step
        return now


class SequentialIds:
    """Run ids for ``Runner(new_id=...)``: ``run-1``, ``run-2``, ..."""

    def __init__(self, prefix: str = "run-") -> None:
        self._prefix = prefix
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self._count += 1
            return f"{self._prefix}{self._count}"
