"""``POST /v1/runs``: run a prompt through ``engine.arun`` and answer the ``RunResult``.

The answer is the same JSON ``scriptorium run --json`` prints. An invalid output is still a 200
(the verdict is in ``validation``), unless ``?require_valid=true`` asks for a 422 ``output_invalid``
whose body holds the result too. With ``Accept: text/event-stream`` the run is streamed as
server-sent events instead (:mod:`scriptorium.httpapi.sse`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from scriptorium.errors import OutputInvalidError
from scriptorium.httpapi.body import read_run_request, require_valid_flag
from scriptorium.httpapi.errors import error_body
from scriptorium.httpapi.responses import raw_json_response, request_id
from scriptorium.httpapi.sse import stream_run, wants_events

if TYPE_CHECKING:
    from scriptorium.httpapi.service import Service
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = ["run_route"]


async def execute(service: Service, run: RunRequest) -> RunResult:
    """One run on the server's loop, within the concurrency bound."""
    async with service.slot():
        return await service.engine.arun(run)


def _invalid_answer(request: Request, err: OutputInvalidError, result_json: str) -> Response:
    error = json.dumps(error_body(err, request_id(request)), ensure_ascii=False)
    # The result is spliced in as serialised, so it is the very JSON a 200 would carry.
    body = error[:-1] + ',"result":' + result_json + "}"
    return raw_json_response(body, status=422)


async def run_route(request: Request) -> Response:
    """``POST /v1/runs``."""
    service: Service = request.app.state.service
    require_valid = require_valid_flag(request)
    run = await read_run_request(request, service)
    if wants_events(request):
        return await stream_run(request, service, run, require_valid=require_valid)
    result = await execute(service, run)
    result_json = result.model_dump_json(by_alias=True)
    if require_valid:
        try:
            result.raise_for_validation()
        except OutputInvalidError as err:
            return _invalid_answer(request, err, result_json)
    return raw_json_response(result_json)
