"""Strict and lenient JSON parsing of model output.

Both parsers return a :class:`ParseOutcome` and never raise, whatever the text: oversize input,
nesting deeper than ``max_depth``, non-finite numbers and syntax errors are issues in the outcome.

``parse_strict`` is ``json.loads`` plus those bounds. ``parse_lenient`` tries strict first, so valid
JSON passes through unchanged and with no fixes. Otherwise it reads the whole text with the tolerant
reader (:mod:`scriptorium.validate.tolerant`); failing that, it collects candidate values from code
fences and from the prose around them and picks one (see :func:`parse_lenient` for the rule). How and
why is written up in ``internal_docs/validation.md``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from scriptorium.validate.model import ValidationIssue
from scriptorium.validate.tolerant import MAX_DEPTH, Reader, ReadError

__all__ = ["DEFAULT_MAX_CHARS", "MAX_DEPTH", "ParseOutcome", "parse_lenient", "parse_strict"]

#: Texts longer than this (in characters) are refused with keyword ``"size"``.
DEFAULT_MAX_CHARS = 4_000_000

_FINAL_KEYWORDS = frozenset({"size", "depth", "non_finite", "encoding"})
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_FENCE_OPEN = re.compile(r"^[ \t]*```[ \t]*(?:[A-Za-z][\w+.-]*)?", re.MULTILINE)
_FENCE_CLOSE = re.compile(r"^[ \t]*```|```[ \t]*$", re.MULTILINE)
_FENCE_MARK = re.compile(r"```[\w+.-]*")
_OPENERS = re.compile(r"[{\[]")


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """What a parser made of a text: ``value`` when ``ok``, else ``issues`` saying why not.

    ``fixes`` names what the lenient parser had to change (empty for valid JSON). ``mode`` says how
    the value was obtained: ``"strict"`` when the text was valid JSON (also under
    :func:`parse_lenient`), ``"lenient"`` when recovery was needed or attempted and failed.
    """

    ok: bool
    value: Any = None
    mode: Literal["strict", "lenient"] = "strict"
    fixes: tuple[str, ...] = ()
    issues: tuple[ValidationIssue, ...] = ()


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

    Order: (1) strict JSON passes through unchanged, no fixes, mode ``"strict"``; (2) the whole text as one tolerant
    value; (3) candidates — the content of each code fence, and each ``{...}``/``[...]`` found in the
    prose around them. Then: candidates that needed no syntax fix beat those that did; among what
    remains, values equal as JSON count once; if several differ and ``schema_check`` is given, those
    it accepts are kept (when it accepts none, all stay); more than one value left is keyword
    ``"ambiguous"``. A value cut off at the end of the text is never closed up (``"truncated"``),
    and a broken value that reads like JSON fails the whole text (``"parse"``), since it may be the
    real answer hiding behind a decoy. Exceptions raised by ``schema_check`` itself propagate.
    """
    ok, value, issue = _load_strict(text, max_chars, max_depth)
    if ok:
        return ParseOutcome(True, value, "strict")
    assert issue is not None
    if issue.keyword in _FINAL_KEYWORDS or not isinstance(text, str):
        # The text is JSON with a problem no repair may hide (or is too big to look at).
        return _failed(issue)
    prefix: list[str] = []
    if text.startswith("\ufeff"):
        text = text[1:]
        prefix.append("stripped_bom")
    whole = Reader(text, max_depth=max_depth)
    try:
        value = whole.read_document()
    except ReadError as err:
        first_error = err
    else:
        return ParseOutcome(True, value, "lenient", _merge(prefix, whole.fixes))
    candidates, failure = _collect(text, max_depth)
    if failure is not None:
        return _failed(failure)
    if not candidates:
        if not text.strip():
            return _failed(_issue("parse", "empty output"))
        if first_error.keyword == "parse":
            detail = f"{first_error.message} at offset {first_error.pos}"
            return _failed(_issue("parse", f"no JSON value found in the text ({detail})"))
        return _failed(_issue(first_error.keyword, first_error.message))
    return _select(candidates, prefix, schema_check)


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


# -- candidates ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    value: Any
    offset: int
    where: tuple[str, ...]  # location fixes: stripped_code_fence, extracted_from_prose
    syntax: tuple[str, ...]  # fixes the tolerant reader needed


@dataclass(frozen=True, slots=True)
class _Region:
    start: int
    end: int
    fenced: bool


def _regions(text: str) -> list[_Region]:
    """Split the text into prose and code-fence contents (an unclosed fence runs to the end)."""
    regions: list[_Region] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            break
        if opening.start() > pos:
            regions.append(_Region(pos, opening.start(), fenced=False))
        closing = _FENCE_CLOSE.search(text, opening.end())
        if closing is None:
            regions.append(_Region(opening.end(), len(text), fenced=True))
            return regions
        regions.append(_Region(opening.end(), closing.start(), fenced=True))
        pos = text.index("```", closing.start()) + 3
    if pos < len(text):
        regions.append(_Region(pos, len(text), fenced=False))
    return regions


