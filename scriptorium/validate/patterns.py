"""Schema ``pattern`` matching that cannot take exponential time.

A prompt author's ``pattern: '^(a+)+$'`` makes a backtracking engine (Python's ``re``, which
``jsonschema`` uses) run for hours on 33 characters; outputs and inputs are attacker-controlled
text, so every pattern a schema holds (``pattern``, the keys of ``patternProperties``, and what
``additionalProperties`` / ``unevaluatedProperties`` derive from them) is matched here instead:

1. with RE2 (extra ``re2``: ``google-re2``), linear in the text, when the pattern is one RE2 takes
   (``\\uXXXX`` escapes are translated; lookarounds and backreferences are not RE2);
2. else with ``re`` when the pattern cannot backtrack badly: at most one repetition that is not
   fixed-count, none inside another, and little choice among bounded ones
   (:func:`backtracking_safe`);
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
#: The most combined choice bounded repetitions may offer a backtracking engine.
_MAX_BOUNDED_CHOICE = 1000
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


def _walk(items: Any, inside_repeat: bool) -> Iterator[tuple[str, Any, bool]]:
    """Every (opcode name, argument, whether inside a repetition) of a parsed pattern."""
    for op, arg in items:
        name = str(op)
        yield name, arg, inside_repeat
        if name in _REPEATS:
            yield from _walk(arg[2], True)
        elif name == "SUBPATTERN":
            yield from _walk(arg[-1], inside_repeat)
        elif name == "BRANCH":
            for alternative in arg[1]:
                yield from _walk(alternative, inside_repeat)


def backtracking_safe(pattern: str) -> bool:
    """Whether ``re`` can match ``pattern`` without super-linear backtracking, judged
    conservatively: no lookaround or backreference, at most one repetition that is not fixed-count
    (``x{3}`` is fixed), no repetition inside another, no alternation inside a repetition, and at
    most :data:`_MAX_BOUNDED_CHOICE` combined choices among bounded repetitions."""
    try:
        # The stdlib's own regex parser (private, so reached by name: typeshed versions differ on
        # whether they describe it).
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:
        return False
    variable = 0
    choice = 1
    for name, arg, inside in _walk(parsed, False):
        if name in _OPAQUE:
            return False
        if name == "BRANCH" and inside:
            return False
        if name in _REPEATS:
            low, high = arg[0], arg[1]
            if low == high:
                continue
            if inside:
                return False
            if high == parser.MAXREPEAT:
                variable += 1
            else:
                choice *= high - low + 1
    return variable <= 1 and choice <= _MAX_BOUNDED_CHOICE


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
        "can backtrack exponentially in Python's regex engine (nested or repeated "
        f"repetitions); {install_hint('re2')} for linear-time matching, or simplify it"
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
