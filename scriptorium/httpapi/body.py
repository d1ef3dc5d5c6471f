"""Reading a request body: the size limit (checked while the body streams in, not only from
``Content-Length``), the JSON parse into a ``RunRequest``, and the server's policy on what a body
may ask for (a key of its own, a file reference, another endpoint)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.errors import InvalidRequestError, describe
from scriptorium.httpapi.errors import ApiError

if TYPE_CHECKING:
    from starlette.requests import Request

    from scriptorium.httpapi.service import Service
    from scriptorium.usecase.model import RunRequest

__all__ = ["read_body", "read_run_request", "require_valid_flag"]

_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"the request body is larger than {limit} bytes")


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refused with 413 as soon as it passes ``limit`` bytes: a client that sends
    no ``Content-Length`` (chunked) or a false one is stopped at the limit, not after it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(raw: bytes) -> RunRequest:
    from pydantic import ValidationError as PydanticError

    from scriptorium.usecase.model import RunRequest

    if not raw.strip():
        raise InvalidRequestError("the request body is empty: send a RunRequest JSON object")
    try:
        return RunRequest.model_validate_json(raw)
    except PydanticError as err:
        # describe() lists the failing fields and why, never the values sent (a key among them).
        first = err.errors(include_input=False, include_url=False)[:1]
        loc = ".".join(str(p) for p in first[0]["loc"]) if first and first[0]["loc"] else None
        raise InvalidRequestError(f"invalid RunRequest: {describe(err)}", field=loc) from err


def _check_policy(run: RunRequest, service: Service) -> None:
    if run.api_key is not None and not service.allow_client_keys:
        raise InvalidRequestError(
            "this server does not take API keys in requests (it uses its own)", field="api_key"
        )
    # A request naming its own endpoint would make the server send its key there; only a request
    # bringing its own key (and a server allowing that) may choose where it goes.
    if run.overrides.endpoint is not None and run.api_key is None:
        raise InvalidRequestError(
            "overrides.endpoint needs the request's own api_key (the server's key is only sent "
            "to the endpoints its profiles name)",
            field="overrides.endpoint",
        )
    wanted = run.overrides.repair_attempts
    if wanted is not None and wanted >= 1 and not service.engine.repair:
        raise InvalidRequestError(
            f"overrides.repair_attempts={wanted} asks for repairs, but this server runs without "
            "a repairer (start it with 'scriptorium serve --repair', or serve an "
            "Engine(repair=True)); it is refused rather than ignored",
            field="overrides.repair_attempts",
        )
    if not service.allow_artifact_refs:
        artifacts: dict[str, Any] = dict(run.artifacts)
        for name, value in artifacts.items():
            if isinstance(value, str):
                raise InvalidRequestError(
                    f"artifact {name!r}: give the content ({{'text': ...}} or {{'base64': ...}}); "
                    "file references are read only when the server was started with an artifact "
                    "root",
                    field=f"artifacts.{name}",
                )


async def read_run_request(request: Request, service: Service) -> RunRequest:
    """The body as a ``RunRequest`` the server is willing to run (400 ``invalid_request``
    otherwise; 413 when the body is over the limit)."""
    raw = await read_body(request, service.max_body_bytes)
    run = _parse(raw)
    _check_policy(run, service)
    return run


def require_valid_flag(request: Request) -> bool:
    """``?require_valid=true``: an invalid output becomes a 422 instead of a 200."""
    if not request.scope.get("query_string"):
        return False  # the common case, without building the query mapping
    value = request.query_params.get("require_valid")
    if value is None:
        return False
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvalidRequestError("require_valid must be true or false", field="require_valid")
