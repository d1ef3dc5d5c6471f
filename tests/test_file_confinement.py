"""Files are read only from inside their root: symlinks, ``..`` and absolute paths cannot lead out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.artifact import FileReader
from scriptorium.errors import (
    ArtifactLoadError,
    InvalidRequestError,
    ProfileLoadError,
    PromptLoadError,
)
from scriptorium.profile import FileRepository as ProfileFiles
from scriptorium.promptdef import FileRepository as PromptFiles

PROMPT = "---\ndescription: inside\n---\nHi\n"
SECRET_PROMPT = "---\ndescription: SECRET\n---\nleaked\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with prompts/, profiles/ and data/, plus an ``outside/`` folder next to them."""
    for name in ("prompts", "profiles", "data", "outside"):
        (tmp_path / name).mkdir()
    (tmp_path / "prompts" / "ok.prompt.md").write_text(PROMPT)
    (tmp_path / "profiles" / "ok.yaml").write_text("provider: fake\n")
    (tmp_path / "data" / "ok.txt").write_text("inside")
    (tmp_path / "outside" / "secret.prompt.md").write_text(SECRET_PROMPT)
    (tmp_path / "outside" / "secret.yaml").write_text("provider: fake\nmodel: SECRET\n")
    (tmp_path / "outside" / "secret.txt").write_text("SECRET")
    return tmp_path


def test_a_prompt_symlink_leading_outside_is_refused(project: Path) -> None:
    """A link in prompts/ to a file elsewhere fails to load and is left out of list()."""
    (project / "prompts" / "evil.prompt.md").symlink_to(project / "outside" / "secret.prompt.md")
    repo = PromptFiles(project / "prompts")
    with pytest.raises(PromptLoadError, match="outside") as info:
        repo.get("evil")
    assert "SECRET" not in str(info.value)
    assert repo.list() == ["ok"]


def test_a_symlinked_folder_leading_outside_is_refused(project: Path) -> None:
    """A nested id under a linked folder that points out of prompts/ fails to load."""
    (project / "prompts" / "ext").symlink_to(project / "outside", target_is_directory=True)
    with pytest.raises(PromptLoadError, match="outside"):
        PromptFiles(project / "prompts").get("ext/secret")


def test_symlinks_that_stay_inside_are_followed(project: Path) -> None:
    """A link to another file inside prompts/ is an ordinary alias."""
    (project / "prompts" / "alias.prompt.md").symlink_to(project / "prompts" / "ok.prompt.md")
    repo = PromptFiles(project / "prompts")
    assert repo.get("alias").description == "inside"
    assert repo.list() == ["alias", "ok"]


def test_a_cached_prompt_retargeted_outside_is_refused(project: Path) -> None:
    """The cache never serves a file whose link now points out of the root."""
    link = project / "prompts" / "moving.prompt.md"
    link.symlink_to(project / "prompts" / "ok.prompt.md")
    repo = PromptFiles(project / "prompts")
    assert repo.get("moving").description == "inside"
    link.unlink()
    link.symlink_to(project / "outside" / "secret.prompt.md")
    with pytest.raises(PromptLoadError, match="outside"):
        repo.get("moving")


def test_an_edited_prompt_is_read_again(project: Path) -> None:
    """A change to the file (size or mtime) invalidates the cached definition."""
    path = project / "prompts" / "ok.prompt.md"
    repo = PromptFiles(project / "prompts")
    assert repo.get("ok").description == "inside"
    path.write_text("---\ndescription: edited and longer\n---\nHi\n")
    assert repo.get("ok").description == "edited and longer"


def test_a_symlink_loop_is_a_load_error(project: Path) -> None:
    """A link pointing at itself fails cleanly instead of looping."""
    loop = project / "prompts" / "loop.prompt.md"
    loop.symlink_to(loop)
    with pytest.raises(PromptLoadError):
        PromptFiles(project / "prompts").get("loop")


@pytest.mark.parametrize("bad_id", ["../outside/secret", "/etc/passwd", "ok/../../outside/secret"])
def test_prompt_ids_cannot_spell_paths(project: Path, bad_id: str) -> None:
    """Traversal and absolute paths are refused by the id grammar, before any file access."""
    with pytest.raises(InvalidRequestError):
        PromptFiles(project / "prompts").get(bad_id)


