"""Bedrock's streamed answers: the AWS event stream framing, read into the Messages API events the
anthropic adapter folds (:class:`BedrockEvents`, an :class:`~scriptorium.llm.streaming.EventReader`).

``InvokeModelWithResponseStream`` answers with ``application/vnd.amazon.eventstream``, not
server-sent events. Each message of that framing is:

- a 12-byte prelude: the message's total length and its headers' length (big-endian 32-bit
  unsigned integers), then the CRC-32 of those 8 bytes;
- the headers: each a 1-byte name length, the name (UTF-8), a 1-byte value type and the value
  (types 0/1 are true/false with no bytes, 2/3/4/5 signed integers of 1/2/4/8 bytes, 6 and 7 a
  2-byte length then bytes or UTF-8 text, 8 an 8-byte timestamp, 9 a 16-byte UUID);
- the payload (what is left of the total length);
- the CRC-32 of everything before it.

A message whose ``:message-type`` is ``event`` and ``:event-type`` ``chunk`` carries
``{"bytes": <base64>}``: the base64 of one Messages API stream event (``message_start``,
``content_block_delta``, ...), exactly as Anthropic's own API would send it as an SSE ``data``.
A message of type ``exception`` (``:exception-type`` ``throttlingException``, ...) or ``error``
(``:error-code``) is the server's failure: read here as an ``error`` event naming that type, so
the adapter's one classifier decides what it stands for.

A frame that does not add up (a CRC that does not match, a length out of bounds, a header of an
unknown type) is ``invalid_response``: a corrupt stream, never a guess.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from typing import Any

from scriptorium.errors import LLMGenerateError

__all__ = ["EVENT_STREAM_TYPE", "MAX_MESSAGE_BYTES", "BedrockEvents", "Message", "MessageDecoder"]

#: The content type of an AWS event stream.
EVENT_STREAM_TYPE = "application/vnd.amazon.eventstream"

#: The longest message accepted; more is a broken stream, not something to buffer without bound.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_PRELUDE = 12
_MINIMUM = _PRELUDE + 4
_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", retryable=False, http_status=200)


class Message:
    """One event stream message: its headers (name -> value) and payload."""

    __slots__ = ("headers", "payload")

    def __init__(self, headers: dict[str, Any], payload: bytes) -> None:
        self.headers = headers
        self.payload = payload


def _headers(raw: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    at, end = 0, len(raw)
    try:
        while at < end:
            size = raw[at]
            name = raw[at + 1 : at + 1 + size].decode("utf-8")
            at += 1 + size
            kind = raw[at]
            at += 1
            value: Any
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                fmt = _FIXED[kind]
                width = struct.calcsize(fmt)
                (value,) = struct.unpack_from(fmt, raw, at)
                at += width
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", raw, at)
                data = raw[at + 2 : at + 2 + length]
                if len(data) != length:
                    raise _invalid("an event stream header is cut short")
                value = data.decode("utf-8") if kind == 7 else data
                at += 2 + length
            elif kind == 9:
                value = raw[at : at + 16]
                at += 16
            else:
                raise _invalid(f"an event stream header has an unknown value type ({kind})")
            if at > end:
                raise _invalid("an event stream header is cut short")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as err:
        raise _invalid("an event stream header does not parse") from err
    return headers


class MessageDecoder:
    """Event stream messages from a body's bytes as they arrive (see the module)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Message]:
        """The messages completed by ``chunk``; ``invalid_response`` for a corrupt one."""
        buffer = self._buffer + chunk
        messages: list[Message] = []
        at = 0
        while len(buffer) - at >= _PRELUDE:
            total, header_length, prelude_crc = struct.unpack_from(">III", buffer, at)
            if zlib.crc32(buffer[at : at + 8]) != prelude_crc:
                raise _invalid("an event stream message's prelude fails its CRC")
            if total < _MINIMUM or total > MAX_MESSAGE_BYTES or header_length > total - _MINIMUM:
                raise _invalid("an event stream message has an impossible length")
            if len(buffer) - at < total:
                break
            frame = buffer[at : at + total]
            (message_crc,) = struct.unpack_from(">I", frame, total - 4)
            if zlib.crc32(frame[:-4]) != message_crc:
                raise _invalid("an event stream message fails its CRC")
            headers = _headers(frame[_PRELUDE : _PRELUDE + header_length])
            messages.append(Message(headers, frame[_PRELUDE + header_length : -4]))
            at += total
        self._buffer = buffer[at:]
        return messages

    def pending(self) -> int:
        """Bytes held of a message not yet complete."""
        return len(self._buffer)


def _error(kind: str, message: str) -> tuple[str | None, str]:
    data = {"type": "error", "error": {"type": kind, "message": message}}
    return "error", json.dumps(data, ensure_ascii=False)


def _message_text(payload: bytes) -> str:
    try:
        value = json.loads(payload) if payload else {}
    except (ValueError, UnicodeDecodeError):
        return payload.decode("utf-8", "replace")[:300]
    found = value.get("message") or value.get("Message") if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


class BedrockEvents:
    """The Messages API events inside a Bedrock event stream, as the shared streaming loop reads
    events: ``(name, data)`` with ``data`` the event's JSON text."""

    __slots__ = ("_decoder",)

    def __init__(self) -> None:
        self._decoder = MessageDecoder()

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        events: list[tuple[str | None, str]] = []
        for message in self._decoder.feed(chunk):
            event = self._event(message)
            if event is not None:
                events.append(event)
        return events

    def end(self) -> list[tuple[str | None, str]]:
        """Nothing: a message cut off by the end of the body is never read (the stream then ends
        without its terminator, which the loop reports)."""
        return []

    def _event(self, message: Message) -> tuple[str | None, str] | None:
        headers = message.headers
        kind = headers.get(":message-type")
        if kind == "exception":
            name = headers.get(":exception-type")
            return _error(str(name or "exception"), _message_text(message.payload))
        if kind == "error":
            code = headers.get(":error-code")
            text = headers.get(":error-message")
            return _error(str(code or "error"), str(text or ""))
        if kind != "event" or headers.get(":event-type") != "chunk":
            return None  # an event type this adapter does not read (none carries text)
        try:
            wrapper = json.loads(message.payload)
            raw = base64.b64decode(wrapper["bytes"], validate=True)
            data = raw.decode("utf-8")
        except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as err:
            raise _invalid("a Bedrock stream chunk is not base64 JSON") from err
        # The event names itself by its "type" (the fold reads it there): no name of its own.
        return None, data
