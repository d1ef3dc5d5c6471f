"""Values, and the objects and arrays that hold them.

:func:`read_value` looks at a value's first character and reads it: an object, an array, a Python
tuple, a string, a number, a prefixed string or a literal; a Markdown code span, non-finite
numbers and unknown bare words are refused there. Objects read member after member (leading and
trailing commas, a comma missing before the next key, doubled commas refused), arrays and tuples
item after item (a comma missing between items, two numbers a space apart, Python's adjacent
strings, ``(x)`` as ``x`` or a one-item tuple). The value dispatch and the containers call each
other, so they share this module; keys, brackets and scalars come from the modules beside it.
"""

from __future__ import annotations

from typing import Any

from scriptorium.validate.json.tolerant.brackets import (
    after_close,
    close_empty,
    starts_value,
    wrong_closer,
)
from scriptorium.validate.json.tolerant.cursor import CLOSING, INLINE_SPACE, Cursor, ReadError, clip
from scriptorium.validate.json.tolerant.keys import colon, key_follows, key_starts, read_key
from scriptorium.validate.json.tolerant.literals import (
    DIGIT_WORD,
    IDENT,
    LITERALS,
    NON_FINITE,
    is_number_start,
    join_number,
    read_number,
)
from scriptorium.validate.json.tolerant.quotes import QUOTES
from scriptorium.validate.json.tolerant.strings import (
    PYTHON_PREFIX,
    concatenate,
    joined,
    missing_open_item,
    python_adjacent,
    read_prefixed,
    read_string,
)
from scriptorium.validate.json.tolerant.unquoted import read_bare

__all__ = ["read_value"]


def read_value(cur: Cursor, pos: int, depth: int = 0, *, item: bool = False) -> tuple[Any, int]:
    """The value starting at ``pos`` (after space) and the offset just past it."""
    pos = cur.skip_space(pos)
    if pos >= cur.end:
        raise ReadError(pos, "truncated", "the text ends where a value should start")
    text = cur.text
    char = text[pos]
    if char == "{":
        return _read_object(cur, pos, depth + 1)
    if char == "[":
        return _read_array(cur, pos, depth + 1, "]")
    if char == "(":
        cur.note("python_tuple")
        return _read_array(cur, pos, depth + 1, ")")
    if char in QUOTES:
        if char == "`" and (depth == 0 or text.startswith("```", pos)):
            # Alone, backticks are Markdown's inline code or a fence, not a string.
            raise ReadError(pos, "parse", "a code span, not a value")
        # A whole text that is one string with quotes inside reads as prose just as well:
        # only a schema (which asks for a string) makes the string reading worth trying.
        return read_string(cur, pos, inner_quotes=depth > 0 or cur.guided, item=item)
    if is_number_start(cur, pos):
        return read_number(cur, pos)
    prefixed = PYTHON_PREFIX.match(text, pos)
    if prefixed is not None:
        return read_prefixed(cur, pos, prefixed)
    match = IDENT.match(text, pos)
    if match is None:
        raise ReadError(pos, "parse", f"unexpected character {char!r}")
    word = match.group()
    if word in LITERALS:
        value, fix = LITERALS[word]
        if fix:
            cur.note(fix)
        return value, match.end()
    if word in NON_FINITE:
        raise ReadError(pos, "non_finite", f"{word} is not a JSON number")
    if match.end() >= cur.end:
        raise ReadError(pos, "truncated", "the text ends inside a bare word")
    raise ReadError(pos, "parse", f"unexpected bare word {clip(word)!r}")


def _read_object(cur: Cursor, pos: int, depth: int) -> tuple[Any, int]:
    cur.check_depth(pos, depth)
    result: dict[str, Any] = {}
    pos = cur.expect_more(pos + 1)
    char = cur.text[pos]
    if char == "}":
        return result, after_close(cur, pos + 1, depth, "{", stray=False)
    if char in "])":
        return close_empty(cur, pos, "{")
    if _comma_at(cur, pos):
        # ``{, "a": 1}``: an object has no holes, so a leading comma can only be a slip.
        cur.note("removed_leading_comma")
        pos = cur.expect_more(pos + 1)
        if cur.text[pos] == "}":
            return result, after_close(cur, pos + 1, depth, "{", stray=False)
    while True:
        key_at = pos
        key, pos = read_key(cur, pos)
        pos = colon(cur, key_at, pos)
        value, pos = _read_member_value(cur, pos, depth)
        result[key] = value  # a repeated key keeps its last value, as json.loads does
        pos, closed = _after_member(cur, pos, depth)
        if closed:
            return result, pos


