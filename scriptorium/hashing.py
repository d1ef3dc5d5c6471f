"""Canonical JSON and the ``sha256:`` digests every hash of scriptorium uses."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = [
    "PREFIX",
    "REQUEST_HASH_VERSION",
    "canonical_json",
    "hash_bytes",
    "hash_json",
    "hash_text",
]

PREFIX = "sha256:"

#: The form of ``request_hash``, written next to every stored hash (replay cassettes, batch
#: results) so a file made under another form is recognised instead of silently missing.
#: 1: the target's endpoint was part of the hash. 2: it is not (the same request through another
#: proxy or a recording server is the same request).
REQUEST_HASH_VERSION = 2


# One encoder for every call: ``json.dumps`` with non-default options builds a new one each time.
# JSONEncoder keeps no state between ``encode`` calls, so sharing it across threads is safe.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(obj: Any) -> bytes:
    """The one byte form hashed everywhere: sorted keys, no spaces, UTF-8, non-ASCII kept as is.

    Non-finite floats are refused (``ValueError``): they have no JSON form, so no stable hash.
    """
    return _ENCODER.encode(obj).encode("utf-8")


def hash_bytes(data: bytes) -> str:
    """``sha256:<hex>`` of raw bytes (artifacts, template sources)."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def hash_text(text: str) -> str:
    """``sha256:<hex>`` of a string's UTF-8 bytes (model outputs)."""
    return hash_bytes(text.encode("utf-8"))


def hash_json(obj: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``obj``."""
    return hash_bytes(canonical_json(obj))
