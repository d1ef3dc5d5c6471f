"""Building answers: JSON bodies (already serialised ones passed through untouched) and the
request id every answer and error body carries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["REQUEST_ID_KEY", "json_response", "raw_json_response", "request_id"]

#: Where the request id lives in the ASGI scope (set by the outer middleware).
REQUEST_ID_KEY = "scriptorium.request_id"


def request_id(request: Request) -> str:
    """The id of this request (the ``X-Request-ID`` header of its answer)."""
    return str(request.scope.get(REQUEST_ID_KEY, ""))


def raw_json_response(
    body: str | bytes, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """An answer whose JSON is already serialised (a pydantic ``model_dump_json``): sent as is, so
    ``POST /v1/runs`` answers byte for byte what ``scriptorium run --json`` prints."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return Response(data, status_code=status, headers=headers, media_type="application/json")


def json_response(
    value: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """``value`` as compact UTF-8 JSON."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return raw_json_response(data, status, headers)
