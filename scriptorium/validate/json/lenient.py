"""Lenient recovery: finding the value a model meant in text that is not JSON.

Entered by :func:`.strict.parse_lenient` once strict parsing has failed. The rule:
a fix is applied when every plausible reading of the text gives the same value; when readings differ,
only if the schema accepts exactly one of them; otherwise the output is invalid (``ambiguous`` or
``parse``). In order:

1. a BOM is dropped, and reasoning blocks (``<thinking>...</thinking>`` and the like) are blanked
   out, so a draft inside them is never the answer;
2. the whole text is read as one tolerant value (every reading of it, :mod:`.readings`); a
   reading that closed the value before members that follow it competes but is never returned;
3. failing that, a text that is JSON written with escaped quotes (``{\\"a\\": 1}``) is read
   unescaped;
4. failing that, candidates are collected: the content of each code fence, and each ``{...}`` or
   ``[...]`` in the prose. A broken value that reads like JSON is passed over when a complete
   value follows it (answers come last) and fails the text when nothing does; a value that runs
   on into a code fence swallows it, and a member's value (after ``"key":``, or in an object
   written without braces) is broken, never an answer;
5. one candidate is chosen: those needing no syntax fix beat those needing fixes, which beat prose
   values built of unquoted words (``{key: value}`` is a placeholder more often than an answer);
   equal values count once; the schema decides among the rest.

``internal_docs/validation.md`` explains each step with examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scriptorium.validate.json.outcome import ParseOutcome, failed, issue
from scriptorium.validate.json.readings import Budget, OutOfWork, Reading, explore, plausible
from scriptorium.validate.json.tolerant.cursor import ReadError
from scriptorium.validate.json.tolerant.quotes import QUOTES
from scriptorium.validate.json.tolerant.reader import Reader
from scriptorium.validate.model import ValidationIssue

__all__ = ["FIXES", "REASONING_TAGS", "recover"]

#: Every name that may appear in ``fixes``, location fixes first (the order they are listed in).
FIXES = (
    "stripped_bom",
    "stripped_reasoning",
    "stripped_code_fence",
    "extracted_from_prose",
    "escaped_json",
    "removed_trailing_comma",
    "removed_leading_comma",
    "removed_comment",
    "single_quotes",
    "smart_quotes",
    "triple_quotes",
    "mixed_quotes",
    "python_literal",
    "unquoted_key",
    "unquoted_value",
    "inserted_missing_comma",
    "joined_number",
    "escaped_inner_quote",
    "mismatched_bracket",
    "needless_escape",
    "escaped_control_char",
    "nonstandard_whitespace",
    "python_tuple",
    "nonstandard_number",
    "thousands_separator",
    "unquoted_value_brackets",
    "multiline_unquoted_value",
    "non_string_key",
    "backtick_quotes",
    "corner_brackets",
    "fullwidth_punctuation",
    "doubled_colon",
    "python_string_prefix",
    "joined_strings",
    "doubled_quotes",
    "misspelled_literal",
    "missing_opening_quote",
    "double_escaped_quote",
    "removed_stray_bracket",
    "missing_closing_quote",
    "inserted_missing_colon",
    "literal_backslash",
)

#: Tags whose blocks hold a model's reasoning rather than its answer.
REASONING_TAGS = (
    "think",
    "thinking",
    "thought",
    "thoughts",
    "reasoning",
    "reason",
    "reflection",
    "scratchpad",
    "analysis",
    "inner_monologue",
    "internal_monologue",
    "monologue",
    "plan",
    "planning",
    "draft",
    "rationale",
    "deliberation",
    "chain_of_thought",
)
# An opening tag counts only at the start of a line, so a tag quoted inside a value is left alone.
_REASONING_OPEN = re.compile(
    r"^[ \t]*<[ \t]*(" + "|".join(REASONING_TAGS) + r")(?:[ \t][^<>\n]{0,200})?[ \t]*>",
    re.IGNORECASE | re.MULTILINE,
)
_ANY_OPEN = re.compile(r"<[ \t]*(?:" + "|".join(REASONING_TAGS) + r")\b", re.IGNORECASE)
_REASONING_CLOSE = re.compile(
    r"<[ \t]*/[ \t]*(" + "|".join(REASONING_TAGS) + r")[ \t]*>", re.IGNORECASE
)
# A double-quoted string in prose, set off like a word: brackets inside it are quoted text.
_PROSE_STRING = re.compile(r'(?<![^\s:(])"(?:[^"\\\n]|\\.)*"(?=[\s.,;:!?)]|$)')
# What may follow a string's closing quote in a broken value: a delimiter, a comment, a line
# end, or what a missing colon or comma leaves (a bracket, another string, a ``+`` join).
_SPAN_CLOSE = re.compile(r"[ \t]*(?:[,:}\]\n/#{\[\"'+)]|$)")
_NOT_NEWLINE = re.compile(r"[^\n]")
_FENCE_OPEN = re.compile(r"^[ \t]*```[ \t]*(?:[A-Za-z][\w+.-]*)?", re.MULTILINE)
_FENCE_CLOSE = re.compile(r"^[ \t]*```|```[ \t]*$", re.MULTILINE)
_OPENERS = re.compile(r"[{\[]")
_BARE_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')
_CONTROL = re.compile(r"[\x00-\x1f]")
# ``name {`` or ``name: {`` at the start of a line, and ``key: "value"`` as a whole line.
_KEYED_OPENER = re.compile(r"[ \t]*(?:[A-Za-z_][\w-]*|\"[^\"\n]+\")[ \t]*:?[ \t]*")
_BARE_MEMBER = re.compile(
    r"[ \t]*(?:[A-Za-z_][\w-]*|\"[^\"\n]*\")[ \t]*:[ \t]*"
    r"(?:\"[^\"\n]*\"|'[^'\n]*'|-?[0-9]+(?:\.[0-9]+)?|true|false|null)[ \t]*,?[ \t]*"
)
# Syntax fixes that make a prose value look like a template rather than an answer.
_PLACEHOLDER_FIXES = frozenset({"unquoted_value"})


def recover(
    text: str,
    *,
    schema_check: Callable[[Any], bool] | None,
    max_depth: int,
    budget: Budget,
) -> ParseOutcome:
    """The value ``text`` holds by the lenient rule, or the issue saying why there is none."""
    try:
        return _Recovery(text, schema_check, max_depth, budget).run()
    except OutOfWork as err:
        return failed(issue("parse", f"{err}: too many ways to read the text"))


@dataclass(frozen=True, slots=True)
class _Candidate:
    offset: int
    where: tuple[str, ...]  # location fixes: stripped_code_fence, extracted_from_prose
    readings: tuple[Reading, ...]
    in_prose: bool


@dataclass(frozen=True, slots=True)
class _Region:
    start: int
    end: int
    fenced: bool


@dataclass
class _Recovery:
    text: str
    schema_check: Callable[[Any], bool] | None
    max_depth: int
    budget: Budget
    prefix: list[str] = field(default_factory=list)
    candidates: list[_Candidate] = field(default_factory=list)
    broken: ValidationIssue | None = None  # the last broken value, unless a complete one followed
    swallowed: int = -1  # regions starting before this offset are inside a broken value
    open_reasoning: bool = False  # a reasoning block runs to the end of the text

    def run(self) -> ParseOutcome:
        text = self.text
        if text.startswith("\ufeff"):
            text = text[1:]
            self.prefix.append("stripped_bom")
        text, stripped, self.open_reasoning = mask_reasoning(text)
        if stripped:
            self.prefix.append("stripped_reasoning")
        self.text = text
        readings, first_error = self._explore(text, 0, _read_document)
        if readings:
            return self._decide([(None, reading) for reading in readings], "the text")
        assert first_error is not None
        if first_error.keyword == "truncated" and text.lstrip().startswith("("):
            # A tuple cut off: everything after its opening is inside it.
            return failed(issue("truncated", first_error.message))
        escaped = self._read_escaped(text)
        if escaped:
            whole = _Candidate(0, ("escaped_json",), escaped, in_prose=False)
            return self._decide([(whole, reading) for reading in escaped], "the text")
        self._collect()
        if self.broken is not None:
            return failed(self.broken)
        if self.candidates:
            pairs = [(c, r) for c in _contenders(self.candidates) for r in c.readings]
            return self._decide(pairs, "the candidates")
        if not text.strip():
            if self.open_reasoning:
                return failed(issue("truncated", "the text ends inside a reasoning block"))
            what = "only reasoning, no answer" if stripped else "empty output"
            return failed(issue("parse", what))
        if first_error.keyword == "parse":
            detail = f"{first_error.message} at offset {first_error.pos}"
            return failed(issue("parse", f"no JSON value found in the text ({detail})"))
        return failed(issue(first_error.keyword, first_error.message))

    # -- reading --------------------------------------------------------------------------------

    def _explore(
        self, body: str, start: int, read: Callable[[Reader, int], tuple[Any, int]]
    ) -> tuple[tuple[Reading, ...], ReadError | None]:
        guided = self.schema_check is not None  # readings only a schema can pick are tried

        def new_reader(choices: tuple[int, ...]) -> Reader:
            return Reader(body, max_depth=self.max_depth, choices=choices, guided=guided)

        found, error = explore(new_reader, lambda reader: read(reader, start), start, self.budget)
        return plausible(found), error

    def _read_escaped(self, body: str) -> tuple[Reading, ...]:
        """The readings of ``body`` as JSON written with every quote escaped (``{\\"a\\": 1}``,
        a string's content without its quotes), or none when it is not that."""
        decoded = _unescaped(body)
        if decoded is None:
            return ()
        readings, _ = self._explore(decoded, 0, _read_document)
        return readings

    # -- candidates -----------------------------------------------------------------------------

    def _collect(self) -> None:
        regions = _regions(self.text)
        filled = [bool(self.text[r.start : r.end].strip()) for r in regions]
        for index, region in enumerate(regions):
            if region.start < self.swallowed:
                continue  # inside a broken value that runs on from an earlier region
            body = self.text[region.start : region.end]
            at_text_end = region.end == len(self.text)
            if region.fenced:
                readings, _ = self._explore(body, 0, _read_document)
                escaped: tuple[str, ...] = ()
                if not readings:
                    readings, escaped = self._read_escaped(body), ("escaped_json",)
                if readings:
                    others = sum(filled) - filled[index]
                    where = ("stripped_code_fence",) + (("extracted_from_prose",) if others else ())
                    self._add(_Candidate(region.start, where + escaped, readings, in_prose=False))
                    continue
            where = ("stripped_code_fence",) if region.fenced else ()
            self._scan_prose(body, region.start, at_text_end, where)

    def _scan_prose(
        self, body: str, offset: int, at_text_end: bool, where: tuple[str, ...]
    ) -> None:
        """Every ``{...}``/``[...]`` value in ``body``, and the broken ones that read like JSON.

        Each step moves forward: past a value read, or past the bracketed span of a bracket that
        does not open a value. So nothing inside a broken value (perhaps part of the answer) is
        ever taken for the answer, and the scan is linear.
        """
        where = (*where, "extracted_from_prose")
        quoted = _PROSE_STRING.finditer(body)
        string = next(quoted, None)
        pos = 0
        while True:
            found = _OPENERS.search(body, pos)
            if found is None:
                return
            start = found.start()
            while string is not None and string.end() <= start:
                string = next(quoted, None)
            if string is not None and string.start() < start:
                pos = string.end()  # ``the string "[1]"`` quotes a text; it offers no value
                continue
            if _member_of_bare_object(body, start) or _after_quoted_key(body, start):
                # ``run: "r-1"\nstatus {...}`` or ``..."key": {...}``: the value is one member of
                # an object (written without braces, or broken); taking it alone would drop
                # the other members.
                message = f"a member's value taken out of its object at offset {offset + start}"
                self.broken = issue("parse", message)
                pos = _span_end(body, start)
                continue
            readings, error = self._explore(body, start, _read_value)
            # A bracket taken for missing is not plausible when the value is followed (space and
            # comments skipped) by a closing bracket or a string: the text runs on, and the
            # missing bracket may be right there.
            probe = Reader(body, max_depth=self.max_depth)
            readings = tuple(r for r in readings if not (r.assumed_missing and _runs_on(probe, r)))
            if not readings and error is None:
                message = f"a value at offset {offset + start} runs on past where it closed"
                self.broken = issue("parse", message)
                pos = _span_end(body, start)
                continue
            if readings:
                # Readings that stop early because they took a bracket for missing are left
                # out (see readings.plausible): the scan goes on after the furthest one.
                self._add(_Candidate(offset + start, where, readings, in_prose=True))
                pos = max(reading.end for reading in readings)
                continue
            assert error is not None
            if error.keyword == "truncated" and at_text_end:
                # The value runs to the end of the text: whatever follows is inside it.
                self.broken = _located(error, offset, "")
                return
            if error.keyword == "truncated" and "stripped_code_fence" not in where:
                # Prose whose value runs on into a code fence: the fence is inside the value (a
                # fence in a string value is not the answer), and so is what follows it.
                message = f"a value at offset {offset + start} runs on into a code fence"
                self.broken = issue("parse", message)
                self.swallowed = _span_end(self.text, offset + start)
                return
            if probe.first_item_looks_like_json(start + 1, body[start]):
                self.broken = _located(error, offset, "in a value that reads like JSON")
            pos = _span_end(body, start)

    def _add(self, candidate: _Candidate) -> None:
        self.candidates.append(candidate)
        self.broken = None  # answers come last: a complete value after a broken one wins

    # -- choosing -------------------------------------------------------------------------------

    def _decide(
        self, pairs: Sequence[tuple[_Candidate | None, Reading]], what: str
    ) -> ParseOutcome:
        distinct: dict[str, tuple[_Candidate | None, Reading]] = {}
        for candidate, reading in pairs:
            key = json.dumps(reading.value, sort_keys=True, ensure_ascii=False)
            if key not in distinct or (reading.complete and not distinct[key][1].complete):
                distinct[key] = (candidate, reading)
        remaining = list(distinct.values())
        if len(remaining) > 1 and self.schema_check is not None:
            check = self.schema_check
            remaining = [pair for pair in remaining if check(pair[1].value)]
        if len(remaining) == 1 and not remaining[0][1].complete:
            # A value closed before members or items that follow it is never the answer: they
            # continue it (and dropping them is not allowed).
            keyword = "ambiguous" if len(distinct) > 1 else "parse"
            return failed(issue(keyword, f"{what}: a value closes before more members or items"))
        if len(remaining) == 1:
            candidate, reading = remaining[0]
            where = candidate.where if candidate is not None else ()
            fixes = tuple(dict.fromkeys([*self.prefix, *where, *reading.fixes]))
            return ParseOutcome(True, reading.value, "lenient", fixes)
        count = len(distinct)
        offsets = sorted({c.offset for c, _ in distinct.values() if c is not None})
        at = f" (at offsets {', '.join(map(str, offsets[:5]))})" if len(offsets) > 1 else ""
        verdict = "the schema accepts none of them" if not remaining else "cannot tell which"
        if self.schema_check is not None and len(remaining) > 1:
            verdict = f"the schema accepts {len(remaining)} of them"
        message = f"{what} can be read as {count} different JSON values{at}; {verdict}"
        return failed(issue("ambiguous", message))


def mask_reasoning(text: str) -> tuple[str, bool, bool]:
    """``text`` with reasoning blocks blanked out (newlines kept, so offsets and fences hold),
    whether there were any, and whether the last one never closes.

    A block runs from an opening tag (at the start of a line) to its closing tag (anywhere); one
    that never closes runs to the end of the text, since the generation stopped inside it. A
    closing tag met before any opening one ends reasoning whose opening tag the server dropped:
    everything before it is blanked.
    """
    unclosed = False
    spans: list[tuple[int, int]] = []
    pos = 0
    first_open = _REASONING_OPEN.search(text)
    orphan = _REASONING_CLOSE.search(text)
    if (
        orphan is not None
        and (first_open is None or orphan.start() < first_open.start())
        # an opening tag before it, even mid-line, pairs with it: ``'<think>x</think>'`` is text
        and _ANY_OPEN.search(text, 0, orphan.start()) is None
    ):
        # Reasoning whose opening tag the server dropped: everything up to this tag.
        spans.append((0, orphan.end()))
        pos = orphan.end()
    while True:
        tag = _REASONING_OPEN.search(text, pos)
        if tag is None:
            break
        start = text.index("<", tag.start())
        closing = re.compile(rf"<[ \t]*/[ \t]*{tag.group(1)}[ \t]*>", re.IGNORECASE)
        close = closing.search(text, tag.end())
        if close is None:
            # Never closed: the text ends inside the reasoning (cut off before any answer).
            spans.append((start, len(text)))
            unclosed = True
            break
        spans.append((start, close.end()))
        pos = close.end()
    if not spans:
        return text, False, False
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
        last = end
    parts.append(text[last:])
    return "".join(parts), True, unclosed


def _read_document(reader: Reader, start: int) -> tuple[Any, int]:
    return reader.read_document()


def _read_value(reader: Reader, start: int) -> tuple[Any, int]:
    return reader.read_value(start)


def _tier(candidate: _Candidate) -> int:
    """0: no syntax fix; 1: syntax fixes; 2: a prose value of unquoted words (a placeholder?)."""
    tiers = [
        0 if not r.fixes else 2 if candidate.in_prose and _PLACEHOLDER_FIXES & set(r.fixes) else 1
        for r in candidate.readings
    ]
    return min(tiers)


def _contenders(candidates: list[_Candidate]) -> list[_Candidate]:
    """The candidates still in the running: those with no cleaner candidate after them.

    A value needing fixes loses to a cleaner one that follows it (a draft, then the answer). A
    clean value does not beat a repaired one that follows it: answers come last, so the later
    one may be the answer, and only the schema can say.
    """
    kept: list[_Candidate] = []
    best_after = 3
    for candidate in reversed(candidates):
        tier = _tier(candidate)
        if tier <= best_after:
            kept.append(candidate)
            best_after = tier
    kept.reverse()
    return kept


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


def _span_end(body: str, start: int) -> int:
    """The offset past the bracket closing the one at ``start``, or the end of ``body`` when it
    never closes: the further of the two ends found with strings skipped and with brackets
    alone counted, since a broken value may have lost a quote (``"abc + "def"``) as well as
    hold a bracket inside a string (``"}"``); the scan never resumes inside a broken value."""
    return max(_bracket_end(body, start, strings=True), _bracket_end(body, start, strings=False))


def _bracket_end(body: str, start: int, *, strings: bool) -> int:
    depth = 0
    pos = start
    end = len(body)
    previous = "{"  # the last character outside strings, space and comments
    unclosed = end  # where a ``/*`` was found with no ``*/`` after it
    while pos < end:
        char = body[pos]
        if char in " \t\r\n":
            pos += 1
            continue
        skip = _comment_end(body, pos, unclosed) if char in "/#" else -1
        if skip == -2:
            unclosed = pos  # no ``*/`` from here on: later ``/*`` are not looked up again
        elif skip >= 0:
            pos = skip
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos + 1
        elif strings and char in "\"'" and (previous in "{[,:+\"'" or body[pos - 1] in " \t\n"):
            # A string opens after a delimiter, another string or a space (a comma lost), and
            # ends at a quote a delimiter follows, or at the line end (it lost its quote).
            pos += 1
            while pos < end and body[pos] != "\n":
                if body[pos] == char and _SPAN_CLOSE.match(body, pos + 1) is not None:
                    break
                pos += 2 if body[pos] == "\\" else 1
        previous = char
        pos += 1
    return end


def _comment_end(body: str, pos: int, unclosed: int) -> int:
    """The offset past a comment starting at ``pos`` (``#`` only after space or a delimiter),
    -1 when none starts there, -2 for a ``/*`` that never closes."""
    if body.startswith("/*", pos):
        if pos >= unclosed:
            return -1
        close = body.find("*/", pos + 2)
        return -2 if close < 0 else close + 2
    if body.startswith("//", pos) or (body[pos] == "#" and body[pos - 1] in " \t\n,{["):
        newline = body.find("\n", pos)
        return len(body) if newline < 0 else newline
    return -1


def _runs_on(probe: Reader, reading: Reading) -> bool:
    """Whether the text after ``reading`` starts with a closing bracket or a quote."""
    try:
        after = probe.skip_space(reading.end, note=False)
    except ReadError:
        return True
    return after < probe.end and (probe.text[after] in "}])" or probe.text[after] in QUOTES)


def _unescaped(body: str) -> str | None:
    """``body`` with its escapes undone, when it is JSON written inside a string: it holds an
    escaped quote and no bare one (``{\\"a\\": \\"b\\"}``); else None."""
    if '\\"' not in body or _BARE_QUOTE.search(body) is not None:
        return None
    try:
        decoded: str = json.loads('"' + _CONTROL.sub(_escape_control, body) + '"')
    except ValueError:
        return None
    return decoded


def _escape_control(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _after_quoted_key(body: str, start: int) -> bool:
    """Whether the bracket at ``start`` follows ``"key":``: a member's value, so part of a
    larger object (broken, since it was not read whole), not an answer of its own."""
    back = start - 1
    while back >= 0 and body[back] in " \t":
        back -= 1
    if back >= 0 and body[back] in QUOTES:
        return _key_before(body, back)  # ``"key" {...}``: its colon is missing
    if back < 0 or body[back] not in ":：":
        return False
    back -= 1
    while back >= 0 and body[back] in " \t":
        back -= 1
    return back >= 0 and body[back] in QUOTES


def _key_before(body: str, close: int) -> bool:
    """Whether the quote at ``close`` ends a string opened on its line after ``,`` or ``{``."""
    line = body.rfind("\n", 0, close) + 1
    opened = body.rfind(body[close] if body[close] in "\"'" else "“", line, close)
    if opened < 0:
        return False
    back = opened - 1
    while back >= line and body[back] in " \t":
        back -= 1
    return back >= line and body[back] in ",，{"


def _member_of_bare_object(body: str, start: int) -> bool:
    """Whether the bracket at ``start`` opens a member's value of an object written without
    braces: its line is ``name {`` or ``name: {``, and the line before is a member
    (``key: "value"``)."""
    line_start = body.rfind("\n", 0, start) + 1
    if _KEYED_OPENER.fullmatch(body, line_start, start) is None or line_start == 0:
        return False
    previous = body[:line_start].rstrip()
    last_line = previous[previous.rfind("\n") + 1 :]
    return _BARE_MEMBER.fullmatch(last_line) is not None


def _located(err: ReadError, offset: int, context: str) -> ValidationIssue:
    where = f" {context}" if context else ""
    return issue(err.keyword, f"{err.message} at offset {offset + err.pos}{where}")
