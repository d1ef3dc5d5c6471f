"""Media at the LLM boundary, provider-free: the shape of a provider's media rules
(:mod:`.limits`), checking a request against them before any call (:mod:`.check`), and getting the
bytes onto the wire as base64 without holding them twice (:mod:`.wire`).

Each provider's own limits live in its package (its spec's ``media`` rule).
"""

from __future__ import annotations

from scriptorium.llm.media.check import check_media, encoded_size, media_bytes
from scriptorium.llm.media.limits import MediaLimits, base64_length

__all__ = [
    "MediaLimits",
    "base64_length",
    "check_media",
    "encoded_size",
    "media_bytes",
]
