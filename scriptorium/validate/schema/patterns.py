"""Schema ``pattern`` matching that cannot take exponential time.

A prompt author's ``pattern: '^(a+)+$'`` makes a backtracking engine (Python's ``re``, which
``jsonschema`` uses) run for hours on 33 characters; outputs and inputs are attacker-controlled
text, so every pattern a schema holds (``pattern``, the keys of ``patternProperties``, and what
``additionalProperties`` / ``unevaluatedProperties`` derive from them) is matched here instead:

1. with RE2 (extra ``re2``: ``google-re2``), linear in the text, when the pattern is one RE2 takes
   (``\\uXXXX`` escapes are translated; lookarounds and backreferences are not RE2);
2. else with ``re`` when the pattern cannot backtrack exponentially: no repetition of a body
   that can take one text in several ways (:func:`backtracking_safe`); ordinary patterns such as
   ``^\\S+@\\S+$`` or ``^[A-Z]+-[0-9]+$`` need no extra;
3. else not at all: the schema is refused when it is loaded (``ValidationError`` saying why), the
   one verdict that cannot hang.

:func:`search` is what the validator calls; :func:`check` is what schema loading calls.
"""

from __future__ import annotations

import functools
import importlib
import re
import threading
from collections.abc import Callable, Iterator
from types import FunctionType
from typing import Any

from scriptorium._version import install_hint

__all__ = [
    "SafeRe",
    "UnsafePattern",
    "backtracking_safe",
    "check",
    "pattern_strings",
    "safe_keywords",
    "search",
    "uses_re2",
]

_Matcher = Callable[[str], Any]
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
# Lookarounds and backreferences: no linear-time engine matches them, so no reasoning here either.
_OPAQUE = ("ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS", "ATOMIC_GROUP")
_UNICODE_ESCAPE = re.compile(r"\\(\\)|\\u([0-9A-Fa-f]{4})")


class UnsafePattern(ValueError):
    """A pattern no available engine can match in linear time (the message says what to do)."""


def _re2() -> Any:
    try:
        import re2
    except ImportError:
        return None
    return re2


@functools.cache
def uses_re2() -> bool:
    """Whether the RE2 engine (extra ``re2``) is installed."""
    return _re2() is not None


def _to_re2(pattern: str) -> str:
    # ECMA-262 (what JSON Schema patterns are) writes code points as \uXXXX; RE2 as \x{XXXX}.
    return _UNICODE_ESCAPE.sub(
        lambda m: m.group(0) if m.group(1) else f"\\x{{{m.group(2)}}}", pattern
    )


def _re2_matcher(pattern: str) -> _Matcher | None:
    re2 = _re2()
    if re2 is None:
        return None
    options = re2.Options()
    options.log_errors = False  # a pattern RE2 does not take is expected, not worth a log line
    try:
        compiled = re2.compile(_to_re2(pattern), options)
    except Exception:  # re2.error: syntax RE2 does not have
        return None
    search: _Matcher = compiled.search
    return search


# --- what can make ``re`` backtrack exponentially -------------------------------------------------
#
# A backtracking engine blows up when one piece of text can be matched in exponentially many ways:
# a repetition whose body can itself take the same text in more than one way (``(a+)+``,
# ``(\w+\s?)*``, ``(a|ab)*``). Everything else (``^\S+@\S+$``, ``"label"\s*:\s*"positive"``,
# ``^[A-Z]+-[0-9]+$``) is at worst polynomial and accepted. Characters are compared on a sample
# alphabet (ASCII and a few others): enough to tell ``[a-z]`` from ``\.``, and when in doubt a
# class counts as overlapping, so the judgement errs on the refusing side.

_SAMPLE = frozenset(chr(c) for c in range(128)) | frozenset(
    "\u00e9\u00a0\u0660\u2003\u4e2d\U0001f600"
)
_CATEGORY_TEXT = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
_SINGLE = ("LITERAL", "NOT_LITERAL", "ANY", "IN")


@functools.cache
def _category(name: str) -> frozenset[str]:
    text = _CATEGORY_TEXT.get(name)
    if text is None:
        return _SAMPLE
    return frozenset(c for c in _SAMPLE if re.fullmatch(text, c))


def _single_chars(name: str, arg: Any) -> frozenset[str]:
    """The sample characters one single-character item matches."""
    if name == "LITERAL":
        return frozenset({chr(arg)})
    if name == "NOT_LITERAL":
        return _SAMPLE - {chr(arg)}
    if name == "ANY":
        return _SAMPLE
    chars: set[str] = set()
    negate = False
    for op, value in arg:  # IN
        kind = str(op)
        if kind == "NEGATE":
            negate = True
        elif kind == "LITERAL":
            chars.add(chr(value))
        elif kind == "RANGE":
            chars.update(c for c in _SAMPLE if value[0] <= ord(c) <= value[1])
        elif kind == "CATEGORY":
            chars.update(_category(str(value)))
        else:
            return _SAMPLE
    return _SAMPLE - chars if negate else frozenset(chars)


