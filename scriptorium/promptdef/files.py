"""Prompt definitions read from a ``prompts/`` directory: ``<id>.prompt.md``, nested ids in folders."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable
from pathlib import Path

from scriptorium._files import ConfinedDir, FileProblem, FileSignature, signature
from scriptorium._loading import FormatProblem, decode_utf8, load_reason
from scriptorium._suggest import did_you_mean
from scriptorium.errors import PromptLoadError, translate
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id
from scriptorium.promptdef.parse import check_prompt_id, parse_prompt

__all__ = ["MAX_PROMPT_BYTES", "SUFFIX", "FileRepository", "ids_with_suffix", "read_text"]

SUFFIX = ".prompt.md"
#: A prompt file larger than this is refused: definitions are hand-written, not data.
MAX_PROMPT_BYTES = 4 << 20
# An id has at most four parts, so nothing deeper than three folders can hold a prompt.
_MAX_DEPTH = 3


class FileRepository:
    """Reads ``<root>/<id>.prompt.md``, confined to ``root`` (symlinks may not lead outside it).

    Parsed definitions are cached per id and reused while the file's size, times and inode are
    unchanged, so a repeated ``get`` costs one ``stat``. The constructor does no I/O.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._dir = ConfinedDir(root)
        self._cache: dict[str, tuple[FileSignature, PromptDefinition]] = {}

    @property
    def root(self) -> Path:
        """The ``prompts/`` directory."""
        return self._dir.path

    def get(self, prompt_id: str) -> PromptDefinition:
        """The definition with this id: ``InvalidRequestError`` for a malformed id (before any path
        is built), ``PromptLoadError`` when the file is missing, outside the root or invalid."""
        check_prompt_id(prompt_id)
        relative = prompt_id + SUFFIX
        with translate(PromptLoadError, f"loading prompt {prompt_id!r}", prompt_id=prompt_id):
            cached = self._cache.get(prompt_id)
            if cached is not None and cached[0] == self._dir.current(relative):
                return cached[1]
            definition, version = self._load(prompt_id, relative)
            self._cache[prompt_id] = (version, definition)
            return definition

    def list(self) -> list[str]:
        """Every id with a file under the root that resolves inside it, sorted. Symlinked folders
        are not walked (their prompts can still be loaded by id)."""
        return ids_with_suffix(self._dir, SUFFIX)

    def _listed(self) -> builtins.list[str]:
        """What :meth:`list` finds, or nothing when the directory cannot be read (for a
        suggestion in a not-found message, which must not fail on its own)."""
        try:
            return self.list()
        except OSError:
            return []

    def _load(self, prompt_id: str, relative: str) -> tuple[PromptDefinition, FileSignature]:
        text, version = read_text(
            self._dir,
            relative,
            prompt_id=prompt_id,
            max_bytes=MAX_PROMPT_BYTES,
            subject=f"prompt {prompt_id!r}",
            invalid=f"prompt {prompt_id!r}: {relative}",
            hint=lambda: did_you_mean(prompt_id, self._listed()),
        )
        return parse_prompt(text, prompt_id=prompt_id, source=relative), version


def ids_with_suffix(directory: ConfinedDir, suffix: str) -> list[str]:
    """The id of every ``<id><suffix>`` file under ``directory`` that resolves inside it, sorted.
    Symlinked folders are not walked, nor anything deeper than an id's parts allow; a file whose
    name is not a valid id is left out (``check`` reports it)."""
    ids: list[str] = []
    root = directory.path
    for folder, dirnames, filenames in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        dirnames[:] = [] if depth >= _MAX_DEPTH else sorted(dirnames)
        for filename in filenames:
            if not filename.endswith(suffix):
                continue
            relative = (Path(folder) / filename).relative_to(root).as_posix()
            prompt_id = relative.removesuffix(suffix)
            if is_valid_prompt_id(prompt_id) and directory.resolves_inside(relative):
                ids.append(prompt_id)
    return sorted(ids)


def read_text(
    directory: ConfinedDir,
    relative: str,
    *,
    prompt_id: str,
    max_bytes: int,
    subject: str,
    invalid: str,
    hint: Callable[[], str] = lambda: "",
) -> tuple[str, FileSignature]:
    """The UTF-8 text of one file under ``directory`` and its signature, bounded by ``max_bytes``.
    Every problem is a ``PromptLoadError`` naming the file: ``subject`` opens the message of a
    file that cannot be read (missing, outside, too large), ``invalid`` that of one that is not
    text; ``hint`` is added to a not-found message (and called only then)."""
    try:
        read = directory.read(relative, max_bytes=max_bytes)
        text = decode_utf8(read.data)
    except FileProblem as err:
        why = (
            f"not found (looked for {relative} in {os.path.abspath(directory.path)})" + hint()
            if err.kind == "missing"
            else str(err)
        )
        raise PromptLoadError(
            f"{subject}: {why}", prompt_id=prompt_id, path=relative, reason=load_reason(err.kind)
        ) from err
    except FormatProblem as err:
        raise PromptLoadError(
            f"{invalid} is {err}", prompt_id=prompt_id, path=relative, reason="invalid"
        ) from err
    return text, signature(read.stat)
