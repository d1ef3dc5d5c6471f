"""Prompt caching on the Messages API body: ``cache_control`` where the prompt's breakpoints are.

``auto`` is the API's automatic caching, one top-level ``cache_control``. ``static`` and
``explicit`` carry breakpoints (character offsets into the system text or a message, see
``prompt.cache_marks``): the text is cut there into text blocks, and the block that ends at a
breakpoint gets ``{"type": "ephemeral", "ttl": ...}``. The blocks concatenate to exactly the text
that is sent without caching, so caching changes what is billed, never what the model reads.

Usage reports 1-hour writes apart (:func:`one_hour_writes`). :func:`minimum_cacheable_tokens` is
the shortest prefix each model caches (Anthropic's published minimums): a breakpoint before fewer
tokens is accepted by the API and silently caches nothing, which ``scriptorium check`` warns about.
"""

from __future__ import annotations

import re
from typing import Any

from scriptorium.llm.anthropic.model_ids import base_model
from scriptorium.llm.model import CacheDirectives

__all__ = [
    "CACHE_MINIMUMS_DATE",
    "apply_cache",
    "cache_control",
    "minimum_cacheable_tokens",
    "one_hour_writes",
]

CACHE_MINIMUMS_DATE = "2026-11"

# Most specific first: the first pattern that matches the model name wins.
_MINIMUMS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"^claude-opus-4-([5-9]|\d\d)"), 4096),
    (re.compile(r"^claude-haiku-4-5"), 4096),
    (re.compile(r"^claude-(3-5-haiku|3-haiku|haiku-3)"), 2048),
    (re.compile(r"^claude-(opus|sonnet)-4"), 1024),
    (re.compile(r"^claude-3-7-sonnet"), 1024),
    (re.compile(r"^claude-"), 1024),
)


def minimum_cacheable_tokens(model: str) -> int | None:
    """The minimum cacheable prefix of ``model`` in tokens; None for models outside the table
    (OpenAI caches prompts of 1024 tokens and more by itself, with nothing to ask)."""
    name = base_model(model.strip()).lower()
    for pattern, tokens in _MINIMUMS:
        if pattern.match(name):
            return tokens
    return None


def cache_control(ttl: str) -> dict[str, str]:
    """The directive for one breakpoint (the TTL always stated, so a 5m one is never a guess)."""
    return {"type": "ephemeral", "ttl": ttl}


class _Text:
    """A text being cut into blocks: the block list it becomes and where each block ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.cuts: set[int] = set()
        self.blocks: list[dict[str, Any]] = []
        self.ends: list[int] = []

    def cut(self) -> None:
        at = 0
        for end in [*sorted(c for c in self.cuts if 0 < c < len(self.text)), len(self.text)]:
            piece = self.text[at:end]
            if not piece.strip() and self.blocks:
                # A block of blanks only is refused by the API: it joins the one before.
                self.blocks[-1]["text"] += piece
                self.ends[-1] = end
            elif piece:
                self.blocks.append({"type": "text", "text": piece})
                self.ends.append(end)
            at = end

    def block_ending_by(self, offset: int) -> dict[str, Any] | None:
        """The last block that ends at or before ``offset`` (None: the breakpoint precedes all)."""
        found = None
        for block, end in zip(self.blocks, self.ends, strict=True):
            if end <= offset:
                found = block
        return found


def apply_cache(body: dict[str, Any], cache: CacheDirectives, system: str | None) -> None:
    """Add ``cache`` to ``body`` in place. ``system`` is the request's own system text: anything
    the body's system has beyond it (structured-output instructions) is one more block."""
    if cache.mode == "auto":
        body["cache_control"] = cache_control(cache.ttl)
        return
    if not cache.points:
        return
    own = system or ""
    full_system = body.get("system")
    aimed = any(point.message is None for point in cache.points)
    system_text = _Text(own) if aimed and isinstance(full_system, str) and own else None
    messages = body.get("messages", [])
    # Texts to cut: a message's plain content (part None) or one text block of its content list.
    texts: dict[tuple[int, int | None], _Text] = {}
    for point in cache.points:
        if point.message is None:
            if system_text is not None and point.offset is not None:
                system_text.cuts.add(point.offset)
            continue
        text = _text_at(messages, point.message, point.part, texts)
        if text is not None and point.offset is not None:
            text.cuts.add(point.offset)
    if system_text is not None and isinstance(full_system, str):
        system_text.cut()
        blocks = list(system_text.blocks)
        extra = full_system[len(own) :]
        if extra:
            blocks.append({"type": "text", "text": extra})
        body["system"] = blocks
    _rebuild(messages, texts)
    for point in cache.points:
        target: dict[str, Any] | None = None
        if point.message is None:
            system_blocks = body.get("system")
            if isinstance(system_blocks, list) and system_blocks:
                if point.offset is None or system_text is None:
                    target = system_blocks[-1]
                else:
                    target = system_text.block_ending_by(point.offset)
        elif 0 <= point.message < len(messages):
            target = _target(body, point.message, point.part, point.offset, texts)
        if target is not None:
            target["cache_control"] = cache_control(point.ttl)


