"""Cache breakpoints through rendering: where a prompt's cached prefix ends, found without letting
any input add or move one.

``explicit`` prompts carry ``{# cache #}`` lines, found and removed when the body was split (see
``promptdef.parse``): each section remembers the template offsets where they stood. Before the
section is compiled, each offset gets ``{{ scriptorium_cache_mark }}#<n>#``, and every render puts a
fresh random nonce in that variable (after the inputs, so no input can set it). The rendered text is
then cut at the nonces: their positions are the breakpoints, and the text without them is exactly
what the section renders with caching off. Text that merely looks like a mark cannot match a nonce
it never saw.

``static`` prompts get one breakpoint at the end of the system text when the system section reads
no input (artifacts declared ``cache: true`` do not count as inputs).
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from scriptorium.prompt.model import CachePoint, Content, MediaPart, Message, Part, TextPart
from scriptorium.promptdef.model import ArtifactSpec, CacheTTL, PromptDefinition, Section

__all__ = [
    "MARK_VARIABLE",
    "MAX_BREAKPOINTS",
    "Mark",
    "follow_completion",
    "marked_template",
    "new_nonce",
    "normalize",
    "points_for",
    "reads_no_input",
    "take_content_marks",
    "take_marks",
]

#: The template variable holding this render's nonce.
MARK_VARIABLE = "scriptorium_cache_mark"
#: Anthropic takes at most four cache breakpoints per request.
MAX_BREAKPOINTS = 4
_TTL_ORDER = {"5m": 0, "1h": 1}


def marked_template(section: Section) -> str:
    """The section's template with a mark expression at each breakpoint offset."""
    template = section.template
    for number, mark in sorted(enumerate(section.cache_marks), key=lambda m: -m[1].offset):
        at = mark.offset
        template = f"{template[:at]}{{{{ {MARK_VARIABLE} }}}}#{number}#{template[at:]}"
    return template


def new_nonce() -> str:
    """A value no input can guess, fresh for every render."""
    return "\x00cache-" + secrets.token_hex(16)


