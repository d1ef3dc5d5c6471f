"""Test files read from a project: ``prompts/<id>.tests.yaml`` beside each prompt, and the artifact
files their cases name.

Everything goes through the one bounded, confined way the project reads files: a tests file must
be a regular file inside ``prompts/`` once links are followed; an artifact path is relative to its
tests file and must stay inside the project (the directory holding ``prompts/``).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from scriptorium._files import ConfinedDir, FileProblem, FileSignature
from scriptorium._suggest import did_you_mean
from scriptorium.artifact.model import ArtifactContent
from scriptorium.errors import ArtifactLoadError, PromptLoadError
from scriptorium.evals.dataset import with_dataset
from scriptorium.evals.model import SUFFIX, Case, TestsFile, TextArtifact
from scriptorium.evals.parse import parse_tests
from scriptorium.evals.paths import artifact_path
from scriptorium.promptdef.files import ids_with_suffix, read_text
from scriptorium.promptdef.parse import check_prompt_id

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_TESTS_BYTES",
    "TestFiles",
    "artifact_path",
    "case_artifacts",
]

#: A tests file larger than this is refused: cases are written by hand.
MAX_TESTS_BYTES = 4 << 20
#: The most one artifact file of a case may hold (the prompt's ``max_bytes`` is checked after).
MAX_ARTIFACT_BYTES = 64 << 20


class TestFiles:
    """The tests files under a ``prompts/`` directory (the project is its parent). Parsed files
    are kept while the file's signature is unchanged. The constructor does no I/O."""

    __test__ = False

    def __init__(self, prompts_dir: str | os.PathLike[str]) -> None:
        self._dir = ConfinedDir(prompts_dir)
        # The file's signature, its dataset's stamp, the file as parsed, the cases it holds.
        self._cache: dict[str, tuple[FileSignature, object, TestsFile, TestsFile]] = {}

    @property
    def root(self) -> Path:
        """The ``prompts/`` directory."""
        return self._dir.path

    @property
    def project(self) -> Path:
        """The project directory: artifact paths may lead anywhere inside it."""
        return self._dir.path.parent

    def list(self) -> list[str]:
        """The id of every prompt with a tests file that resolves inside ``prompts/``, sorted
        (a tests file whose name is not a valid id is left out: ``check`` reports it)."""
        if not self._dir.path.is_dir():
            return []
        return ids_with_suffix(self._dir, SUFFIX)

    def get(self, prompt_id: str) -> TestsFile:
        """The tests of ``prompt_id``: ``PromptLoadError`` (``path`` the tests file) when the file
        is missing, outside ``prompts/``, too large, not UTF-8 or invalid."""
        check_prompt_id(prompt_id)
        relative = prompt_id + SUFFIX
        cached = self._cache.get(prompt_id)
        if (
            cached is not None
            and cached[0] == self._dir.current(relative)
            and cached[1] == self._dataset_stamp(cached[2])
        ):
            return cached[3]
        try:
            text, version = read_text(
                self._dir,
                relative,
                prompt_id=prompt_id,
                max_bytes=MAX_TESTS_BYTES,
                subject=f"tests of prompt {prompt_id!r}",
                invalid=f"tests file prompts/{relative}",
            )
        except PromptLoadError as err:
            hint = did_you_mean(prompt_id, self.list()) if err.reason == "not_found" else ""
            if not hint:
                raise
            raise PromptLoadError(
                err.message + hint, prompt_id=prompt_id, path=err.path, reason=err.reason
            ) from err
        parsed = parse_tests(text, prompt_id=prompt_id, source=relative)
        stamp = self._dataset_stamp(parsed)
        tests = with_dataset(parsed, self.project)
        self._cache[prompt_id] = (version, stamp, parsed, tests)
        return tests

    def _dataset_stamp(self, tests: TestsFile) -> object:
        """What tells a changed dataset file (size, time, inode); None without a dataset."""
        if tests.dataset is None:
            return None
        try:
            found = os.stat(self.project / artifact_path(tests, tests.dataset.path))
        except (OSError, ValueError):
            return "unreadable"
        return (found.st_size, found.st_mtime_ns, found.st_ino)


def case_artifacts(
    tests: TestsFile, case: Case, project: str | os.PathLike[str]
) -> dict[str, str | ArtifactContent]:
    """The artifacts of a run of ``case``, each as content: a file is read here (confined to the
    project, at most :data:`MAX_ARTIFACT_BYTES`) and named by its file name, so the run checks
    and hashes it as it would the same file given by path. ``ArtifactLoadError`` naming the
    artifact when a file cannot be read."""
    directory = ConfinedDir(project)
    artifacts: dict[str, str | ArtifactContent] = {}
    for name, ref in case.artifacts.items():
        if isinstance(ref, TextArtifact):
            artifacts[name] = ArtifactContent(ref.text)
            continue
        try:
            relative = artifact_path(tests, ref)
            data = directory.read(relative, max_bytes=MAX_ARTIFACT_BYTES).data
        except (ValueError, FileProblem) as err:
            reason = "not_found" if isinstance(err, FileProblem) and err.kind == "missing" else None
            raise ArtifactLoadError(
                f"tests file prompts/{tests.source}, case {case.name!r}: artifact {name!r}: {err}",
                prompt_id=tests.prompt_id,
                artifact=name,
                path=tests.source,
                reason=reason,
            ) from err
        artifacts[name] = ArtifactContent(data, filename=posixpath.basename(relative))
    return artifacts
