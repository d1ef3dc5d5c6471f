"""Prompt definitions (``prompts/<id>.prompt.md``): the model, the repository port and its adapters."""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.promptdef.model import (
    PROMPT_ID_PATTERN,
    ArtifactSpec,
    OutputSpec,
    PromptDefinition,
    Section,
    is_valid_prompt_id,
)
from scriptorium.promptdef.repository import Repository

if TYPE_CHECKING:
    from scriptorium.promptdef.files import FileRepository
    from scriptorium.promptdef.memory import MemoryRepository

__all__ = [
    "PROMPT_ID_PATTERN",
    "ArtifactSpec",
    "FileRepository",
    "MemoryRepository",
    "OutputSpec",
    "PromptDefinition",
    "Repository",
    "Section",
    "is_valid_prompt_id",
]

__getattr__ = lazy_getattr(__name__, {"FileRepository": "files", "MemoryRepository": "memory"})
