"""Prompts that ship inside scriptorium (the judge of ``scriptorium test``, the optimiser of
``scriptorium optimize``): read from this package the bounded way, parsed by the prompt parser
like any project prompt, once per process."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from scriptorium._files import ConfinedDir, FileProblem
from scriptorium._loading import FormatProblem, decode_utf8
from scriptorium.errors import PromptLoadError
from scriptorium.promptdef.parse import parse_prompt

if TYPE_CHECKING:
    from scriptorium.promptdef.model import PromptDefinition

__all__ = ["bundled_prompt"]

_MAX_BYTES = 1 << 20


@functools.cache
def bundled_prompt(filename: str, prompt_id: str) -> PromptDefinition:
    """The prompt file ``filename`` of this package, under ``prompt_id``."""
    directory = ConfinedDir(Path(__file__).parent)
    try:
        text = decode_utf8(directory.read(filename, max_bytes=_MAX_BYTES).data)
    except (FileProblem, FormatProblem) as err:
        raise PromptLoadError(
            f"the bundled prompt {filename} cannot be read ({err}); reinstall scriptorium",
            prompt_id=prompt_id,
            reason="unreadable",
        ) from err
    return parse_prompt(text, prompt_id=prompt_id, source=filename)
