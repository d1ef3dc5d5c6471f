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

from scriptorium.prompt.model import CachePoint
from scriptorium.promptdef.model import ArtifactSpec, CacheTTL, PromptDefinition, Section

__all__ = [
    "MARK_VARIABLE",
    "MAX_BREAKPOINTS",
    "marked_template",
    "new_nonce",
    "normalize",
    "reads_no_input",
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


def static_points(definition: PromptDefinition, system_rendered: bool) -> tuple[CachePoint, ...]:
    """``static`` mode: the end of the system text, when its section reads no input."""
    if not system_rendered:
        return ()
    first = definition.sections[0] if definition.sections else None
    if first is None or first.role != "system":
        return ()
    if not reads_no_input(first.template, definition.artifacts):
        return ()
    return (CachePoint(message=None, offset=None, ttl=definition.cache.ttl),)
