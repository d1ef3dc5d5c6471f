"""Media at the LLM boundary, provider-free: the shape of a provider's media rules
(:mod:`.limits`), checking a request against them before any call (:mod:`.check`), and getting the
bytes onto the wire as base64 without holding them twice (:mod:`.wire`).

Each provider's own limits live in its package (its spec's ``media`` rule). ``ANTHROPIC_LIMITS``,
``OPENAI_LIMITS``, ``openai_limits`` and ``MEDIA_OPTION_VALUES`` are still importable from here
for one release; they are loaded from the provider packages on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.llm.media.check import check_media, encoded_size, limits_for, media_bytes
from scriptorium.llm.media.limits import MediaLimits, base64_length

if TYPE_CHECKING:
    from scriptorium.llm.anthropic.api import MEDIA_LIMITS as ANTHROPIC_LIMITS
    from scriptorium.llm.openai.api import MEDIA_LIMITS as OPENAI_LIMITS
    from scriptorium.llm.openai.api import MEDIA_OPTION_VALUES, openai_limits

__all__ = [
    "ANTHROPIC_LIMITS",
    "MEDIA_OPTION_VALUES",
    "OPENAI_LIMITS",
    "MediaLimits",
    "base64_length",
    "check_media",
    "encoded_size",
    "limits_for",
    "media_bytes",
    "openai_limits",
]


def __getattr__(name: str) -> Any:
    # Kept for one release: each provider's media limits now live in its package.
    if name == "ANTHROPIC_LIMITS":
        from scriptorium.llm.anthropic.api import MEDIA_LIMITS

        return MEDIA_LIMITS
    if name in ("OPENAI_LIMITS", "MEDIA_OPTION_VALUES", "openai_limits"):
        import scriptorium.llm.openai.api as api

        return getattr(api, "MEDIA_LIMITS" if name == "OPENAI_LIMITS" else name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