def _all_chars(items: Any) -> frozenset[str]:
    """Every sample character some part of ``items`` can consume."""
    found: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name in _SINGLE:
            found |= _single_chars(name, arg)
        elif name in _REPEATS:
            found |= _all_chars(arg[2])
        elif name == "SUBPATTERN":
            found |= _all_chars(arg[-1])
        elif name == "BRANCH":
            for alternative in arg[1]:
                found |= _all_chars(alternative)
        elif name in _OPAQUE:
            return _SAMPLE
    return frozenset(found)


def _first_chars(items: Any) -> frozenset[str] | None:
    """The sample characters ``items`` can start with; None when it can match empty text."""
    found: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name in _SINGLE:
            return frozenset(found | _single_chars(name, arg))
        if name in _REPEATS or name == "SUBPATTERN" or name == "BRANCH":
            parts = [arg[2]] if name in _REPEATS else [arg[-1]] if name == "SUBPATTERN" else arg[1]
            empty = name in _REPEATS and arg[0] == 0
            for part in parts:
                first = _first_chars(part)
                if first is None:
                    empty = True
                else:
                    found |= first
            if not empty:
                return frozenset(found)
        elif name in _OPAQUE:
            return _SAMPLE
    return None


def _variable(name: str, arg: Any) -> bool:
    return name in _REPEATS and arg[0] != arg[1]


def _flat(items: Any) -> Iterator[tuple[str, Any]]:
    """``items`` with every group opened: a group's parts are parts of the sequence."""
    for op, arg in items:
        name = str(op)
        if name == "SUBPATTERN":
            yield from _flat(arg[-1])
        else:
            yield name, arg


def _ambiguous_body(items: Any) -> bool:
    """Whether a repeated body could take one text in several ways: it holds a variable
    repetition and no required single character outside every such repetition that none of them
    can consume; or it holds an alternation whose branches can start alike."""
    inner: set[str] = set()
    required: list[frozenset[str]] = []
    has_inner = False
    for name, arg in _flat(items):
        if name in _REPEATS:
            if _variable(name, arg) or _ambiguous_body(arg[2]) or _has_variable(arg[2]):
                has_inner = True
                inner |= _all_chars(arg[2])
            else:  # a fixed count of a fixed body
                required.append(_all_chars(arg[2]))
        elif name in _SINGLE:
            required.append(_single_chars(name, arg))
        elif name == "BRANCH":
            if _branches_overlap(arg[1]):
                return True
            for alternative in arg[1]:
                if _has_variable(alternative):
                    has_inner = True
                    inner |= _all_chars(alternative)
        elif name in _OPAQUE:
            return True
    if not has_inner:
        return False
    return not any(chars and not (chars & inner) for chars in required)


def _has_variable(items: Any) -> bool:
    return any(
        _variable(name, arg)
        or (name == "SUBPATTERN" and _has_variable(arg[-1]))
        or (name == "BRANCH" and any(_has_variable(a) for a in arg[1]))
        or (name in _REPEATS and _has_variable(arg[2]))
        for name, arg in ((str(op), arg) for op, arg in items)
    )


def _branches_overlap(alternatives: Any) -> bool:
    seen: set[str] = set()
    for alternative in alternatives:
        first = _first_chars(alternative)
        if first is None or first & seen:
            return True
        seen |= first
    return False


