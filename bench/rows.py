"""The contenders: each builds a sync and an async "do one extraction" callable against a base URL.

Every callable raises when the extraction did not come back valid, so a row can never be fast by
doing less. Peers are imported only when their row is built; a missing package makes the row say
so instead of failing the run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.task import (
    API_KEY,
    DOCUMENT,
    KEY_ENV,
    MODEL,
    PERSON_MAX_TOKENS,
    PERSON_MODEL,
    PERSON_SCHEMA,
    PERSON_SYSTEM,
    SCHEMA,
    SENTENCE,
    Person,
    make_project,
    user_message,
)

__all__ = ["ROWS", "AsyncCall", "AsyncPair", "Row", "SyncCall", "Unavailable"]

SyncCall = Callable[[], None]
AsyncCall = Callable[[], Awaitable[None]]
#: An async row: the call, and how to close what it opened (on the loop that opened it).
AsyncPair = tuple[AsyncCall, Callable[[], Awaitable[None]]]

_MAX_TOKENS = 1024
# What the earlier floor sends as the output format: the invoice schema without "$schema" (what
# scriptorium's reduction sends too).
_API_SCHEMA = {k: v for k, v in SCHEMA.items() if k != "$schema"}


class Unavailable(Exception):
    """The row cannot run here (a package is missing); the message says which."""


def _need(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise Unavailable(f"not installed (pip install {package})") from err


def _invalid(what: object) -> AssertionError:
    return AssertionError(f"the extraction came back invalid: {what!r:.200}")


# --- the floor: the plainest hand-written call ----------------------------------------------------
# messages.create(model, max_tokens, system, messages), json.loads(content[0].text), a compiled
# Draft202012Validator on the 3-property schema. No output_config, no template.


def _floor_parts() -> tuple[Any, Any, list[dict[str, str]]]:
    anthropic = _need("anthropic", "anthropic")
    import jsonschema

    validator = jsonschema.Draft202012Validator(PERSON_SCHEMA)
    return anthropic, validator, [{"role": "user", "content": SENTENCE}]


def floor_sync(url: str) -> SyncCall:
    anthropic, validator, messages = _floor_parts()
    client = anthropic.Anthropic(api_key=API_KEY, base_url=url, max_retries=0)

    def call() -> None:
        message = client.messages.create(
            model=PERSON_MODEL,
            max_tokens=PERSON_MAX_TOKENS,
            system=PERSON_SYSTEM,
            messages=messages,
        )
        value = json.loads(message.content[0].text)
        if not validator.is_valid(value):
            raise _invalid(value)

    return call


def _person_call(client: Any, validator: Any, messages: Any) -> Callable[[], Awaitable[None]]:
    """One floor call on the async SDK ``client``: the person schema's request, the answer
    parsed and validated as a caller by hand would."""

    async def call() -> None:
        message = await client.messages.create(
            model=PERSON_MODEL,
            max_tokens=PERSON_MAX_TOKENS,
            system=PERSON_SYSTEM,
            messages=messages,
        )
        value = json.loads(message.content[0].text)
        if not validator.is_valid(value):
            raise _invalid(value)

    return call


async def floor_async(url: str) -> AsyncPair:
    anthropic, validator, messages = _floor_parts()
    client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0)

    return _person_call(client, validator, messages), client.close


# --- the earlier floor: output_config + the 11-property invoice schema ----------------------------


def _invoice_floor_parts() -> tuple[Any, Any, list[dict[str, str]], dict[str, Any]]:
    anthropic = _need("anthropic", "anthropic")
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    messages = [{"role": "user", "content": user_message()}]
    output_config = {"format": {"type": "json_schema", "schema": _API_SCHEMA}}
    return anthropic, validator, messages, output_config


def invoice_floor_sync(url: str) -> SyncCall:
    anthropic, validator, messages, output_config = _invoice_floor_parts()
    client = anthropic.Anthropic(api_key=API_KEY, base_url=url, max_retries=0)

    def call() -> None:
        message = client.messages.create(
            model=MODEL, max_tokens=_MAX_TOKENS, messages=messages, output_config=output_config
        )
        value = json.loads(message.content[0].text)
        if not validator.is_valid(value):
            raise _invalid(value)

    return call


async def invoice_floor_async(url: str) -> AsyncPair:
    anthropic, validator, messages, output_config = _invoice_floor_parts()
    client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0)

    async def call() -> None:
        message = await client.messages.create(
            model=MODEL, max_tokens=_MAX_TOKENS, messages=messages, output_config=output_config
        )
        value = json.loads(message.content[0].text)
        if not validator.is_valid(value):
            raise _invalid(value)

    return call, client.close


# --- scriptorium: Engine.run / Engine.arun on a file-based prompt --------------------------------

_projects: dict[str, Path] = {}


def _engine(url: str) -> Any:
    _need("anthropic", "anthropic")  # the adapter imports it on first use
    from scriptorium import Engine

    project = _projects.get(url)
    if project is None:
        project = _projects[url] = make_project(url)
    return Engine(project, env={KEY_ENV: API_KEY})


def _scriptorium(prompt_id: str, inputs: dict[str, Any]) -> tuple[Any, Any]:
    def make_sync(url: str) -> SyncCall:
        engine = _engine(url)

        def call() -> None:
            result = engine.run(prompt_id, inputs=inputs)
            if not result.validation.valid:
                raise _invalid(result.validation.issues)

        return call

    async def make_async(url: str) -> AsyncPair:
        engine = _engine(url)

        async def call() -> None:
            result = await engine.arun(prompt_id, inputs=inputs)
            if not result.validation.valid:
                raise _invalid(result.validation.issues)

        async def close() -> None:
            await engine.client.client_for("anthropic").aclose()

        return call, close

    return make_sync, make_async


scriptorium_sync, scriptorium_async = _scriptorium("person", {"sentence": SENTENCE})
scriptorium_prompt_sync, scriptorium_prompt_async = _scriptorium(
    "person-prompt", {"sentence": SENTENCE}
)
scriptorium_invoice_sync, scriptorium_invoice_async = _scriptorium(
    "extract", {"document": DOCUMENT}
)


# --- Instructor -----------------------------------------------------------------------------------


def _instructor(url: str, is_async: bool) -> Any:
    instructor = _need("instructor", "instructor")
    anthropic = _need("anthropic", "anthropic")
    cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    sdk = cls(api_key=API_KEY, base_url=url, max_retries=0)
    return instructor.from_anthropic(sdk, mode=instructor.Mode.ANTHROPIC_TOOLS)


_PEER_MESSAGES = [{"role": "user", "content": SENTENCE}]


def instructor_sync(url: str) -> SyncCall:
    client = _instructor(url, False)

    def call() -> None:
        person = client.messages.create(
            model=PERSON_MODEL,
            max_tokens=PERSON_MAX_TOKENS,
            system=PERSON_SYSTEM,
            messages=_PEER_MESSAGES,
            response_model=Person,
        )
        if not isinstance(person, Person):
            raise _invalid(person)

    return call


async def instructor_async(url: str) -> AsyncPair:
    client = _instructor(url, True)

    async def call() -> None:
        person = await client.messages.create(
            model=PERSON_MODEL,
            max_tokens=PERSON_MAX_TOKENS,
            system=PERSON_SYSTEM,
            messages=_PEER_MESSAGES,
            response_model=Person,
        )
        if not isinstance(person, Person):
            raise _invalid(person)

    return call, client.client.close


# --- Pydantic AI ----------------------------------------------------------------------------------


def _agent(url: str) -> tuple[Any, Any]:
    pydantic_ai = _need("pydantic_ai", "pydantic-ai-slim[anthropic]")
    anthropic = _need("anthropic", "anthropic")
    models = _need("pydantic_ai.models.anthropic", "pydantic-ai-slim[anthropic]")
    providers = _need("pydantic_ai.providers.anthropic", "pydantic-ai-slim[anthropic]")
    sdk = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0)
    model = models.AnthropicModel(
        PERSON_MODEL, provider=providers.AnthropicProvider(anthropic_client=sdk)
    )
    settings = {"max_tokens": PERSON_MAX_TOKENS}
    agent = pydantic_ai.Agent(
        model, output_type=Person, system_prompt=PERSON_SYSTEM, model_settings=settings
    )
    return agent, sdk


def pydantic_ai_sync(url: str) -> SyncCall:
    agent, sdk = _agent(url)
    prompt = SENTENCE

    def call() -> None:
        output = agent.run_sync(prompt).output
        if not isinstance(output, Person):
            raise _invalid(output)

    def close() -> None:
        # The SDK client lives on the loop run_sync drives; closed there, or its finaliser would
        # later schedule the close on whatever loop is running then.
        _need("pydantic_ai._utils", "pydantic-ai-slim").run_until_complete(sdk.close())

    call.close = close  # type: ignore[attr-defined]
    return call


async def pydantic_ai_async(url: str) -> AsyncPair:
    agent, sdk = _agent(url)
    prompt = SENTENCE

    async def call() -> None:
        output = (await agent.run(prompt)).output
        if not isinstance(output, Person):
            raise _invalid(output)

    return call, sdk.close


# --- langchain-anthropic --------------------------------------------------------------------------


def _chain(url: str) -> tuple[Any, Any]:
    module = _need("langchain_anthropic", "langchain-anthropic")
    chat = module.ChatAnthropic(
        model=PERSON_MODEL,
        base_url=url,
        api_key=API_KEY,
        max_retries=0,
        max_tokens=PERSON_MAX_TOKENS,
    )
    return chat.with_structured_output(Person), chat


def langchain_sync(url: str) -> SyncCall:
    chain, _ = _chain(url)
    prompt = [("system", PERSON_SYSTEM), ("user", SENTENCE)]

    def call() -> None:
        output = chain.invoke(prompt)
        if not isinstance(output, Person):
            raise _invalid(output)

    return call


async def langchain_async(url: str) -> AsyncPair:
    # langchain-anthropic keeps one async HTTP client per base URL for the whole process, but an
    # async client belongs to the event loop it was first used on, and each block runs on a new
    # loop: start every block from a fresh one.
    utils = _need("langchain_anthropic._client_utils", "langchain-anthropic")
    utils._get_default_async_httpx_client.cache_clear()
    chain, chat = _chain(url)
    prompt = [("system", PERSON_SYSTEM), ("user", SENTENCE)]

    async def call() -> None:
        output = await chain.ainvoke(prompt)
        if not isinstance(output, Person):
            raise _invalid(output)

    async def close() -> None:
        await chat._async_client.close()

    return call, close


# --- the server check: raw HTTP POSTs with the SDK's own HTTP library -----------------------------


def _raw_parts(url: str) -> tuple[Any, str, bytes, dict[str, str]]:
    httpx = _need("httpx2", "httpx2 (comes with anthropic)")
    body = {
        "model": PERSON_MODEL,
        "max_tokens": PERSON_MAX_TOKENS,
        "system": PERSON_SYSTEM,
        "messages": [{"role": "user", "content": SENTENCE}],
    }
    headers = {"content-type": "application/json", "x-api-key": API_KEY}
    return httpx, f"{url}/v1/messages", json.dumps(body).encode(), headers


def raw_sync(url: str) -> SyncCall:
    httpx, target, body, headers = _raw_parts(url)
    client = httpx.Client()

    def call() -> None:
        response = client.post(target, content=body, headers=headers)
        if response.status_code != 200:
            raise _invalid(response.status_code)

    return call


async def raw_async(url: str) -> AsyncPair:
    httpx, target, body, headers = _raw_parts(url)
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    client = httpx.AsyncClient(limits=limits)

    async def call() -> None:
        response = await client.post(target, content=body, headers=headers)
        if response.status_code != 200:
            raise _invalid(response.status_code)

    return call, client.aclose


async def floor_aiohttp_async(url: str) -> AsyncPair:
    """The bare SDK on its official aiohttp backend (``DefaultAioHttpClient``): what a user who
    outgrows the default transport picks, and the anchor for throughput at 200 in flight."""
    anthropic, validator, messages = _floor_parts()
    client = anthropic.AsyncAnthropic(
        api_key=API_KEY,
        base_url=url,
        max_retries=0,
        http_client=anthropic.DefaultAioHttpClient(),
    )

    return _person_call(client, validator, messages), client.close


@dataclass(frozen=True)
class Row:
    """One contender: its label, what it is, and its two builders."""

    name: str
    what: str
    sync: Callable[[str], SyncCall]
    aio: Callable[[str], Awaitable[AsyncPair]]
    #: "floor" (the reference), "ours", "floor2"/"ours2" (the earlier invoice pair), "peer" or
    #: "check".
    kind: str = "peer"


ROWS: tuple[Row, ...] = (
    Row(
        "bare anthropic SDK (floor)",
        "messages.create(model, max_tokens, system, messages) + json.loads + compiled jsonschema",
        floor_sync,
        floor_async,
        "floor",
    ),
    Row(
        "scriptorium, native",
        "Engine.run / Engine.arun, file-based prompt, strategy native (output_config)",
        scriptorium_sync,
        scriptorium_async,
        "ours",
    ),
    Row(
        "scriptorium, prompt",
        "Engine.run / Engine.arun, file-based prompt, strategy prompt (schema in system)",
        scriptorium_prompt_sync,
        scriptorium_prompt_async,
        "ours",
    ),
    Row(
        "earlier floor: SDK + output_config, invoice",
        "invoice task: messages.create(output_config) + 11-property compiled jsonschema",
        invoice_floor_sync,
        invoice_floor_async,
        "floor2",
    ),
    Row(
        "scriptorium, native, invoice",
        "invoice task: Engine.run / Engine.arun, strategy native",
        scriptorium_invoice_sync,
        scriptorium_invoice_async,
        "ours2",
    ),
    Row(
        "instructor",
        "from_anthropic, ANTHROPIC_TOOLS, response_model",
        instructor_sync,
        instructor_async,
    ),
    Row(
        "pydantic-ai", "Agent(output_type=...), run_sync / run", pydantic_ai_sync, pydantic_ai_async
    ),
    Row(
        "langchain-anthropic",
        "ChatAnthropic.with_structured_output",
        langchain_sync,
        langchain_async,
    ),
    Row("raw httpx2 POST (server check)", "one POST, no parsing", raw_sync, raw_async, "check"),
    Row(
        "bare anthropic SDK on aiohttp (async floor)",
        "as the floor; async: AsyncAnthropic(http_client=DefaultAioHttpClient()); sync: httpx",
        floor_sync,
        floor_aiohttp_async,
        "floor_aio",
    ),
)
