"""``scriptorium check``'s warnings about prompt caching: breakpoints that cannot all be sent,
breakpoints after input-dependent text (their prefix differs every run, so nothing is reused), and
cached prefixes shorter than the model will cache (each provider's spec says its minimum; a
provider that names none gets no such warning). Token counts here are estimates from the template
source (four characters a token): a warning, never a refusal."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from scriptorium.llm.tokens import CHARS_PER_TOKEN
from scriptorium.prompt.cache_marks import MAX_BREAKPOINTS, reads_no_input
from scriptorium.promptdef.model import PromptDefinition

__all__ = ["cache_problems"]


#: The shortest prefix a model caches, in tokens (None: no minimum is known): the profile's
#: provider spec's ``minimum_cacheable_tokens``.
CacheMinimum = Callable[[str], int | None]


def _no_minimum(model: str) -> int | None:
    return None


def cache_problems(
    definition: PromptDefinition, model: str | None, minimum: CacheMinimum = _no_minimum
) -> Iterator[tuple[str, str]]:
    """``(kind, message)`` for each caching warning of ``definition`` run on ``model``, whose
    provider caches prefixes of at least ``minimum(model)`` tokens."""
    mode = definition.cache.mode
    if mode == "explicit":
        yield from _explicit(definition, model, minimum)
    elif mode == "static":
        yield from _static(definition, model, minimum)


def _explicit(
    definition: PromptDefinition, model: str | None, minimum: CacheMinimum
) -> Iterator[tuple[str, str]]:
    marks = [(i, mark) for i, s in enumerate(definition.sections) for mark in s.cache_marks]
    if not marks:
        yield "cache_breakpoints", "cache mode is explicit but the body has no {# cache #} line"
        return
    if len(marks) > MAX_BREAKPOINTS:
        yield (
            "cache_breakpoints",
            f"{len(marks)} cache breakpoints; a request carries at most {MAX_BREAKPOINTS}, "
            f"so the first {len(marks) - MAX_BREAKPOINTS} are dropped",
        )
    for number, (index, mark) in enumerate(marks, start=1):
        before = [s.template for s in definition.sections[:index]]
        before.append(definition.sections[index].template[: mark.offset])
        if not all(reads_no_input(text, definition.artifacts) for text in before if text):
            role = definition.sections[index].role
            yield (
                "cache_after_input",
                f"cache breakpoint {number} (## {role}) follows text that uses the request's "
                "inputs: its prefix differs from run to run and is never reused",
            )
    last_index, last = marks[-1]
    prefix = sum(len(s.template) for s in definition.sections[:last_index]) + last.offset
    yield from _too_short(prefix, model, minimum)


def _static(
    definition: PromptDefinition, model: str | None, minimum: CacheMinimum
) -> Iterator[tuple[str, str]]:
    first = definition.sections[0] if definition.sections else None
    if first is None or first.role != "system":
        yield "cache_after_input", "cache mode is static but the prompt has no ## system section"
        return
    if not reads_no_input(first.template, definition.artifacts):
        yield (
            "cache_after_input",
            "cache mode is static but the system section uses the request's inputs: "
            "nothing is cached",
        )
        return
    yield from _too_short(len(first.template), model, minimum)


def _too_short(chars: int, model: str | None, minimum: CacheMinimum) -> Iterator[tuple[str, str]]:
    least = None if model is None else minimum(model)
    if least is None:
        return
    tokens = chars // CHARS_PER_TOKEN
    if tokens < least:
        yield (
            "cache_too_short",
            f"the cached prefix is about {tokens} tokens; {model} caches prefixes of at least "
            f"{least} tokens, so nothing would be cached",
        )
