"""The project's files as ``check`` reads them: confined to their directory, regular files only,
bounded in size; shown relative to the project root; links that lead outside reported."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from scriptorium._files import ConfinedDir, FileProblem
from scriptorium.check.problems import Problem
from scriptorium.check.view import ProjectView

__all__ = ["MAX_CHECKED_BYTES", "ProjectFiles", "read_text"]

#: The most ``check`` reads of one prompt or profile file (the repositories refuse larger ones).
MAX_CHECKED_BYTES = 4 << 20


class ProjectFiles:
    """The prompt and profile directories of a project view, read the one bounded way."""

    def __init__(self, view: ProjectView) -> None:
        self.root = Path(view.root)
        self.prompts_dir = Path(view.prompts_dir)
        self.profiles_dir = Path(view.profiles_dir)
        # Every file check reads goes through these: confined, regular files only, bounded.
        self.prompt_files = ConfinedDir(self.prompts_dir)
        self.profile_files = ConfinedDir(self.profiles_dir)

    def shown(self, path: Path) -> str:
        """``path`` relative to the project root, with forward slashes."""
        try:
            return Path(os.path.relpath(path, self.root)).as_posix()
        except ValueError:  # another drive
            return path.as_posix()

    def link_problems(self, directory: ConfinedDir, relative: str, where: str) -> Iterator[Problem]:
        """A file or folder that is a link leading outside ``directory`` (or nowhere)."""
        path = Path(directory.path) / relative
        if not path.is_symlink():
            return
        try:
            directory.resolve(relative)
        except FileProblem as err:
            if err.kind in ("outside", "missing"):
                why = "leads outside" if err.kind == "outside" else "is a broken link under"
                yield Problem(
                    self.shown(path),
                    "link_outside",
                    f"this symlink {why} {where}; it is never loaded",
                )


def read_text(directory: ConfinedDir, relative: str) -> str | None:
    """A file under ``directory`` read the one bounded way (None when it cannot be read: the
    repository reports why)."""
    try:
        data = directory.read(relative, max_bytes=MAX_CHECKED_BYTES).data
    except FileProblem:
        return None
    return data.decode("utf-8", errors="replace")
