"""Artifacts: the model, the reader port and its adapters."""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.artifact.model import Artifact, ArtifactContent, is_textual
from scriptorium.artifact.reader import Reader

if TYPE_CHECKING:
    from scriptorium.artifact.files import FileReader
    from scriptorium.artifact.memory import MemoryReader

__all__ = ["Artifact", "ArtifactContent", "FileReader", "MemoryReader", "Reader", "is_textual"]

__getattr__ = lazy_getattr(__name__, {"FileReader": "files", "MemoryReader": "memory"})