def test_a_profile_symlink_leading_outside_is_refused(project: Path) -> None:
    """A linked profile pointing out of profiles/ fails to load and is not listed."""
    (project / "profiles" / "evil.yaml").symlink_to(project / "outside" / "secret.yaml")
    repo = ProfileFiles(project / "profiles")
    with pytest.raises(ProfileLoadError, match="outside"):
        repo.get("evil")
    assert repo.list() == ["ok"]


def test_profile_names_cannot_spell_paths(project: Path) -> None:
    """A profile name with a slash or dots is an invalid request."""
    with pytest.raises(InvalidRequestError):
        ProfileFiles(project / "profiles").get("../outside/secret")


def test_both_profile_extensions_at_once_are_ambiguous(project: Path) -> None:
    """``x.yaml`` and ``x.yml`` side by side is an error, not a silent pick."""
    (project / "profiles" / "ok.yml").write_text("provider: fake\n")
    with pytest.raises(ProfileLoadError, match="keep one"):
        ProfileFiles(project / "profiles").get("ok")


def test_a_yml_profile_is_found(project: Path) -> None:
    """``.yml`` works where ``.yaml`` is absent, and the source is the file's absolute path."""
    (project / "profiles" / "short.yml").write_text("provider: fake\n")
    profile = ProfileFiles(project / "profiles").get("short")
    assert profile.source == str(project / "profiles" / "short.yml")
    assert ProfileFiles(project / "profiles").list() == ["ok", "short"]


def test_an_artifact_symlink_leading_outside_is_refused(project: Path) -> None:
    """A link in the artifact root to a file elsewhere is refused without reading it."""
    (project / "data" / "evil.txt").symlink_to(project / "outside" / "secret.txt")
    (project / "data" / "dir").symlink_to(project / "outside", target_is_directory=True)
    reader = FileReader(project / "data")
    for ref in ("evil.txt", "dir/secret.txt"):
        with pytest.raises(ArtifactLoadError, match="outside") as info:
            reader.read(ref)
        assert "SECRET" not in str(info.value)


@pytest.mark.parametrize(
    "ref",
    ["../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd", "", "ok.txt\x00"],
)
def test_artifact_references_cannot_leave_the_root(project: Path, ref: str) -> None:
    """``..`` leading out, absolute paths, empty references and NUL bytes are refused."""
    with pytest.raises(ArtifactLoadError):
        FileReader(project / "data").read(ref)


def test_an_absolute_path_inside_the_root_is_still_refused(project: Path) -> None:
    """References are always relative, even when an absolute one would land inside."""
    with pytest.raises(ArtifactLoadError, match="absolute"):
        FileReader(project / "data").read(str(project / "data" / "ok.txt"))


def test_directories_and_fifos_are_not_artifacts(project: Path) -> None:
    """Only regular files are read; a FIFO is refused instead of blocking the reader."""
    (project / "data" / "sub").mkdir()
    os.mkfifo(project / "data" / "pipe.txt")
    reader = FileReader(project / "data")
    for ref in ("sub", ".", "pipe.txt"):
        with pytest.raises(ArtifactLoadError, match="not a regular file"):
            reader.read(ref)


def test_an_oversize_artifact_is_refused_before_reading(project: Path) -> None:
    """The default limit applies when none is declared; a declared one overrides it."""
    (project / "data" / "big.txt").write_bytes(b"x" * 100)
    with pytest.raises(ArtifactLoadError, match="larger than 10 bytes"):
        FileReader(project / "data", max_bytes=10).read("big.txt")
    assert FileReader(project / "data", max_bytes=10).read("big.txt", max_bytes=100).size == 100


@settings(max_examples=200, deadline=None)
@given(ref=st.text(alphabet="./\\\x00:aboksecrt-xC~", max_size=40) | st.text(max_size=20))
def test_any_reference_reads_inside_or_fails_cleanly(
    tmp_path_factory: pytest.TempPathFactory, ref: str
) -> None:
    """Any reference yields an artifact from inside the root or ArtifactLoadError; never the secret."""
    base = tmp_path_factory.getbasetemp() / "fuzz-artifacts"
    if not base.exists():
        (base / "data" / "sub").mkdir(parents=True)
        (base / "data" / "ok.txt").write_text("inside")
        (base / "secret.txt").write_text("SECRET")
    reader = FileReader(base / "data")
    try:
        artifact = reader.read(ref, media_type="text/*")
    except ArtifactLoadError:
        return
    assert artifact.text == "inside"
