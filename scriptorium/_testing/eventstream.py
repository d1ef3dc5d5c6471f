"""The AWS event stream framing, written: what ``FakeBedrockServer`` streams its answers in.

One message is a 12-byte prelude (total length, headers length, both big-endian unsigned 32-bit
integers, then the CRC-32 of those 8 bytes), the headers, the payload, and the CRC-32 of all that
precedes it. A header is a 1-byte name length, the name, a 1-byte value type and the value; the
fake writes strings (type 7: a 2-byte length, then UTF-8), the only kind Bedrock's stream uses.
Written here from that description, independently of the adapter's reader
(:mod:`scriptorium.llm.anthropic.eventstream`), so each checks the other.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["chunk_message", "encode_message", "exception_message"]


def _header(name: str, value: str) -> bytes:
    raw_name = name.encode("utf-8")
    raw_value = value.encode("utf-8")
    return (
        struct.pack(">B", len(raw_name))
        + raw_name
        + b"\x07"
        + struct.pack(">H", len(raw_value))
        + raw_value
    )


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event stream message with string ``headers`` and ``payload``."""
    raw_headers = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + payload
    return head + struct.pack(">I", zlib.crc32(head))


def chunk_message(event: Any) -> bytes:
    """A ``chunk`` event carrying one Messages API stream event (a dict, or its JSON text), as
    Bedrock wraps it: ``{"bytes": <base64 of the event's JSON>}``."""
    text = event if isinstance(event, str) else json.dumps(event, separators=(",", ":"))
    wrapped = {"bytes": base64.b64encode(text.encode("utf-8")).decode("ascii")}
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(wrapped).encode("utf-8"))


def exception_message(exception_type: str, message: str) -> bytes:
    """An ``exception`` message (``throttlingException``, ``internalServerException``, ...)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode("utf-8"))