def _after_member(cur: Cursor, pos: int, depth: int) -> tuple[int, bool]:
    """What follows an object member: the offset of the next key (False), or the offset past
    the object's end (True)."""
    while True:
        pos = cur.expect_more(pos)
        char = cur.text[pos]
        if char in CLOSING:
            if char == ")":
                raise ReadError(pos, "parse", "a parenthesis closing an object")
            end = pos + 1 if char == "}" else wrong_closer(cur, pos)
            if end > pos:
                end = after_close(cur, end, depth, "{")
                if end < 0:  # a stray bracket: the members go on
                    pos = -end
                    continue
            return end, True
        if _comma_at(cur, pos):
            pos = cur.expect_more(pos + 1)
            if cur.text[pos] in CLOSING:
                cur.note("removed_trailing_comma")
                continue
            if _comma_at(cur, pos):
                raise ReadError(pos, "parse", "two commas in a row")
            return pos, False
        if key_starts(cur, pos):
            # The next member's key: only a comma can be missing here (the ':' after the
            # key confirms it, or the reading fails).
            cur.note("inserted_missing_comma")
            return pos, False
        raise ReadError(pos, "parse", "expected ',' or '}' after an object member")


def _read_member_value(cur: Cursor, pos: int, depth: int) -> tuple[Any, int]:
    pos = cur.skip_space(pos)
    word = IDENT.match(cur.text, pos)
    if word is not None and word.group() in LITERALS:
        after = INLINE_SPACE.match(cur.text, word.end()).end()  # type: ignore[union-attr]
        if after > word.end() and key_follows(cur, after):
            # ``{"a": False "b": 1}``: the literal, then the next member's key.
            return read_value(cur, pos, depth)
    digit_word = DIGIT_WORD.match(cur.text, pos)
    if digit_word is not None:
        # A date, a time or a UUID written without quotes: a string to every reader.
        cur.note("unquoted_value")
        return digit_word.group(), digit_word.end()
    if pos < cur.end and (cur.text[pos].isalpha() or cur.text[pos] == "_"):
        prefixed = PYTHON_PREFIX.match(cur.text, pos)
        if prefixed is not None:
            return joined(cur, *read_prefixed(cur, pos, prefixed), member=True)
        return read_bare(cur, pos)
    value, end = read_value(cur, pos, depth)
    return joined(cur, value, end, member=True)


def _read_array(cur: Cursor, pos: int, depth: int, closer: str) -> tuple[Any, int]:
    """An array (``closer`` ``]``) or a Python tuple (``)``), read into a list."""
    cur.check_depth(pos, depth)
    result: list[Any] = []
    pos = cur.expect_more(pos + 1)
    char = cur.text[pos]
    if char == closer:
        return result, after_close(cur, pos + 1, depth, "[", stray=False)
    if char in CLOSING:
        return close_empty(cur, pos, "[")
    separated = False  # a comma was seen: ``(x,)`` is a tuple, ``(x)`` may be just x
    while True:
        start = pos
        value, pos = read_value(cur, pos, depth, item=True)
        value, pos = joined(cur, value, pos, member=False)
        result.append(value)
        # The element's number literal, kept in case ``1 2`` is to be read as ``12``.
        literal = cur.text[start:pos] if is_number_start(cur, start) else None
        while True:  # what follows the element
            after_value = pos
            if cur.open_quote is not None:
                # One space parts the items; more spaces belong to the item.
                item_at = pos + 1
                result.append(missing_open_item(cur, item_at))
                pos, literal = cur.last_string[0], None
                continue
            pos = cur.expect_more(pos)
            char = cur.text[pos]
            if char in CLOSING:
                end = pos + 1 if char == closer else wrong_closer(cur, pos)
                if end > pos:
                    end = after_close(cur, end, depth, "[")
                    if end < 0:  # a stray bracket: the items go on
                        pos = -end
                        continue
                # ``(x)`` is x to Python and JavaScript; a one-item tuple needs ``(x,)``.
                single = closer == ")" and len(result) == 1 and not separated
                if single and cur.choose(2) == 0:
                    return result[0], end
                return result, end
            if _comma_at(cur, pos):
                separated = True
                pos = cur.expect_more(pos + 1)
                if cur.text[pos] in CLOSING:
                    cur.note("removed_trailing_comma")
                    continue
                break
            if not starts_value(cur, pos):
                raise ReadError(pos, "parse", "expected ',' or ']' after an array element")
            if literal is not None and is_number_start(cur, pos):
                if cur.inline(after_value, pos):
                    if not cur.guided:
                        raise ReadError(
                            pos, "ambiguous", "numbers separated by a space: one number or two?"
                        )
                    if cur.choose(2) == 1:
                        literal, result[-1], pos = join_number(cur, literal, pos)
                        cur.note("joined_number")
                        continue
            elif python_adjacent(cur, after_value, pos) and cur.choose(2) == 1:
                result[-1], pos = concatenate(cur, result[-1], pos)
                continue
            cur.note("inserted_missing_comma")
            separated = True
            break


def _comma_at(cur: Cursor, pos: int) -> bool:
    char = cur.text[pos]
    if char == "，":
        cur.note("fullwidth_punctuation")
        return True
    return char == ","
