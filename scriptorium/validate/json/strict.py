"""Strict and lenient JSON parsing of model output.

Both parsers return a :class:`ParseOutcome` and never raise, whatever the text: oversize input,
nesting deeper than ``max_depth``, non-finite numbers and syntax errors are issues in the outcome.

``parse_strict`` is ``json.loads`` plus those bounds. ``parse_lenient`` tries strict first, so valid
JSON passes through unchanged and with no fixes; otherwise :mod:`scriptorium.validate.json.lenient`
recovers the value the text unambiguously holds. How and why is written up in
``internal_docs/validation.md``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from scriptorium.validate.json.lenient import recover
from scriptorium.validate.json.outcome import ParseOutcome, failed
from scriptorium.validate.json.outcome import issue as _issue
from scriptorium.validate.json.readings import Budget
from scriptorium.validate.json.tolerant.cursor import MAX_DEPTH
from scriptorium.validate.model import ValidationIssue

__all__ = ["DEFAULT_MAX_CHARS", "parse_lenient", "parse_strict"]

#: Texts longer than this (in characters) are refused with keyword ``"size"``.
DEFAULT_MAX_CHARS = 4_000_000

_FINAL_KEYWORDS = frozenset({"size", "depth", "non_finite", "encoding"})
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_strict(
    text: str, *, max_chars: int = DEFAULT_MAX_CHARS, max_depth: int = MAX_DEPTH
) -> ParseOutcome:
    """``json.loads`` with bounds: never raises; failures are issues.

    Issue keywords: ``"size"`` (more than ``max_chars``), ``"parse"`` (not JSON), ``"truncated"``
    (the JSON stops mid-value), ``"depth"`` (nested deeper than ``max_depth``), ``"non_finite"``
    (``NaN``, ``Infinity`` or a float overflowing to infinity), ``"encoding"`` (a lone surrogate
    escape, which no UTF-8 consumer downstream could encode).
    """
    ok, value, issue = _load_strict(text, max_chars, max_depth)
    if ok:
        return ParseOutcome(True, value, "strict")
    return ParseOutcome(False, None, "strict", issues=(issue,))  # type: ignore[arg-type]


def parse_lenient(
    text: str,
    *,
    schema_check: Callable[[Any], bool] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_depth: int = MAX_DEPTH,
) -> ParseOutcome:
    """Recover the JSON value a model meant, when that is unambiguous; never raises.

    Strict JSON passes through unchanged, with no fixes and mode ``"strict"``. Otherwise a fix is
    applied when every plausible reading of the text gives the same value; when readings differ,
    only if ``schema_check`` accepts exactly one of them; else the outcome is invalid with keyword
    ``"ambiguous"`` or ``"parse"``. Reasoning blocks are skipped; among several candidate values,
    one needing no fix beats those needing fixes, a complete value after a broken one wins, and
    ``schema_check`` decides among the rest. A value cut off at the end is never closed up
    (``"truncated"``). Each fix is named in ``fixes``. Work is linear in the text's length.
    Exceptions raised by ``schema_check`` itself propagate.
    """
    ok, value, problem = _load_strict(text, max_chars, max_depth)
    if ok:
        return ParseOutcome(True, value, "strict")
    assert problem is not None
    if problem.keyword in _FINAL_KEYWORDS or not isinstance(text, str):
        # The text is JSON with a problem no repair may hide (or is too big to look at).
        return failed(problem)
    return recover(text, schema_check=schema_check, max_depth=max_depth, budget=Budget(len(text)))


# -- strict -------------------------------------------------------------------------------------


class _NonFinite(Exception):
    """Raised from json's hooks to stop at the first non-finite number."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if number in (float("inf"), float("-inf")):
        raise _NonFinite(f"number {literal[:40]} is out of the float range")
    return number


_local = threading.local()


def _decoder() -> json.JSONDecoder:
    # ``json.loads`` with hooks builds a new decoder (and its C scanner) on every call; one per
    # thread is kept instead (the scanner's key memo is not meant to be shared between threads).
    decoder: json.JSONDecoder | None = getattr(_local, "decoder", None)
    if decoder is None:
        decoder = _local.decoder = json.JSONDecoder(
            parse_constant=_refuse_constant, parse_float=_finite_float
        )
    return decoder


def _load_strict(
    text: str, max_chars: int, max_depth: int
) -> tuple[bool, Any, ValidationIssue | None]:
    if not isinstance(text, str):
        return False, None, _issue("parse", f"output is {type(text).__name__}, not text")
    if len(text) > max_chars:
        return False, None, _issue("size", f"output has {len(text)} characters; limit {max_chars}")
    try:
        value = _decoder().decode(text)
    except _NonFinite as err:
        return False, None, _issue("non_finite", str(err))
    except json.JSONDecodeError as err:
        if not text.strip():
            return False, None, _issue("parse", "empty output")
        at_end = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        where = f"line {err.lineno} column {err.colno}"
        return False, None, _issue("truncated" if at_end else "parse", f"{err.msg} ({where})")
    except RecursionError:
        return False, None, _issue("depth", f"nesting deeper than {max_depth} levels")
    except ValueError as err:  # e.g. an integer longer than int() converts by default
        return False, None, _issue("parse", f"invalid number: {err}")
    # Counting brackets is an upper bound on depth that costs almost nothing; walk only past it.
    if text.count("[") + text.count("{") > max_depth and _too_deep(value, max_depth):
        return False, None, _issue("depth", f"nesting deeper than {max_depth} levels")
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and not _encodable(value):
        return False, None, _issue("encoding", "lone surrogate escape (not encodable as UTF-8)")
    return True, value, None


def _too_deep(value: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
