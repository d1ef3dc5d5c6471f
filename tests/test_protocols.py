"""The testing kit's fakes satisfy the ports they stand in for.

Most of this module is checked by ``mypy --strict`` (``make lint`` runs it over ``tests/``): each
fake is assigned to a variable annotated with its Protocol, and handed to a ``Runner``, so a fake
whose methods drift from the port (a renamed parameter, a changed return type, a missing method)
fails the type check before any test runs. The tests below add the runtime view where a Protocol
is runtime-checkable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from scriptorium.artifact.reader import Reader
from scriptorium.llm.client import (
    AsyncClient,
    AsyncStreamingClient,
    Client,
    StreamingClient,
    supports,
)
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.profile.repository import Repository as ProfileRepository
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.promptdef.repository import Repository as PromptRepository
from scriptorium.testing import (
    FakeClient,
    FixedClock,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
    SequentialIds,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.validate.schema import SchemaValidator

# --- the static check: each fake where its port is expected ---------------------------------------

_fake = FakeClient(["Hello, Ada!"])
AS_CLIENT: Client = _fake
AS_ASYNC_CLIENT: AsyncClient = _fake
AS_STREAMING_CLIENT: StreamingClient = _fake
AS_ASYNC_STREAMING_CLIENT: AsyncStreamingClient = _fake

AS_PROMPT_REPOSITORY: PromptRepository = MemoryPromptRepository(
    {"greet": "---\nprofile: offline\n---\nHello {{ name }}!\n"}
)
AS_PROFILE_REPOSITORY: ProfileRepository = MemoryProfileRepository(
    {"offline": {"provider": "fake", "model": "fake-1"}}
)
AS_READER: Reader = MemoryArtifactReader({"doc.txt": "Ada Lovelace"})

AS_CLOCK: Callable[[], datetime] = FixedClock()
AS_NEW_ID: Callable[[], str] = SequentialIds()


def runner_of_fakes(client: FakeClient) -> Runner:
    """A Runner built from the fakes alone: the type checker holds each one against the exact
    parameter type the Runner declares (its clock and run-id types included)."""
    return Runner(
        prompts=MemoryPromptRepository(
            {"greet": "---\nprofile: offline\n---\nHello {{ name }}!\n"}
        ),
        profiles=MemoryProfileRepository({"offline": {"provider": "fake", "model": "fake-1"}}),
        artifacts=MemoryArtifactReader({"doc.txt": "Ada Lovelace"}),
        renderer=JinjaRenderer(),
        client=client,
        validator=SchemaValidator(),
        clock=FixedClock(),
        new_id=SequentialIds(),
    )


# --- the runtime view ----------------------------------------------------------------------------

REQUEST = LLMRequest(target=Target(provider="fake", model="fake-1"))


def test_fake_client_is_every_client_port_at_run_time() -> None:
    """FakeClient passes the runtime-checkable client Protocols, and ``supports`` agrees."""
    client = FakeClient(["x"])
    for port in (Client, AsyncClient, StreamingClient, AsyncStreamingClient):
        assert isinstance(client, port), port.__name__
        assert supports(client, port), port.__name__


def test_the_fakes_answer_through_their_ports() -> None:
    """Used only through the port types, the fakes behave as the ports describe."""
    client: Client = FakeClient(["Hello"])
    assert client.generate(REQUEST).text == "Hello"
    async_client: AsyncClient = FakeClient(["Hello"])
    assert asyncio.run(async_client.agenerate(REQUEST)).text == "Hello"
    streaming: StreamingClient = FakeClient(["Hello there"], chunks=2)
    *chunks, last = list(streaming.stream(REQUEST))
    assert isinstance(last, LLMResponse)
    assert "".join(str(c) for c in chunks) == last.text == "Hello there"
    assert AS_PROMPT_REPOSITORY.list() == ["greet"]
    assert AS_PROFILE_REPOSITORY.get("offline").provider == "fake"
    assert AS_PROFILE_REPOSITORY.list() == ["offline"]
    assert callable(AS_READER.read)
    assert isinstance(AS_CLOCK(), datetime)
    assert AS_NEW_ID().startswith("run-")


def test_a_runner_of_fakes_runs() -> None:
    """The Runner built from the fakes alone serves a run end to end."""
    client = FakeClient(["Hello, Ada!"])
    result = runner_of_fakes(client).run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    assert result.output.text == "Hello, Ada!"
    assert result.run_id == "run-1"
    assert client.calls == 1