def take_marks(text: str, nonce: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without the marks (stripped as every section is), and ``(mark number, offset)``
    for each mark found, offsets into the returned text. A mark rendered more than once (inside a
    loop) counts at its last place."""
    pattern = re.compile(re.escape(nonce) + r"#(\d+)#")
    pieces: list[str] = []
    found: dict[int, int] = {}
    length = 0
    last = 0
    for match in pattern.finditer(text):
        piece = text[last : match.start()]
        pieces.append(piece)
        length += len(piece)
        found[int(match.group(1))] = length
        last = match.end()
    pieces.append(text[last:])
    joined = "".join(pieces)
    lead = len(joined) - len(joined.lstrip())
    final = joined.strip()
    offsets = [(n, min(max(at - lead, 0), len(final))) for n, at in found.items()]
    return final, sorted(offsets, key=lambda item: item[1])


def normalize(points: Iterable[CachePoint]) -> tuple[CachePoint, ...]:
    """At most :data:`MAX_BREAKPOINTS` (the last ones: they cover the longest prefixes), each at
    most as long-lived as the ones before it, since a provider requires longer TTLs first: an
    earlier breakpoint is raised to the longest TTL that follows it."""
    kept = list(points)[-MAX_BREAKPOINTS:]
    longest: CacheTTL = "5m"
    out: list[CachePoint] = []
    for point in reversed(kept):
        if _TTL_ORDER[point.ttl] > _TTL_ORDER[longest]:
            longest = point.ttl
        out.append(point if point.ttl == longest else point.model_copy(update={"ttl": longest}))
    return tuple(reversed(out))


_static_memo: dict[tuple[str, tuple[str, ...]], bool] = {}
_static_lock = threading.Lock()


def reads_no_input(template: str, artifacts: Mapping[str, ArtifactSpec]) -> bool:
    """Whether ``template`` renders the same for every request: it names no input variable, and
    reads only artifacts declared ``cache: true`` (by plain attribute access)."""
    cached_names = tuple(sorted(name for name, spec in artifacts.items() if spec.cache))
    key = (template, cached_names)
    hit = _static_memo.get(key)
    if hit is not None:
        return hit
    verdict = _reads_no_input(template, set(cached_names))
    with _static_lock:
        if len(_static_memo) > 512:
            _static_memo.clear()
        _static_memo[key] = verdict
    return verdict


def _reads_no_input(template: str, cached: set[str]) -> bool:
    from jinja2 import Environment, TemplateSyntaxError, meta, nodes

    env = Environment(autoescape=True)  # parse only: nothing is rendered here
    try:
        tree = env.parse(template)
    except TemplateSyntaxError:
        return False
    names = meta.find_undeclared_variables(tree)
    if not names:
        return True
    if names != {"artifacts"}:
        return False
    uses = list(tree.find_all(nodes.Name))
    reads = [
        node.attr
        for node in tree.find_all(nodes.Getattr)
        if isinstance(node.node, nodes.Name) and node.node.name == "artifacts"
    ]
    artifact_names = [u for u in uses if u.name == "artifacts"]
    # Every use of `artifacts` must be `artifacts.<cached name>`.
    return len(reads) == len(artifact_names) and all(name in cached for name in reads)


class Mark(NamedTuple):
    """A breakpoint found in one section's content: mark ``number`` of the section, in part
    ``part`` (None: the content is plain text) at ``offset`` (None: the part's end)."""

    number: int
    part: int | None
    offset: int | None
    ttl: CacheTTL = "5m"


def take_content_marks(content: Content, nonce: str) -> tuple[Content, list[Mark]]:
    """:func:`take_marks` over a section's content, text or parts. A text part left empty by the
    marks is dropped (as it would be without them), and its marks move to the end of the part
    before it, or to the start of the message when there is none."""
    if isinstance(content, str):
        text, found = take_marks(content, nonce)
        return text, [Mark(n, None, at) for n, at in found]
    parts: list[Part] = []
    marks: list[Mark] = []
    for part in content:
        if not isinstance(part, TextPart):
            parts.append(part)
            continue
        text, found = take_marks(part.text, nonce)
        if text:
            marks.extend(Mark(n, len(parts), at) for n, at in found)
            parts.append(TextPart(text=text))
        elif parts:
            marks.extend(Mark(n, len(parts) - 1, None) for n, _ in found)
        else:
            marks.extend(Mark(n, None, 0) for n, _ in found)
    return tuple(parts), marks


def follow_completion(
    marks: list[tuple[int, Mark]], before: list[Message], after: list[Message]
) -> list[tuple[int, Mark]]:
    """Marks re-aimed after unplaced media were put first in the first user message (or in a
    message of their own before all others)."""
    if len(after) == len(before) + 1:  # a media-only message was put first
        return [(at if at < 0 else at + 1, mark) for at, mark in marks]
    moved: list[tuple[int, Mark]] = []
    for at, mark in marks:
        if 0 <= at < len(before) and after[at] is not before[at]:
            old = before[at].content
            new = after[at].content
            shift = len(new) - (1 if isinstance(old, str) else len(old))
            if isinstance(old, str):
                mark = Mark(mark.number, shift, mark.offset)
            elif mark.part is not None:
                mark = Mark(mark.number, mark.part + shift, mark.offset)
        moved.append((at, mark))
    return moved


def points_for(
    definition: PromptDefinition,
    marks: list[tuple[int, Mark]],
    messages: list[Message],
    has_system: bool,
) -> list[CachePoint]:
    """The breakpoints of one render: the explicit marks, or the ``static`` one."""
    mode = definition.cache.mode
    if mode == "explicit":
        return [
            CachePoint(
                message=None if at < 0 else at, part=mark.part, offset=mark.offset, ttl=mark.ttl
            )
            for at, mark in marks
        ]
    if mode == "static":
        return list(_static(definition, messages, has_system))
    return []


def _static(
    definition: PromptDefinition, messages: list[Message], has_system: bool
) -> Iterable[CachePoint]:
    """``static``: one breakpoint after the last leading block no input reaches: the system text
    when it reads no input, then media parts of artifacts declared ``cache: true`` that open the
    first message."""
    ttl = definition.cache.ttl
    point: CachePoint | None = None
    first = definition.sections[0] if definition.sections else None
    if has_system:
        if first is None or not reads_no_input(first.template, definition.artifacts):
            return ()
        point = CachePoint(message=None, offset=None, ttl=ttl)
    if messages and messages[0].role == "user" and not isinstance(messages[0].content, str):
        cached = {name for name, spec in definition.artifacts.items() if spec.cache}
        for index, part in enumerate(messages[0].content):
            if not (isinstance(part, MediaPart) and part.name in cached):
                break
            point = CachePoint(message=0, part=index, offset=None, ttl=ttl)
    return () if point is None else (point,)