def _catastrophic(items: Any) -> bool:
    """Whether some repetition in ``items`` (however deep) repeats an ambiguous body, or two
    unbounded runs of overlapping character classes follow each other directly."""
    previous: frozenset[str] | None = None
    for op, arg in items:
        name = str(op)
        chars: frozenset[str] | None = None
        parts: list[Any] = []
        if name in _REPEATS:
            if (arg[1] > 1 and _ambiguous_body(arg[2])) or _catastrophic(arg[2]):
                return True
            body = list(_flat(arg[2]))
            if arg[1] == _MAXREPEAT and len(body) == 1 and body[0][0] in _SINGLE:
                # Two unbounded runs of one character class side by side (\d*\d*).
                chars = _single_chars(*body[0])
                if previous is not None and chars & previous:
                    return True
        elif name == "SUBPATTERN":
            parts = [arg[-1]]
        elif name == "BRANCH":
            parts = list(arg[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            parts = [arg[1]]
        if name not in _REPEATS and any(_catastrophic(part) for part in parts):
            return True
        previous = chars
    return False


def _parse(pattern: str) -> Any:
    # The stdlib's own regex parser (private, so reached by name: typeshed versions differ on
    # whether they describe it).
    parser: Any = importlib.import_module("re._parser")
    return parser.parse(pattern)


_MAXREPEAT: Any = importlib.import_module("re._constants").MAXREPEAT


def backtracking_safe(pattern: str) -> bool:
    """Whether ``re`` can match ``pattern`` without exponential backtracking: no repetition of a
    body that can take one text in several ways (nested repetitions with no separator they cannot
    consume, alternatives that start alike, backreferences), and no two overlapping variable
    repetitions side by side. Sequences of ordinary repetitions are accepted."""
    try:
        parsed = _parse(pattern)
    except Exception:
        return False
    if any(str(op) in ("GROUPREF", "GROUPREF_EXISTS") for op, _ in parsed):
        return False
    return not _catastrophic(parsed)


@functools.lru_cache(maxsize=1024)
def _matcher(pattern: str) -> _Matcher:
    matcher = _re2_matcher(pattern)
    if matcher is not None:
        return matcher
    if backtracking_safe(pattern):
        return re.compile(pattern).search
    if uses_re2():
        raise UnsafePattern(
            "uses lookaround or backreferences, which no linear-time engine matches, in a shape "
            "that can backtrack exponentially; simplify it"
        )
    raise UnsafePattern(
        "can backtrack exponentially in Python's regex engine (a repetition of something that "
        "can match the same text in several ways, such as (a+)+ or (a|ab)*); "
        f"{install_hint('re2')} for linear-time matching, or simplify it"
    )


def check(pattern: str) -> None:
    """Raise :class:`UnsafePattern` (or ``re.error`` for a malformed one) unless ``pattern`` can
    be matched in linear time."""
    _matcher(pattern)


def search(pattern: str, text: str) -> Any:
    """``re.search``'s answer (truthy when ``pattern`` matches somewhere in ``text``) from a
    linear-time engine; raises :class:`UnsafePattern` when there is none for the pattern."""
    return _matcher(pattern)(text)


class SafeRe:
    """The ``re`` that jsonschema's pattern keywords see: its ``search`` is :func:`search`."""

    error = re.error

    @staticmethod
    def search(pattern: str, text: str) -> Any:
        """Linear-time ``re.search``."""
        return search(pattern, text)


def pattern_strings(document: Any) -> Iterator[str]:
    """Every regular expression in a schema document: ``pattern`` values and the keys of
    ``patternProperties`` (a property *named* ``pattern`` holds a schema, not a string)."""
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "pattern" and isinstance(value, str):
                    yield value
                elif key == "patternProperties" and isinstance(value, dict):
                    keys = [k for k in value if isinstance(k, str)]
                    yield from keys
                    if len(keys) > 1:  # additionalProperties matches them joined with "|"
                        yield "|".join(keys)
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


# --- jsonschema's keywords, matching through SafeRe ----------------------------------------------
#
# jsonschema calls ``re.search`` from its keyword functions and helpers (``pattern``,
# ``patternProperties``, and the extra-property logic of ``additionalProperties`` and
# ``unevaluatedProperties``). Rather than patch its modules for the whole process, each keyword
# function is copied with globals in which ``re`` is :class:`SafeRe` (and the jsonschema helpers it
# calls are copied the same way): the same code, our engine, nobody else affected.

_lock = threading.Lock()
_copied_globals: dict[int, dict[str, Any]] = {}
_copied_functions: dict[int, FunctionType] = {}


def _is_jsonschema(fn: object) -> bool:
    return isinstance(fn, FunctionType) and (fn.__module__ or "").startswith("jsonschema")


def _globals_for(original: dict[str, Any]) -> dict[str, Any]:
    copied = _copied_globals.get(id(original))
    if copied is not None:
        return copied
    copied = dict(original)
    _copied_globals[id(original)] = copied  # before the loop: helpers refer to each other
    if copied.get("re") is re:
        copied["re"] = SafeRe
    for name, value in original.items():
        if _is_jsonschema(value):
            copied[name] = _copy(value)
    return copied


def _copy(fn: FunctionType) -> FunctionType:
    done = _copied_functions.get(id(fn))
    if done is not None:
        return done
    namespace = _globals_for(fn.__globals__)  # may copy ``fn`` itself, with the module
    done = _copied_functions.get(id(fn))
    if done is not None:
        return done
    new = FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    _copied_functions[id(fn)] = new
    return new


def safe_keywords(keywords: dict[str, Any]) -> dict[str, Any]:
    """A validator class's ``VALIDATORS`` with every jsonschema function matching through
    :class:`SafeRe` (for ``jsonschema.validators.extend``)."""
    with _lock:
        return {k: _copy(fn) if _is_jsonschema(fn) else fn for k, fn in keywords.items()}
