"""``FakeBedrockServer``: a loopback server speaking Amazon Bedrock's runtime API for Claude, so
the real ``AnthropicBedrock`` client can be tested end to end with fake AWS credentials.

    with FakeBedrockServer() as server:
        server.fail(429)                       # a ThrottlingException
        server.reply("hello")
        client = anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=server.url, ...)
        server.requests[-1].path               # /model/<id>/invoke
        server.requests[-1].headers["authorization"]   # AWS4-HMAC-SHA256 Credential=...

``POST /model/{model id}/invoke`` answers a Messages API body, ``/invoke-with-response-stream``
the same reply as an AWS event stream; ``/converse`` and ``/converse-stream`` answer the same
script in the Converse API's shape (:mod:`scriptorium._testing.converse`: ``provider: bedrock``) (``application/vnd.amazon.eventstream``: each Messages
API event base64-wrapped in a ``chunk`` message, an ``error`` event as an ``exception`` message).
The scripting is ``FakeAnthropicServer``'s (``reply``, ``reply_tool``, ``fail_midstream``,
``reset_midstream``, ``delay``, ``malformed``, ...), the errors Bedrock's: ``fail(status)`` sends
``{"message": ...}`` with the error's name in ``x-amzn-ErrorType`` (``ThrottlingException`` for
429, ``ValidationException`` for 400, ...; ``exception=`` names another). Every answer carries an
``x-amzn-RequestId``.

The fake checks no signature (it has no secret to check one with) but refuses a request whose
``authorization`` is not of the ``AWS4-HMAC-SHA256`` form, as Bedrock would, with a 403
``MissingAuthenticationTokenException``; ``expect_signed=False`` turns that off (a test of what
an unsigned request meets). No batch or token-counting routes: Bedrock's SDK class has neither.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.converse import converse_body, converse_events
from scriptorium._testing.eventstream import chunk_message, exception_message
from scriptorium._testing.http import RESET, Answer, RecordedRequest

__all__ = ["EXCEPTIONS", "FakeBedrockServer", "RecordedRequest"]

_INVOKE = re.compile(
    r"^/model/(?P<model>[^/]+)/"
    r"(?P<op>invoke|invoke-with-response-stream|converse|converse-stream)$"
)
_STREAM_OPS = frozenset({"invoke-with-response-stream", "converse-stream"})
_CONVERSE_OPS = frozenset({"converse", "converse-stream"})
_STREAM_TYPE = "application/vnd.amazon.eventstream"
_ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

#: The error Bedrock names for each status (``fail`` without ``exception=``).
EXCEPTIONS: Mapping[int, str] = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}

# A Messages API error type met mid-stream, as Bedrock's stream names it.
_STREAM_EXCEPTIONS = {
    "rate_limit_error": "throttlingException",
    "overloaded_error": "serviceUnavailableException",
    "api_error": "internalServerException",
    "timeout_error": "modelTimeoutException",
    "invalid_request_error": "validationException",
}


def _events(part: bytes) -> list[dict[str, Any] | str]:
    """The data of the server-sent events in one part of a streamed answer."""
    found: list[dict[str, Any] | str] = []
    for block in part.decode("utf-8").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if not data:
            continue
        text = "\n".join(data)
        try:
            value = json.loads(text)
        except ValueError:
            found.append(text)
            continue
        found.append(value if isinstance(value, dict) else text)
    return found


def _framed(part: bytes) -> bytes:
    """One part of a server-sent stream as event stream messages."""
    out = b""
    for event in _events(part):
        if isinstance(event, dict) and event.get("type") == "ping":
            continue  # Bedrock sends no pings
        if isinstance(event, dict) and event.get("type") == "error":
            found = event.get("error")
            error: dict[str, Any] = found if isinstance(found, dict) else {}
            kind = _STREAM_EXCEPTIONS.get(str(error.get("type")), "modelStreamErrorException")
            out += exception_message(kind, str(error.get("message", "")))
        else:
            out += chunk_message(event)
    return out


def _converse_framer() -> Callable[[bytes], bytes]:
    """Frames the parts of one streamed answer as Converse events (usage kept across parts)."""
    converter = converse_events()

    def frame(part: bytes) -> bytes:
        return b"".join(
            converter.convert(event) for event in _events(part) if isinstance(event, dict)
        )

    return frame


class FakeBedrockServer(FakeAnthropicServer):
    """A scripted Bedrock runtime on ``127.0.0.1`` (see the module); ``url`` is what an
    ``AnthropicBedrock`` client or a profile's ``endpoint`` takes."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default_text: str | None = "ok",
        default_usage: Mapping[str, int] | None = None,
        record: bool = True,
        expect_signed: bool = True,
    ) -> None:
        super().__init__(
            latency_s=latency_s,
            default_text=default_text,
            default_usage=default_usage,
            record=record,
        )
        self.expect_signed = expect_signed
        self._request_ids = itertools.count(1)

    def scripted(self, path: str) -> bool:
        """``/model/{id}/invoke``, ``/invoke-with-response-stream``, ``/converse`` and
        ``/converse-stream``."""
        return _INVOKE.match(path) is not None

    def _op(self, request: RecordedRequest) -> str | None:
        found = _INVOKE.match(request.path.split("?")[0])
        return None if found is None else found.group("op")

    def streams(self, request: RecordedRequest) -> bool:
        """A stream is asked for by the path (the body says nothing)."""
        return self._op(request) in _STREAM_OPS

    def deliver(self, request: RecordedRequest, answer: Answer) -> Answer:
        """Refuses an unsigned request; frames a streamed answer as an AWS event stream."""
        authorization = request.headers.get("authorization", "")
        if self.expect_signed and not authorization.startswith("AWS4-HMAC-SHA256 Credential="):
            return self._error(
                403, "MissingAuthenticationTokenException", "Missing Authentication Token"
            )
        converse = self._op(request) in _CONVERSE_OPS
        if converse and answer.parts is None and answer.status == 200 and answer.body:
            try:
                message = json.loads(answer.body)
            except ValueError:
                return answer  # a scripted malformed body goes out as it is
            if isinstance(message, dict) and message.get("type") == "message":
                return Answer.json(converse_body(message), 200, answer.headers)
            return answer
        media = answer.content_type.split(";")[0].strip().lower()
        if answer.parts is None or media != "text/event-stream":
            return answer
        frame = _converse_framer() if converse else _framed
        parts = tuple(
            (delay_s, data if data == RESET else frame(data)) for delay_s, data in answer.parts
        )
        return Answer(parts=parts, headers=answer.headers, content_type=_STREAM_TYPE)

    def _error(
        self, status: int, exception: str, message: str, headers: Mapping[str, str] | None = None
    ) -> Answer:
        named = {"x-amzn-ErrorType": exception + _ERROR_TYPE_SUFFIX, **(headers or {})}
        return Answer.json({"message": message}, status, named)

    def fail(
        self,
        status: int,
        *,
        body: Any = None,
        error_type: str | None = None,
        message: str = "scripted failure",
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
        exception: str | None = None,
    ) -> None:
        """Queue an error status as Bedrock sends one: ``{"message": ...}`` (or ``body``) with
        ``exception`` (default: the name Bedrock gives that status, :data:`EXCEPTIONS`) in the
        ``x-amzn-ErrorType`` header. ``error_type`` is accepted for the scripting Anthropic's
        fake shares and ignored: Bedrock names errors its own way."""
        name = exception or EXCEPTIONS.get(status)
        extra = dict(headers or {})
        if name is not None:
            extra["x-amzn-ErrorType"] = name + _ERROR_TYPE_SUFFIX
        self.reply_json(
            {"message": message} if body is None else body,
            status=status,
            headers=extra,
            delay_s=delay_s,
        )

    def response_headers(self) -> Mapping[str, str]:
        """A fresh ``x-amzn-RequestId`` on every answer."""
        return {"x-amzn-RequestId": f"bedrock-req-{next(self._request_ids)}"}
