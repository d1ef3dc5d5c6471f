"""Reading a confined file again skips re-resolving it only while it is provably the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium._files import ConfinedDir, FileProblem


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "root" / "docs").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "root" / "docs" / "a.txt").write_text("inside")
    (tmp_path / "outside" / "a.txt").write_text("secret")
    return tmp_path


def test_a_directory_swapped_for_a_link_outside_is_refused(tree: Path) -> None:
    """After a first read, replacing a parent directory by a link out of the root is caught."""
    confined = ConfinedDir(tree / "root")
    assert confined.read("docs/a.txt", max_bytes=None).data == b"inside"
    (tree / "root" / "docs").rename(tree / "root" / "old-docs")
    (tree / "root" / "docs").symlink_to(tree / "outside")
    with pytest.raises(FileProblem) as caught:
        confined.read("docs/a.txt", max_bytes=None)
    assert caught.value.kind == "outside"


def test_a_rewritten_file_is_read_afresh(tree: Path) -> None:
    """New content in place is what the next read returns."""
    confined = ConfinedDir(tree / "root")
    assert confined.read("docs/a.txt", max_bytes=None).data == b"inside"
    (tree / "root" / "docs" / "a.txt").write_text("changed")
    assert confined.read("docs/a.txt", max_bytes=None).data == b"changed"


def test_a_file_replaced_by_another_is_read_afresh_and_bounds_still_apply(tree: Path) -> None:
    """A new file under the same name (new inode) goes the full way, size limit included."""
    confined = ConfinedDir(tree / "root")
    confined.read("docs/a.txt", max_bytes=10)
    replacement = tree / "root" / "docs" / "b.txt"
    replacement.write_text("x" * 50)
    replacement.replace(tree / "root" / "docs" / "a.txt")
    with pytest.raises(FileProblem) as caught:
        confined.read("docs/a.txt", max_bytes=10)
    assert caught.value.kind == "too_large"


def test_a_deleted_file_is_missing(tree: Path) -> None:
    """The remembered path does not outlive the file."""
    confined = ConfinedDir(tree / "root")
    confined.read("docs/a.txt", max_bytes=None)
    (tree / "root" / "docs" / "a.txt").unlink()
    with pytest.raises(FileProblem) as caught:
        confined.read("docs/a.txt", max_bytes=None)
    assert caught.value.kind == "missing"
