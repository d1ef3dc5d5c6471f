"""The parts of a prompt file that ``scriptorium optimize`` may change: the spans of its body
between ``{# optimize #}`` and ``{# /optimize #}``. Both markers are Jinja comments, so the prompt
renders the same with or without them, and a candidate keeps them so it can be optimised again.

Everything else of the file (front matter, sections, text outside the markers) is never touched:
a candidate is the file's text with the inside of each region replaced, nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scriptorium.errors import InvalidRequestError
from scriptorium.promptdef.parse import split_front_matter

__all__ = ["CLOSE_MARK", "OPEN_MARK", "Region", "find_regions", "replace_regions"]

#: Opens a region (whitespace and Jinja's ``-`` trim marks allowed inside the comment).
OPEN_MARK = re.compile(r"\{#-?\s*optimize\s*-?#\}")
#: Closes a region.
CLOSE_MARK = re.compile(r"\{#-?\s*/optimize\s*-?#\}")
_ANY_MARK = re.compile(r"\{#-?\s*(/?)optimize\s*-?#\}")


@dataclass(frozen=True)
class Region:
    """One marked region: ``start`` and ``end`` are the offsets of its inside (between the two
    markers) in the file's text."""

    start: int
    end: int
    text: str


def find_regions(text: str, *, prompt_id: str) -> tuple[Region, ...]:
    """Every marked region of a prompt file's ``text``, in order. ``InvalidRequestError`` naming
    the prompt when it has none, when a marker is unmatched or nested, or when one stands in the
    front matter (only the body is the optimiser's to change)."""
    front, body = split_front_matter(text)
    body_start = len(text) - len(body)
    if front is not None and _ANY_MARK.search(text, 0, body_start):
        raise InvalidRequestError(
            f"prompt {prompt_id!r}: an optimize marker stands in the front matter; mark regions "
            "of the body only",
            field="prompt",
        )
    regions: list[Region] = []
    opened: int | None = None
    for mark in _ANY_MARK.finditer(text, body_start):
        closing = mark.group(1) == "/"
        if not closing:
            if opened is not None:
                raise _unbalanced(prompt_id, "a region opens inside another")
            opened = mark.end()
        else:
            if opened is None:
                raise _unbalanced(prompt_id, "{# /optimize #} closes no open region")
            regions.append(Region(opened, mark.start(), text[opened : mark.start()]))
            opened = None
    if opened is not None:
        raise _unbalanced(prompt_id, "a region opened with {# optimize #} is never closed")
    if not regions:
        raise InvalidRequestError(
            f"prompt {prompt_id!r} has no marked region: put the text the optimiser may change "
            "between {# optimize #} and {# /optimize #} lines (Jinja comments: the prompt renders "
            "the same)",
            field="prompt",
        )
    return tuple(regions)


def replace_regions(text: str, regions: Sequence[Region], new_texts: Sequence[str]) -> str:
    """``text`` with the inside of each region replaced by the matching new text (the markers and
    everything outside them kept as they are)."""
    if len(new_texts) != len(regions):
        raise ValueError(f"{len(new_texts)} texts for {len(regions)} regions")
    pieces: list[str] = []
    last = 0
    for region, new in zip(regions, new_texts, strict=True):
        pieces.append(text[last : region.start])
        pieces.append(new)
        last = region.end
    pieces.append(text[last:])
    return "".join(pieces)


def _unbalanced(prompt_id: str, what: str) -> InvalidRequestError:
    return InvalidRequestError(f"prompt {prompt_id!r}: {what}", field="prompt")
