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
    SCHEMA,
    Invoice,
    make_project,
    user_message,
)

__all__ = ["ROWS", "AsyncCall", "AsyncPair", "Row", "SyncCall", "Unavailable"]

SyncCall = Callable[[], None]
AsyncCall = Callable[[], Awaitable[None]]
#: An async row: the call, and how to close what it opened (on the loop that opened it).
AsyncPair = tuple[AsyncCall, Callable[[], Awaitable[None]]]

_MAX_TOKENS = 1024
# What the floor sends as the output format: the schema without "$schema" (what scriptorium's
# reduction sends too).
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


# --- the floor: bare SDK + json.loads + a compiled jsonschema validator ---------------------------


def _floor_parts() -> tuple[Any, Any, list[dict[str, str]], dict[str, Any]]:
    anthropic = _need("anthropic", "anthropic")
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    messages = [{"role": "user", "content": user_message()}]
    output_config = {"format": {"type": "json_schema", "schema": _API_SCHEMA}}
    return anthropic, validator, messages, output_config


def floor_sync(url: str) -> SyncCall:
    anthropic, validator, messages, output_config = _floor_parts()
    client = anthropic.Anthropic(api_key=API_KEY, base_url=url, max_retries=0)

    def call() -> None:
        message = client.messages.create(
            model=MODEL, max_tokens=_MAX_TOKENS, messages=messages, output_config=output_config
        )
        value = json.loads(message.content[0].text)
        if not validator.is_valid(value):
            raise _invalid(value)

    return call


async def floor_async(url: str) -> AsyncPair:
    anthropic, validator, messages, output_config = _floor_parts()
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


def scriptorium_sync(url: str) -> SyncCall:
    engine = _engine(url)
    inputs = {"document": DOCUMENT}

    def call() -> None:
        result = engine.run("extract", inputs=inputs)
        if not result.validation.valid:
            raise _invalid(result.validation.issues)

    return call


async def scriptorium_async(url: str) -> AsyncPair:
    engine = _engine(url)
    inputs = {"document": DOCUMENT}

    async def call() -> None:
        result = await engine.arun("extract", inputs=inputs)
        if not result.validation.valid:
            raise _invalid(result.validation.issues)

    async def close() -> None:
        await engine.client.client_for("anthropic").aclose()

    return call, close


# --- Instructor -----------------------------------------------------------------------------------


def _instructor(url: str, is_async: bool) -> Any:
    instructor = _need("instructor", "instructor")
    anthropic = _need("anthropic", "anthropic")
    cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    sdk = cls(api_key=API_KEY, base_url=url, max_retries=0)
    return instructor.from_anthropic(sdk, mode=instructor.Mode.ANTHROPIC_TOOLS)


def instructor_sync(url: str) -> SyncCall:
    client = _instructor(url, False)
    messages = [{"role": "user", "content": user_message()}]

    def call() -> None:
        invoice = client.messages.create(
            model=MODEL, max_tokens=_MAX_TOKENS, messages=messages, response_model=Invoice
        )
        if not isinstance(invoice, Invoice):
            raise _invalid(invoice)

    return call


async def instructor_async(url: str) -> AsyncPair:
    client = _instructor(url, True)
    messages = [{"role": "user", "content": user_message()}]

    async def call() -> None:
        invoice = await client.messages.create(
            model=MODEL, max_tokens=_MAX_TOKENS, messages=messages, response_model=Invoice
        )
        if not isinstance(invoice, Invoice):
            raise _invalid(invoice)

    return call, client.client.close


# --- Pydantic AI ----------------------------------------------------------------------------------


def _agent(url: str) -> tuple[Any, Any]:
    pydantic_ai = _need("pydantic_ai", "pydantic-ai-slim[anthropic]")
    anthropic = _need("anthropic", "anthropic")
    models = _need("pydantic_ai.models.anthropic", "pydantic-ai-slim[anthropic]")
    providers = _need("pydantic_ai.providers.anthropic", "pydantic-ai-slim[anthropic]")
    sdk = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0)
    model = models.AnthropicModel(MODEL, provider=providers.AnthropicProvider(anthropic_client=sdk))
    settings = {"max_tokens": _MAX_TOKENS}
    return pydantic_ai.Agent(model, output_type=Invoice, model_settings=settings), sdk


def pydantic_ai_sync(url: str) -> SyncCall:
    agent, sdk = _agent(url)
    prompt = user_message()

    def call() -> None:
        output = agent.run_sync(prompt).output
        if not isinstance(output, Invoice):
            raise _invalid(output)

    def close() -> None:
        # The SDK client lives on the loop run_sync drives; closed there, or its finaliser would
        # later schedule the close on whatever loop is running then.
        _need("pydantic_ai._utils", "pydantic-ai-slim").run_until_complete(sdk.close())

    call.close = close  # type: ignore[attr-defined]
    return call


async def pydantic_ai_async(url: str) -> AsyncPair:
    agent, sdk = _agent(url)
    prompt = user_message()

    async def call() -> None:
        output = (await agent.run(prompt)).output
        if not isinstance(output, Invoice):
            raise _invalid(output)

    return call, sdk.close


# --- langchain-anthropic --------------------------------------------------------------------------


def _chain(url: str) -> tuple[Any, Any]:
    module = _need("langchain_anthropic", "langchain-anthropic")
    chat = module.ChatAnthropic(
        model=MODEL, base_url=url, api_key=API_KEY, max_retries=0, max_tokens=_MAX_TOKENS
    )
    return chat.with_structured_output(Invoice), chat


def langchain_sync(url: str) -> SyncCall:
    chain, _ = _chain(url)
    prompt = user_message()

    def call() -> None:
        output = chain.invoke(prompt)
        if not isinstance(output, Invoice):
            raise _invalid(output)

    return call


async def langchain_async(url: str) -> AsyncPair:
    # langchain-anthropic keeps one async HTTP client per base URL for the whole process, but an
    # async client belongs to the event loop it was first used on, and each block runs on a new
    # loop: start every block from a fresh one.
    utils = _need("langchain_anthropic._client_utils", "langchain-anthropic")
    utils._get_default_async_httpx_client.cache_clear()
    chain, chat = _chain(url)
    prompt = user_message()

    async def call() -> None:
        output = await chain.ainvoke(prompt)
        if not isinstance(output, Invoice):
            raise _invalid(output)

    async def close() -> None:
        await chat._async_client.close()

    return call, close


# --- the server check: raw HTTP POSTs with the SDK's own HTTP library -----------------------------


def _raw_parts(url: str) -> tuple[Any, str, bytes, dict[str, str]]:
    httpx = _need("httpx2", "httpx2 (comes with anthropic)")
    body = {
        "model": MODEL,
        "max_tokens": _MAX_TOKENS,
        "messages": [{"role": "user", "content": user_message()}],
        "output_config": {"format": {"type": "json_schema", "schema": _API_SCHEMA}},
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


@dataclass(frozen=True)
class Row:
    """One contender: its label, what it is, and its two builders."""

    name: str
    what: str
    sync: Callable[[str], SyncCall]
    aio: Callable[[str], Awaitable[AsyncPair]]
    kind: str = "peer"  # "floor", "ours", "peer" or "check"


ROWS: tuple[Row, ...] = (
    Row(
        "bare anthropic SDK (floor)",
        "messages.create + json.loads + compiled jsonschema",
        floor_sync,
        floor_async,
        "floor",
    ),
    Row(
        "scriptorium",
        "Engine.run / Engine.arun, file-based prompt, native strategy",
        scriptorium_sync,
        scriptorium_async,
        "ours",
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
)
