"""The error of a stream that fails after its first text, for every provider: written once, used by
the shared reading loop (:func:`scriptorium.llm.streaming.drive`) and by a provider that reads its
stream another way (Bedrock's ``converse_stream``)."""

from __future__ import annotations

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.retry.http import Classify, as_failure, failure_error
from scriptorium.redaction import redact

__all__ = ["broken_stream"]


def broken_stream(
    err: BaseException,
    partial: str,
    *,
    provider: str,
    model: str,
    key: str,
    attempts: int,
    classify: Classify,
    secrets: tuple[str, ...] = (),
) -> LLMGenerateError:
    """The final error of a stream that failed after its first text (never retried): ``err``
    classified as a retry would have classified it, with the text handed out so far as
    ``partial_text`` and the key (and any other ``secrets`` the request carried, such as a
    route's signing credentials) redacted from the message."""
    failure = as_failure(err, classify)
    message = redact(
        f"{provider} {model}: {failure.reason} ({failure.message}) after the stream began",
        (key, *secrets),
    )
    return failure_error(
        failure,
        message,
        attempts=attempts,
        provider=provider,
        model=model,
        partial_text=partial,
    )
