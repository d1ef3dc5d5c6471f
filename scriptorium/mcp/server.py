"""``create_server``: the SDK's low-level ``Server`` over an Engine, with the handlers of
prompts/list, prompts/get, completion/complete, tools/list and tools/call.

Every run goes through ``engine.arun`` on the server's event loop, at most ``concurrency`` at once
(the rest wait for a slot). A client that cancels a request cancels its handler, and with it the run
(its provider connection closed), whether it is running or still waiting for a slot. Preparing a
request that carries a lot of text runs in a worker thread, as it does for the HTTP API.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from scriptorium._suggest import did_you_mean
from scriptorium._version import installed_version
from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.mcp.arguments import request_from_arguments, run_request, split_arguments
from scriptorium.mcp.catalog import completion_values, prompt_entry, prompt_summary
from scriptorium.mcp.errors import INVALID_PARAMS, error_data, rpc_code
from scriptorium.mcp.render import prompt_result
from scriptorium.mcp.tools import (
    LIST_TOOL,
    RENDER_TOOL,
    RUN_TOOL,
    error_result,
    fixed_tools,
    json_result,
    prompt_tool,
    read_run_arguments,
    run_result,
    tool_name,
)

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import PreparedRun, RunRequest

__all__ = ["DEFAULT_CONCURRENCY", "create_server"]

_log = logging.getLogger("scriptorium.mcp")

#: Runs in flight at once when the caller says nothing.
DEFAULT_CONCURRENCY = 8

Context = ServerRequestContext[Any, Any]


class _Gate:
    """At most ``size`` runs at once: one semaphore per event loop (an asyncio primitive belongs
    to the loop that first waits on it, and a server may be driven by several loops in turn)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.size)
        async with gate:
            yield