def _collect(text: str, max_depth: int) -> tuple[list[_Candidate], ValidationIssue | None]:
    """Every candidate value in the text, or the issue that makes the text unusable."""
    regions = _regions(text)
    candidates: list[_Candidate] = []
    for region in regions:
        body = text[region.start : region.end]
        at_text_end = region.end == len(text)
        if region.fenced:
            reader = Reader(body, max_depth=max_depth)
            try:
                value = reader.read_document()
            except ReadError as err:
                if err.keyword == "truncated" and body.strip():
                    return candidates, _located(err, region.start, "in a code block")
            else:
                outside = text[: region.start] + text[region.end :]
                prose = _FENCE_MARK.sub("", outside).strip() != ""
                where = ("stripped_code_fence",) + (("extracted_from_prose",) if prose else ())
                candidates.append(_Candidate(value, region.start, where, tuple(reader.fixes)))
                continue
        where = ("stripped_code_fence",) if region.fenced else ()
        failure = _scan_prose(body, region.start, at_text_end, where, max_depth, candidates)
        if failure is not None:
            return candidates, failure
    return candidates, None


def _scan_prose(
    body: str,
    offset: int,
    at_text_end: bool,
    where: tuple[str, ...],
    max_depth: int,
    into: list[_Candidate],
) -> ValidationIssue | None:
    """Append the ``{...}``/``[...]`` values found in ``body``; return an issue if one is broken.

    Every step moves forward: past a value read, past the bracketed span of a prose bracket
    (``[see below]``), or stops at a broken value that reads like JSON. So the scan is linear.
    """
    reader = Reader(body, max_depth=max_depth)
    where = (*where, "extracted_from_prose")
    pos = 0
    while True:
        found = _OPENERS.search(body, pos)
        if found is None:
            return None
        start = found.start()
        reader.fixes = []
        try:
            value, pos = reader.read_value(start)
        except ReadError as err:
            jsonish = reader.first_item_looks_like_json(start + 1, body[start])
            if err.keyword == "truncated" and at_text_end:
                return _located(err, offset, "")
            if jsonish:
                return _located(err, offset, "in a value that reads like JSON")
            # Prose brackets: skip the whole bracketed span, so nothing inside it — perhaps part
            # of a broken value — is taken for an answer.
            pos = _span_end(body, start)
            continue
        into.append(_Candidate(value, offset + start, where, tuple(reader.fixes)))


def _span_end(body: str, start: int) -> int:
    """The offset past the bracket closing the one at ``start`` (double-quoted strings skipped),
    or the end of ``body`` when it never closes."""
    depth = 0
    pos = start
    end = len(body)
    while pos < end:
        char = body[pos]
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos + 1
        elif char == '"':
            pos += 1
            while pos < end and body[pos] != '"':
                pos += 2 if body[pos] == "\\" else 1
        pos += 1
    return end


def _select(
    candidates: list[_Candidate],
    prefix: list[str],
    schema_check: Callable[[Any], bool] | None,
) -> ParseOutcome:
    clean = [c for c in candidates if not c.syntax]
    distinct: dict[str, _Candidate] = {}
    for candidate in clean or candidates:
        key = json.dumps(candidate.value, sort_keys=True, ensure_ascii=False)
        distinct.setdefault(key, candidate)
    remaining = list(distinct.values())
    if len(remaining) > 1 and schema_check is not None:
        accepted = [c for c in remaining if schema_check(c.value)]
        remaining = accepted or remaining
    if len(remaining) == 1:
        chosen = remaining[0]
        return ParseOutcome(
            True, chosen.value, "lenient", _merge([*prefix, *chosen.where], chosen.syntax)
        )
    offsets = ", ".join(str(c.offset) for c in remaining[:5])
    message = f"{len(remaining)} different JSON values (at offsets {offsets}); cannot tell which"
    return _failed(_issue("ambiguous", message + " is the answer"))


# -- helpers ------------------------------------------------------------------------------------


def _merge(first: list[str], second: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *second]))


def _issue(keyword: str, message: str) -> ValidationIssue:
    return ValidationIssue(path="", message=message, keyword=keyword)


def _located(err: ReadError, offset: int, context: str) -> ValidationIssue:
    where = f" {context}" if context else ""
    return _issue(err.keyword, f"{err.message} at offset {offset + err.pos}{where}")


def _failed(issue: ValidationIssue) -> ParseOutcome:
    return ParseOutcome(False, None, "lenient", issues=(issue,))
