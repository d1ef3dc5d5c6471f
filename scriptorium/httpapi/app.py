"""``create_app``: the Starlette application, and the outer layer every request goes through.

That layer (:class:`Guard`) gives each request an id, checks the bearer token, turns every failure
into the JSON error body with the status of the mapping in :mod:`scriptorium.httpapi.errors`,
cancels the work of a client that hangs up (:class:`_Hangup`), and writes one access-log line per
request. Routes are plain functions, one module each, that raise sentinels and return answers.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import re
import time
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.httpapi.catalog import profiles_route, prompt_route, prompts_route
from scriptorium.httpapi.errors import ApiError, error_body, retry_after_header, status_for
from scriptorium.httpapi.prepare import prepare_route
from scriptorium.httpapi.responses import REQUEST_ID_KEY, json_response, request_id
from scriptorium.httpapi.runs import run_route
from scriptorium.httpapi.service import Service

if TYPE_CHECKING:
    from scriptorium.engine import Engine

__all__ = ["ACCESS_LOGGER", "create_app"]

#: The logger of the access log: one INFO line per request (id, method, route, status, duration).
ACCESS_LOGGER = "scriptorium.httpapi.access"
_access = logging.getLogger(ACCESS_LOGGER)
_log = logging.getLogger("scriptorium.httpapi")

#: Routes that answer without a token (a load balancer's health probe has none).
_OPEN_PATHS = frozenset({"/healthz"})
# A caller's own X-Request-ID is kept when it is a plain token; anything else could forge log lines.
_CALLER_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


async def health_route(request: Request) -> Response:
    """``GET /healthz``: the process answers. No token, no engine work."""
    return json_response({"status": "ok"})


async def openapi_route(request: Request) -> Response:
    """``GET /openapi.json``."""
    service: Service = request.app.state.service
    return json_response(service.openapi())


async def _http_exception(request: Request, exc: Exception) -> Response:
    # Starlette's own refusals (unknown route, method not allowed) in the same error body.
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    message = {404: f"no route {request.url.path}", 405: "method not allowed here"}.get(
        status, "the request cannot be served"
    )
    body = error_body(ApiError(status, code, message), request_id(request))
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    return json_response(body, status, headers)


# What a path may show of itself in the log as it is: anything else (control characters, spaces,
# non-ASCII, a percent sign) is percent-encoded, so no path can end a log line or fake another.
_PATH_SAFE = "/-._~!$&'()*+,;=:@"


def logged_path(scope: Scope) -> str:
    """The request's path as the access log writes it: percent-encoded outside a small safe set,
    so it holds no control character, whatever the caller sent."""
    return urllib.parse.quote(str(scope.get("path", "-")), safe=_PATH_SAFE)


class _Hangup:
    """Cancels a request's work when its client disconnects: the one way plain runs, prepares
    and streamed runs stop when nobody is left to answer.

    ``receive`` is relayed to the app. Once the app has read the whole body, only a disconnect can
    come on the real channel, so a watcher waits on it: when the client hangs up before the
    answer ended, the request's task is cancelled wherever it waits (a queued run in its slot is
    never sent; a run in flight has its provider connection closed) and every later ``receive``
    of the app says ``http.disconnect``. No task is started for a request whose body is never read.
    """

    __slots__ = ("_cancelled", "_receive", "_task", "_watcher", "answered", "gone")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._task = asyncio.current_task()
        self._watcher: asyncio.Task[None] | None = None
        self._cancelled = False
        self.gone = asyncio.Event()
        #: Set once the answer's last byte was handed to the server.
        self.answered = False

    async def receive(self) -> Message:
        if self._watcher is not None or self.gone.is_set():
            await self.gone.wait()
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.gone.set()
        elif not message.get("more_body", False):
            self._watcher = asyncio.ensure_future(self._watch())
        return message

    async def _watch(self) -> None:
        message = await self._receive()
        # A server may also say "disconnect" once the answer is complete: that is no hang-up.
        if message["type"] == "http.disconnect" and not self.answered:
            self.gone.set()
            if self._task is not None:
                self._cancelled = True
                self._task.cancel()

    def close(self) -> None:
        """Stop watching; a cancellation this hang-up asked for is taken back from the task's
        count (whether or not something on the way swallowed it), so nothing later in the task
        takes itself for cancelled."""
        if self._watcher is not None and not self._watcher.done():
            self._watcher.cancel()
        if self._cancelled and self._task is not None:
            self._cancelled = False
            self._task.uncancel()


def _new_request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            given = str(value.decode("latin-1"))
            if _CALLER_ID.match(given):
                return given
    return os.urandom(16).hex()  # as random as a uuid4, without building the UUID object


class Guard:
    """The outer layer: request id, bearer auth, error bodies, access log (pure ASGI, so it adds
    no task or copy per request)."""

    def __init__(self, app: ASGIApp, *, service: Service) -> None:
        self.app = app
        self.service = service
        token = service.token
        self._expected = None if token is None else token.encode("utf-8")

    def _authorized(self, scope: Scope) -> bool:
        if self._expected is None or scope["path"] in _OPEN_PATHS:
            return True
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                # compare_digest runs in time independent of where the first difference is.
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self._expected
                )
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _new_request_id(scope)
        scope[REQUEST_ID_KEY] = rid
        started = time.perf_counter()
        state: dict[str, Any] = {"status": 0}
        hangup = _Hangup(receive)

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                headers = [*message.get("headers", ()), (b"x-request-id", rid.encode("ascii"))]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                hangup.answered = True
            await send(message)

        try:
            if not self._authorized(scope):
                raise ApiError(
                    401,
                    "unauthorized",
                    "a valid 'Authorization: Bearer <token>' header is required",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            await self.app(scope, hangup.receive, tagged)
        except asyncio.CancelledError:
            if not hangup.gone.is_set():
                raise  # the server is shutting down, not this client hanging up
            state["status"] = 499
        except ClientDisconnect:
            # The caller hung up while sending its body (or while its answer streamed): nobody is
            # left to answer.
            state["status"] = 499
        except Exception as err:
            if state["status"]:
                # The answer has begun: nothing can be said any more but to the log.
                _log.error("request %s failed after its answer began", rid, exc_info=err)
            else:
                await _failure(err, rid, self.service.roots)(scope, receive, tagged)
        finally:
            hangup.close()
            if hangup.gone.is_set() and not hangup.answered:
                state["status"] = 499
            if _access.isEnabledFor(logging.INFO):
                # The route's pattern where one matched; else the path, escaped: a path is the
                # caller's text, and must not be able to end this line and write another.
                route = getattr(scope.get("route"), "path", None)
                duration_ms = round((time.perf_counter() - started) * 1000, 3)
                _access.info(
                    "%s %s %s %s %.1fms",
                    rid,
                    scope.get("method", "-"),
                    route or logged_path(scope),
                    state["status"],
                    duration_ms,
                    extra={
                        "request_id": rid,
                        "method": scope.get("method"),
                        "route": route,
                        "path": None if route else logged_path(scope),
                        "status": state["status"],
                        "duration_ms": duration_ms,
                    },
                )


def _failure(err: Exception, rid: str, roots: tuple[str, ...]) -> Response:
    if isinstance(err, ApiError):
        return json_response(error_body(err, rid), err.status, err.headers)
    if isinstance(err, ScriptoriumError):
        body = error_body(err, rid, roots=roots)
        return json_response(body, status_for(err), retry_after_header(err))
    # A bug of ours. The type only: a foreign message could quote anything it was given.
    _log.error("request %s: unexpected %s", rid, type(err).__name__, exc_info=err)
    internal = ApiError(
        500, "internal", f"unexpected {type(err).__name__}; the server log has request {rid}"
    )
    return json_response(error_body(internal, rid), 500)


def _roots(engine: Engine) -> tuple[str, ...]:
    # Where the project and the artifacts live, as the messages may spell them.
    found: set[str] = set()
    for path in (getattr(engine, "root", None), getattr(engine, "artifact_root", None)):
        if path is not None:
            found.update({str(path.absolute()), str(path.resolve())})
    return tuple(found)


def create_app(
    engine: Engine,
    *,
    token: str | None = None,
    max_body_bytes: int = 32 * 2**20,
    concurrency: int = 64,
    allow_client_keys: bool = False,
    allow_artifact_refs: bool | None = None,
    cors_origins: Sequence[str] = (),
) -> Starlette:
    """The ASGI app serving ``engine`` over HTTP.

    ``token``: when set, every route but ``/healthz`` needs ``Authorization: Bearer <token>``.
    ``max_body_bytes``: larger bodies get 413. ``concurrency``: runs in flight at once (the rest
    wait). ``allow_client_keys``: accept a request's own ``api_key`` (refused with 400 otherwise).
    ``allow_artifact_refs``: read string artifact references as files under the engine's artifact
    root; by default only when the engine was given an ``artifact_root``, else artifacts must come
    by value. ``cors_origins``: browser origins (``https://app.example``) allowed to call the API
    from another origin: their preflights are answered and their answers carry
    ``Access-Control-Allow-Origin`` (Starlette's CORS middleware); none by default.
    """
    if token is not None and not token:
        raise InvalidRequestError("token must not be empty (use None for no token)", field="token")
    if concurrency < 1:
        raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
    if max_body_bytes < 1:
        raise InvalidRequestError("max_body_bytes must be at least 1", field="max_body_bytes")
    if allow_artifact_refs is None:
        allow_artifact_refs = getattr(engine, "artifact_root", None) is not None
    service = Service(
        roots=_roots(engine),
        engine=engine,
        token=token,
        max_body_bytes=max_body_bytes,
        concurrency=concurrency,
        allow_client_keys=allow_client_keys,
        allow_artifact_refs=allow_artifact_refs,
    )
    routes = [
        Route("/v1/runs", run_route, methods=["POST"]),
        Route("/v1/prepare", prepare_route, methods=["POST"]),
        Route("/v1/prompts", prompts_route, methods=["GET"]),
        Route("/v1/prompts/{id:path}", prompt_route, methods=["GET"]),
        Route("/v1/profiles", profiles_route, methods=["GET"]),
        Route("/healthz", health_route, methods=["GET"]),
        Route("/openapi.json", openapi_route, methods=["GET"]),
    ]
    middleware = [Middleware(Guard, service=service)]
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        # Outermost: a preflight carries no token and is answered before the guard asks for one.
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                # Every header the server reads (a request id, a W3C trace context).
                allow_headers=[
                    "authorization",
                    "content-type",
                    "accept",
                    "x-request-id",
                    "traceparent",
                    "tracestate",
                ],
                expose_headers=["x-request-id", "retry-after"],
            ),
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_exception},
    )
    app.state.service = service
    return app
