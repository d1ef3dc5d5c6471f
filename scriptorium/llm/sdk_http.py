"""What every SDK adapter shares to send prebuilt JSON: one body encoder, and the HTTP library
the SDK is built on."""

from __future__ import annotations

import importlib
import json
from typing import Any

__all__ = ["encode_body", "http_module"]

# One encoder for every body: json.dumps with options builds a new encoder per call. ASCII output:
# a lone surrogate in an input cannot make the body unencodable.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as the JSON bytes posted (compact; ``NaN`` and infinities refused with
    ``ValueError``, as the APIs would refuse them)."""
    return _ENCODER.encode(body).encode("ascii")


def http_module(sdk: Any) -> Any:
    """The HTTP library the SDK module is built on (``httpx2`` for the 2.x/3.x SDKs, ``httpx``
    before): its ``Response`` as ``cast_to`` makes the SDK's ``post`` hand back the HTTP response
    itself, unparsed."""
    base = importlib.import_module(f"{sdk.__name__}._base_client")
    return getattr(base, "httpx2", None) or base.httpx