def _text_at(
    messages: list[dict[str, Any]],
    index: int,
    part: int | None,
    texts: dict[tuple[int, int | None], _Text],
) -> _Text | None:
    """The cuttable text a breakpoint points into (None: a media block, or nothing there)."""
    if not 0 <= index < len(messages):
        return None
    content = messages[index].get("content")
    if part is None:
        if not isinstance(content, str):
            return None
        return texts.setdefault((index, None), _Text(content))
    if not isinstance(content, list) or not 0 <= part < len(content):
        return None
    block = content[part]
    if not (isinstance(block, dict) and block.get("type") == "text"):
        return None
    return texts.setdefault((index, part), _Text(str(block.get("text", ""))))


def _rebuild(messages: list[dict[str, Any]], texts: dict[tuple[int, int | None], _Text]) -> None:
    """Replace each cut text with its blocks (a plain content becomes a block list)."""
    for index in sorted({i for i, _ in texts}):
        content = messages[index].get("content")
        if isinstance(content, str):
            text = texts[(index, None)]
            text.cut()
            messages[index] = {**messages[index], "content": list(text.blocks)}
            continue
        if not isinstance(content, list):
            continue
        rebuilt: list[Any] = []
        for part, block in enumerate(content):
            piece = texts.get((index, part))
            if piece is None:
                rebuilt.append(block)
                continue
            piece.cut()
            rebuilt.extend(piece.blocks)
        messages[index] = {**messages[index], "content": rebuilt}


def _target(
    body: dict[str, Any],
    index: int,
    part: int | None,
    offset: int | None,
    texts: dict[tuple[int, int | None], _Text],
) -> dict[str, Any] | None:
    """The block a message breakpoint puts its directive on."""
    text = texts.get((index, part))
    if text is not None:
        found = text.block_ending_by(len(text.text) if offset is None else offset)
        if found is not None:
            return found
        if part is None or part == 0:
            return _last_block_before(body, index)
        return _block_before_part(body, index, part, texts)
    content = body["messages"][index].get("content")
    if part is None:
        if offset == 0:
            return _last_block_before(body, index)
        if isinstance(content, list) and content:
            last = content[-1]
            return last if isinstance(last, dict) else None
        return None
    # A media block (or a text block nothing cut): find it in the possibly rebuilt content.
    block = _original_block(body, index, part, texts)
    return block


def _original_block(
    body: dict[str, Any], index: int, part: int, texts: dict[tuple[int, int | None], _Text]
) -> dict[str, Any] | None:
    content = body["messages"][index].get("content")
    if not isinstance(content, list):
        return None
    position = 0
    for original in range(part):
        cut = texts.get((index, original))
        position += len(cut.blocks) if cut is not None else 1
    if position < len(content) and isinstance(content[position], dict):
        block: dict[str, Any] = content[position]
        return block
    return None


def _block_before_part(
    body: dict[str, Any], index: int, part: int, texts: dict[tuple[int, int | None], _Text]
) -> dict[str, Any] | None:
    previous = _original_block(body, index, part - 1, texts)
    cut = texts.get((index, part - 1))
    if cut is not None and cut.blocks:
        return cut.blocks[-1]
    return previous


def _last_block_before(body: dict[str, Any], message: int) -> dict[str, Any] | None:
    """The last content block before message ``message`` (a breakpoint at the very start of a
    message caches everything before it)."""
    for index in range(message - 1, -1, -1):
        content = body["messages"][index].get("content")
        if isinstance(content, list) and content:
            last = content[-1]
            return last if isinstance(last, dict) else None
        if isinstance(content, str) and content:
            block = {"type": "text", "text": content}
            body["messages"][index] = {**body["messages"][index], "content": [block]}
            return block
    system = body.get("system")
    if isinstance(system, list) and system:
        last = system[-1]
        return last if isinstance(last, dict) else None
    if isinstance(system, str) and system:
        block = {"type": "text", "text": system}
        body["system"] = [block]
        return block
    return None


def one_hour_writes(usage: Any) -> int:
    """How many cache-write tokens of an API ``usage`` object went to the 1-hour cache (its
    ``cache_creation.ephemeral_1h_input_tokens``), never more than the writes in all; 0 when the
    split is absent or malformed."""
    if not isinstance(usage, dict):
        return 0
    split = usage.get("cache_creation")
    value = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    if type(value) is not int or value < 0:
        return 0
    total = usage.get("cache_creation_input_tokens")
    return min(value, total) if type(total) is int and total >= 0 else 0
