"""``POST /v1/prepare``: everything but the LLM call, answered as the ``PreparedRun`` JSON that
``scriptorium prepare --json`` prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from scriptorium.httpapi.body import read_run_request
from scriptorium.httpapi.responses import raw_json_response
from scriptorium.usecase.offload import off_loop
from scriptorium.usecase.prepare import heavy_to_prepare

if TYPE_CHECKING:
    from scriptorium.httpapi.service import Service

__all__ = ["prepare_route"]


async def prepare_route(request: Request) -> Response:
    """``POST /v1/prepare``."""
    service: Service = request.app.state.service
    run = await read_run_request(request, service)
    # Preparing reads files and renders templates: it takes a slot like a run, so a flood of
    # prepares cannot starve the loop either, and a heavy one runs in a worker thread.
    async with service.slot():
        prepared = await off_loop(heavy_to_prepare(run), lambda: service.engine.prepare(run))
    return raw_json_response(prepared.model_dump_json(by_alias=True))
