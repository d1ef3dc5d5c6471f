"""The one rule of what a secret looks like when nobody said it was one: the shapes of pasted
credentials (provider key prefixes, AWS access key ids, bearer tokens, ...). ``check`` and the
loaders refuse such a value where a variable name belongs; every message that leaves scriptorium
through an entry point (the HTTP API, the MCP server) is scrubbed of them, beside the secrets a
request is known to carry (:func:`scriptorium.errors.redact`).

At the base of the package: it imports nothing of scriptorium, so the errors, the loaders, the
profile model and the entry points can all ask it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

__all__ = [
    "REDACTED",
    "SECRET_MIN_CHARS",
    "looks_like_secret",
    "public_message",
    "redact",
    "redact_secret_shapes",
]

#: What a scrubbed secret is replaced with.
REDACTED = "[redacted]"
#: The shortest value redaction treats as a secret. Shorter keys are placeholders (``EMPTY``,
#: ``none``, ``ollama``: what local servers document): used as given, but scrubbing them would
#: mangle every message that happens to hold the word (or a one-character "key"'s character).
SECRET_MIN_CHARS = 8

# Shapes of pasted credentials: provider key prefixes, bearer tokens, and long high-entropy runs.
_SECRET_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{10,}"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{20,}"),
)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each secret (of ``SECRET_MIN_CHARS`` or more) in ``text``."""
    for secret in secrets:
        if secret and len(secret) >= SECRET_MIN_CHARS:
            text = text.replace(secret, REDACTED)
    return text


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` looks like a credential pasted where a name or setting belongs."""
    return any(p.search(value) for p in _SECRET_PATTERNS)


def redact_secret_shapes(text: str) -> str:
    """``text`` with everything that looks like a credential replaced by ``[redacted]``."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def public_message(
    message: str, *, roots: Iterable[str] = (), secrets: Iterable[str | None] = ()
) -> str:
    """``message`` as a caller outside the process may see it (an HTTP or MCP client): the
    server's directories (``roots``, absolute) shown as ``.``, the ``secrets`` a request carried
    and anything shaped like a credential scrubbed."""
    for root in sorted(roots, key=len, reverse=True):
        if root and root != os.sep:
            message = message.replace(root, ".")
    return redact_secret_shapes(redact(message, secrets))