class _Prompts:
    """The server's state and the work behind each handler."""

    def __init__(
        self, engine: Engine, *, profile: str | None, concurrency: int, tools_per_prompt: bool
    ) -> None:
        self.engine = engine
        self.profile = profile
        self.gate = _Gate(concurrency)
        self.tools_per_prompt = tools_per_prompt
        roots = {str(engine.root), str(engine.root.resolve())}
        if engine.artifact_root is not None:
            roots |= {str(engine.artifact_root), str(engine.artifact_root.resolve())}
        #: The server's directories: shown as ``.`` in what a client reads.
        self.roots = tuple(roots)

    # -- the project -------------------------------------------------------------------------

    def definitions(self) -> list[PromptDefinition]:
        """Every prompt that loads; a broken file is left out (and logged), not fatal."""
        found = []
        for prompt_id in self.engine.list_prompts():
            try:
                found.append(self.engine.prompts.get(prompt_id))
            except ScriptoriumError as err:
                _log.warning("prompt %s is not listed: %s: %s", prompt_id, err.code, err.message)
        return found

    def definition(self, prompt_id: str) -> PromptDefinition:
        """The prompt ``prompt_id``; a protocol error when there is none."""
        try:
            return self.engine.prompts.get(prompt_id)
        except ScriptoriumError as err:
            raise self.protocol_error(err) from err

    def protocol_error(self, err: ScriptoriumError) -> MCPError:
        """A sentinel as the JSON-RPC error a protocol request answers."""
        data = error_data(err, self.roots)
        return MCPError(code=rpc_code(err), message=data["message"], data=data)

    async def prepare(self, request: RunRequest) -> PreparedRun:
        from scriptorium.usecase.offload import off_loop
        from scriptorium.usecase.prepare import heavy_to_prepare

        return await off_loop(heavy_to_prepare(request), lambda: self.engine.prepare(request))

    # -- prompts -----------------------------------------------------------------------------

    async def list_prompts(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt_entry(d) for d in self.definitions()])

    async def render(self, name: str, arguments: Mapping[str, str]) -> types.GetPromptResult:
        definition = self.definition(name)
        try:
            request = request_from_arguments(
                definition, arguments, profile=self.profile, repair=self.engine.repair
            )
            prepared = await self.prepare(request)
        except ScriptoriumError as err:
            raise self.protocol_error(err) from err
        return prompt_result(definition, prepared)

    async def get_prompt(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await self.render(params.name, params.arguments or {})

    async def complete(
        self, ctx: Context, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        if not isinstance(params.ref, types.PromptReference):
            return types.CompleteResult(completion=types.Completion(values=[]))
        definition = self.definition(params.ref.name)
        values = completion_values(definition, params.argument.name, params.argument.value)
        return types.CompleteResult(completion=values)

    # -- tools -------------------------------------------------------------------------------

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = fixed_tools()
        if self.tools_per_prompt:
            taken = {tool.name for tool in listed}
            for definition in self.definitions():
                tool = prompt_tool(definition, self.output_document(definition))
                if tool.name in taken:
                    # `prompt` would be run_prompt; `a/b` and `a_b` would share run_a_b.
                    _log.warning("prompt %s has no tool: %s is taken", definition.id, tool.name)
                    continue
                taken.add(tool.name)
                listed.append(tool)
        return types.ListToolsResult(tools=listed)

    def output_document(self, definition: PromptDefinition) -> Any:
        """The prompt's loaded output schema, or None (a schema that does not load: the run
        itself will say why)."""
        from scriptorium.usecase.prepare import load_output_schema

        try:
            loaded = load_output_schema(definition, self.engine.validator)
        except ScriptoriumError as err:
            _log.warning("prompt %s: no output schema for its tool: %s", definition.id, err.message)
            return None
        return None if loaded is None else loaded.document

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        try:
            if params.name == RUN_TOOL:
                return await self.run_tool(arguments)
            if params.name == LIST_TOOL:
                prompts = [prompt_summary(d) for d in self.definitions()]
                return json_result({"prompts": prompts})
            if params.name == RENDER_TOOL:
                return await self.render_tool(arguments)
            if self.tools_per_prompt:
                definition = self.tool_prompt(params.name)
                if definition is not None:
                    return await self.run_prompt_tool(definition, arguments)
        except ScriptoriumError as err:
            _log.info("tool %s failed: %s", params.name, err.code)
            return error_result(err, self.roots)
        except MCPError as err:
            return types.CallToolResult(
                content=[types.TextContent(text=err.message)],
                is_error=True,
                _meta={"error": err.data},
            )
        except Exception as err:
            # A bug of ours: the type only, a foreign message could quote anything.
            _log.exception("tool %s failed", params.name)
            return types.CallToolResult(
                content=[types.TextContent(text=f"internal: unexpected {type(err).__name__}")],
                is_error=True,
            )
        known = [t.name for t in (await self.list_tools(ctx, None)).tools]
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"no tool {params.name!r}{did_you_mean(params.name, known)}",
            data={"code": "invalid_request", "field": "name"},
        )

    def tool_prompt(self, name: str) -> PromptDefinition | None:
        """The prompt whose tool is ``name`` (the first in listing order, as tools/list keeps)."""
        for prompt_id in self.engine.list_prompts():
            if tool_name(prompt_id) == name:
                return self.engine.prompts.get(prompt_id)
        return None

    async def execute(self, request: RunRequest) -> types.CallToolResult:
        async with self.gate.slot():
            result = await self.engine.arun(request)
        _log.info(
            "ran %s on %s: %s output, %d+%d tokens, %d micro-USD",
            result.prepared.prompt_id,
            result.prepared.profile,
            "valid" if result.validation.valid else "invalid",
            result.usage.input_tokens,
            result.usage.output_tokens,
            result.usage.cost_micro,
        )
        return run_result(result, self.roots)

    async def run_tool(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        given = read_run_arguments(arguments)
        definition = self.engine.prompts.get(given.prompt)
        request = run_request(
            definition,
            inputs=given.inputs,
            artifacts=given.artifacts,
            profile=given.profile or self.profile,
            repair=self.engine.repair,
        )
        return await self.execute(request)

    async def run_prompt_tool(
        self, definition: PromptDefinition, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        inputs, texts = split_arguments(definition, arguments)
        request = run_request(
            definition,
            inputs=inputs,
            artifacts=texts,
            profile=self.profile,
            repair=self.engine.repair,
        )
        return await self.execute(request)

    async def render_tool(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        prompt = arguments.get("prompt")
        given = arguments.get("arguments") or {}
        if not isinstance(prompt, str) or not prompt:
            raise InvalidRequestError("prompt: expected the prompt id, a string", field="prompt")
        if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
            raise InvalidRequestError("arguments: expected an object of strings", field="arguments")
        rendered = await self.render(prompt, given)
        return json_result(rendered.model_dump(mode="json", by_alias=True, exclude_none=True))


def create_server(
    engine: Engine,
    *,
    profile: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    tools_per_prompt: bool = False,
) -> Server[Any]:
    """The MCP server of ``engine``'s project: the official SDK's low-level ``Server``, ready for
    any of the SDK's transports (``server.run`` over stdio streams, ``server.streamable_http_app()``).

    ``profile`` is the profile every render and run uses unless a ``run_prompt`` call names one
    (default: each prompt's own); ``concurrency`` bounds the runs in flight; ``tools_per_prompt``
    adds a ``run_<id>`` tool per prompt. Repairs happen when the engine has a repairer.
    """
    if concurrency < 1:
        raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
    state = _Prompts(
        engine, profile=profile, concurrency=concurrency, tools_per_prompt=tools_per_prompt
    )
    return Server(
        "scriptorium",
        version=installed_version(),
        title="scriptorium prompts",
        instructions=(
            "The prompts of a scriptorium project. prompts/list and prompts/get give them as "
            "prompt templates; the run_prompt tool runs one through its model, with its inputs "
            "checked and its output validated."
        ),
        on_list_prompts=state.list_prompts,
        on_get_prompt=state.get_prompt,
        on_completion=state.complete,
        on_list_tools=state.list_tools,
        on_call_tool=state.call_tool,
    )
