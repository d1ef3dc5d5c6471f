"""Prompt definitions held in memory: for tests and for embedding without a ``prompts/`` folder."""

from __future__ import annotations

from collections.abc import Mapping

from scriptorium.errors import PromptLoadError
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.promptdef.parse import check_prompt_id, parse_prompt

__all__ = ["MemoryRepository"]


class MemoryRepository:
    """Definitions by id, given parsed or as ``.prompt.md`` text.

    Text is parsed on first ``get`` (then kept), so an invalid text fails where a broken file would:
    with ``PromptLoadError`` from ``get``. A definition is stored under its key: its ``id`` is set
    to the key, and its ``source`` defaults to ``<id>.prompt.md``, as the file repository would say.
    """

    def __init__(self, definitions: Mapping[str, PromptDefinition | str] | None = None) -> None:
        self._items: dict[str, PromptDefinition | str] = {}
        for prompt_id, item in (definitions or {}).items():
            self.add(prompt_id, item)

    def add(self, prompt_id: str, definition: PromptDefinition | str) -> None:
        """Store (or replace) a definition or a ``.prompt.md`` text under ``prompt_id``."""
        check_prompt_id(prompt_id)
        if isinstance(definition, PromptDefinition):
            definition = _adopt(prompt_id, definition)
        elif not isinstance(definition, str):
            raise TypeError(f"expected a PromptDefinition or str, got {type(definition).__name__}")
        self._items[prompt_id] = definition

    def get(self, prompt_id: str) -> PromptDefinition:
        """The definition with this id (``InvalidRequestError`` for a malformed id,
        ``PromptLoadError`` when none is stored or its text is invalid)."""
        check_prompt_id(prompt_id)
        item = self._items.get(prompt_id)
        if item is None:
            raise PromptLoadError(
                f"prompt {prompt_id!r}: not found", prompt_id=prompt_id, reason="not_found"
            )
        if isinstance(item, str):
            item = parse_prompt(item, prompt_id=prompt_id, source=_source(prompt_id))
            self._items[prompt_id] = item
        return item

    def list(self) -> list[str]:
        """Every stored id, sorted (invalid texts included: ``get`` reports them)."""
        return sorted(self._items)


def _source(prompt_id: str) -> str:
    return prompt_id + ".prompt.md"


def _adopt(prompt_id: str, definition: PromptDefinition) -> PromptDefinition:
    update: dict[str, str] = {}
    if definition.id != prompt_id:
        update["id"] = prompt_id
    if definition.source is None:
        update["source"] = _source(prompt_id)
    return definition.model_copy(update=update) if update else definition
