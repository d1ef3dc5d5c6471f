"""Model answers that are not valid Unicode: lone surrogates.

JSON lets a server send ``"\\ud800"``, which decodes to a Python string that cannot be encoded as
UTF-8: hashing it, writing it to a file or serialising the result would fail after the tokens were
paid for. Every such code point in what a client returns (text, model, finish reason, metadata) and
in a parsed output value is replaced by U+FFFD here, and the run records a validation issue
(keyword :data:`KEYWORD`) so the damage is visible and the output is not taken as valid.
"""

from __future__ import annotations

import re
from typing import Any

from scriptorium.llm.model import LLMResponse
from scriptorium.validate.model import ValidationIssue, ValidationResult

__all__ = [
    "KEYWORD",
    "METADATA_KEY",
    "checked_verdict",
    "clean_response",
    "clean_value",
    "replace_surrogates",
]

#: The ``ValidationIssue.keyword`` of an answer that held lone surrogates.
KEYWORD = "encoding"
#: Where :func:`clean_response` notes how many code points it replaced.
METADATA_KEY = "replaced_surrogates"

_SURROGATE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def _valid(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many there were."""
    if _valid(text):
        return text, 0
    return _SURROGATE.subn(_REPLACEMENT, text)


def _any_invalid(value: Any) -> bool:
    """Whether any string in a JSON value (keys included) holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not _valid(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def clean_value(value: Any) -> tuple[Any, int]:
    """A JSON value with every string (keys included) cleaned; the same object when clean."""
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, list | tuple):
        items = [clean_value(item) for item in value]
        count = sum(n for _, n in items)
        return ([v for v, _ in items] if count else value), count
    if isinstance(value, dict):
        pairs = [(clean_value(k), clean_value(v)) for k, v in value.items()]
        count = sum(k[1] + v[1] for k, v in pairs)
        return ({k[0]: v[0] for k, v in pairs} if count else value), count
    return value, 0


def clean_response(response: LLMResponse) -> LLMResponse:
    """``response`` itself when every string in it is valid Unicode; else a copy with the lone
    surrogates replaced and their number in ``metadata[METADATA_KEY]``. Its reasoning is cleaned
    too but not counted there: reasoning is no part of the output, so it never makes one invalid."""
    reasoning = response.reasoning
    if reasoning is not None and not _valid(reasoning):
        response = response.model_copy(update={"reasoning": replace_surrogates(reasoning)[0]})
    if (
        _valid(response.text)
        and _valid(response.model)
        and _valid(response.finish_reason)
        and not _any_invalid(response.metadata)
    ):
        return response  # the common case: a few isascii() calls, nothing allocated
    text, n_text = replace_surrogates(response.text)
    model, n_model = replace_surrogates(response.model)
    finish, n_finish = replace_surrogates(response.finish_reason)
    metadata, n_meta = clean_value(response.metadata)
    metadata = {**metadata, METADATA_KEY: n_text + n_model + n_finish + n_meta}
    return response.model_copy(
        update={"text": text, "model": model, "finish_reason": finish, "metadata": metadata}
    )


def checked_verdict(verdict: ValidationResult, response: LLMResponse) -> ValidationResult:
    """``verdict`` for ``response``, made invalid with an :data:`KEYWORD` issue when the response
    held lone surrogates, or when the parsed value does (the text ``"\\ud800"`` is valid JSON
    that parses to one); the value is cleaned either way, so the result always serialises."""
    replaced = response.metadata.get(METADATA_KEY, 0) if response.metadata else 0
    value = verdict.value
    if value is not None and "\\u" in response.text:  # only escapes can make one in the value
        value, in_value = clean_value(value)
        replaced += in_value
    if not replaced:
        return verdict
    issue = ValidationIssue(
        message=f"the answer held {replaced} lone surrogate code point(s), not valid Unicode; "
        "each was replaced by U+FFFD",
        keyword=KEYWORD,
    )
    return verdict.model_copy(
        update={"valid": False, "value": value, "issues": (issue, *verdict.issues)}
    )
