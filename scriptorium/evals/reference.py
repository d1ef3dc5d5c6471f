"""The version a test run compares against (``scriptorium test --against REF``).

REF is a directory holding ``prompts/`` (read where it is), or a git revision of the repository
the project is in: its ``prompts/`` and ``profiles/`` at that commit are read with git (``ls-tree``
and ``cat-file``, never ``checkout``) into a temporary directory that is removed afterwards, so
the working tree and the index are never touched. The project may sit in a subdirectory of its
repository; the revision's folders are the ones at the same place.

Profiles: a profile the reference has is taken from it (a version is its prompts and the profiles
they were written for); one it does not have (a profile added since, or a reference directory
with no ``profiles/``) is the project's, so the same cases run on the same profile names on both
sides.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scriptorium.errors import InvalidRequestError, ProfileLoadError
from scriptorium.profile.model import Profile
from scriptorium.profile.repository import Repository as ProfileRepository

__all__ = ["MAX_REFERENCE_BYTES", "Reference", "ReferenceProfiles", "open_reference"]

#: The most the files read from a git revision may hold together.
MAX_REFERENCE_BYTES = 256 << 20
_FOLDERS = ("prompts", "profiles")
_GIT_TIMEOUT_S = 120.0
_REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class Reference:
    """A version to compare against: ``root`` holds its ``prompts/`` (and ``profiles/`` when it
    has them); ``revision`` is the commit read, for a git revision (None for a directory)."""

    given: str
    root: Path
    revision: str | None = None

    @property
    def prompts_dir(self) -> Path:
        return self.root / "prompts"

    @property
    def profiles_dir(self) -> Path | None:
        """Its ``profiles/``, when it has one."""
        found = self.root / "profiles"
        return found if found.is_dir() else None


class ReferenceProfiles:
    """The reference's profiles over the project's: a name the reference has is its own, any
    other the project's."""

    def __init__(self, reference: ProfileRepository | None, project: ProfileRepository) -> None:
        self._reference = reference
        self._project = project

    def get(self, name: str) -> Profile:
        if self._reference is not None:
            try:
                return self._reference.get(name)
            except ProfileLoadError as err:
                if err.reason != "not_found":
                    raise
        return self._project.get(name)

    def list(self) -> list[str]:
        names = set(self._project.list())
        if self._reference is not None:
            names.update(self._reference.list())
        return sorted(names)


def _refused(message: str, ref: str) -> InvalidRequestError:
    return InvalidRequestError(f"--against {ref}: {message}", field="against")


@contextmanager
def open_reference(
    ref: str | os.PathLike[str] | Reference, project: str | os.PathLike[str]
) -> Iterator[Reference]:
    """The version ``ref`` names, for as long as the block runs (a git revision's copy is
    removed after). A directory holding ``prompts/`` (relative to the working directory) is taken
    as it is; anything else is a git revision of the repository holding ``project`` (a directory
    without ``prompts/`` that is no revision either is refused as such).
    ``InvalidRequestError(field="against")`` when it is neither. A :class:`Reference` already
    open (read once for many runs) is used as it is."""
    if isinstance(ref, Reference):
        yield ref
        return
    given = os.fspath(ref)
    if not given or "\x00" in given:
        raise _refused("not a directory or a git revision", given or "''")
    directory = Path(given)
    if (directory / "prompts").is_dir():
        yield Reference(given=given, root=directory.resolve())
        return
    try:
        top, prefix = _repository(given, Path(project))
        revision = _revision(given, top)
    except InvalidRequestError as err:
        if directory.is_dir():  # a folder was meant (a revision of that name would have won)
            raise _refused("the directory holds no prompts/", given) from err
        raise
    with tempfile.TemporaryDirectory(prefix="scriptorium-against-") as temporary:
        root = Path(temporary)
        _extract(given, top, revision, prefix, root)
        if not (root / "prompts").is_dir():
            raise _refused(f"revision {revision[:12]} has no {prefix}prompts/", given)
        yield Reference(given=given, root=root, revision=revision)


def _git(args: list[str], cwd: Path, ref: str, *, stdin: bytes | None = None) -> bytes:
    executable = shutil.which("git")
    if executable is None:
        raise _refused("not a directory, and git is not installed to read a revision", ref)
    try:
        done = subprocess.run(
            [executable, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise _refused(f"git could not run ({err.__class__.__name__})", ref) from err
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit {done.returncode}"
        raise _refused(f"git {args[0]}: {detail[:300]}", ref)
    return done.stdout


def _repository(ref: str, project: Path) -> tuple[Path, str]:
    """The repository's top folder and the project's path inside it (``""`` or ``a/b/``)."""
    try:
        out = _git(["rev-parse", "--show-toplevel"], project, ref)
    except InvalidRequestError as err:
        raise _refused(
            "not a directory holding prompts/, and the project is not in a git repository",
            ref,
        ) from err
    top = Path(out.decode("utf-8", "surrogateescape").strip()).resolve()
    inside = os.path.relpath(project.resolve(), top).replace(os.sep, "/")
    if inside == "." or inside == "":
        return top, ""
    if inside.startswith("../"):
        raise _refused("the project is not inside its git repository's top folder", ref)
    return top, inside + "/"


def _revision(ref: str, top: Path) -> str:
    if ref.startswith("-"):
        raise _refused("a revision does not start with '-'", ref)
    try:
        out = _git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"], top, ref
        )
    except InvalidRequestError as err:
        raise _refused(
            "not a directory, nor a revision of the project's git repository", ref
        ) from err
    return out.decode("ascii", "replace").strip()


def _extract(ref: str, top: Path, revision: str, prefix: str, root: Path) -> None:
    """Write the revision's ``prompts/`` and ``profiles/`` under ``root`` (regular files only:
    links and submodules are left out)."""
    listing = _git(
        ["ls-tree", "-r", "-z", "--full-tree", revision, "--", *(prefix + f for f in _FOLDERS)],
        top,
        ref,
    )
    wanted: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode not in _REGULAR or not path.startswith(prefix):
            continue
        relative = posixpath.normpath(path[len(prefix) :])
        if relative.startswith(("../", "/")) or relative.split("/")[0] not in _FOLDERS:
            continue
        wanted.append((oid, relative))
    if not wanted:
        return
    out = _git(
        ["cat-file", "--batch"], top, ref, stdin=b"".join(f"{o}\n".encode() for o, _ in wanted)
    )
    offset, total = 0, 0
    for oid, relative in wanted:
        header_end = out.index(b"\n", offset)
        header = out[offset:header_end].decode("ascii").split()
        if len(header) != 3 or header[0] != oid:
            raise _refused(f"git cat-file answered out of order at {relative}", ref)
        size = int(header[2])
        total += size
        if total > MAX_REFERENCE_BYTES:
            raise _refused(
                f"its prompts/ and profiles/ hold more than {MAX_REFERENCE_BYTES} bytes", ref
            )
        start = header_end + 1
        target = root.joinpath(*relative.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[start : start + size])
        offset = start + size + 1  # the newline after the content
