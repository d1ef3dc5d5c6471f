"""``scriptorium check`` and media artifacts: ``.text`` of an image or PDF is reported, a ``.block``
of a text artifact too, and media a template leaves unplaced are not "unused" (they are sent)."""

from __future__ import annotations

from pathlib import Path

from scriptorium import Engine
from scriptorium.check.problems import KINDS
from scriptorium.check.project import check_project


def engine_with(root: Path, front: str, body: str) -> Engine:
    (root / "profiles").mkdir()
    (root / "prompts").mkdir()
    (root / "profiles" / "good.yaml").write_text("provider: fake\noptions: {responses: [ok]}\n")
    text = f"---\nprofile: good\nartifacts:\n{front}---\n## user\n{body}\n"
    (root / "prompts" / "p.prompt.md").write_text(text)
    return Engine(root)


def test_reading_text_of_a_media_artifact_is_reported(tmp_path: Path) -> None:
    """Attribute and subscript forms are both seen; image/* counts as media."""
    engine = engine_with(
        tmp_path,
        "  scan: {media_type: 'image/*'}\n  doc: {media_type: application/pdf}\n",
        '{{ artifacts.scan.text }} {{ artifacts["doc"]["text"] }}',
    )
    problems = check_project(engine)
    assert [(p.kind, p.file) for p in problems] == [("media_text", "prompts/p.prompt.md")] * 2
    assert "artifacts.doc.text" in problems[0].message
    assert "{{ artifacts.doc.block }}" in problems[0].message
    assert "media_text" in KINDS


def test_a_block_of_a_text_artifact_is_reported(tmp_path: Path) -> None:
    """Only images and PDFs have a block."""
    engine = engine_with(
        tmp_path, "  notes: {media_type: 'text/*'}\n", "{{ artifacts.notes.block }}"
    )
    assert [p.kind for p in check_project(engine)] == ["media_block"]


def test_placed_and_unplaced_media_are_clean(tmp_path: Path) -> None:
    """A placed block is fine; an unplaced media artifact is sent first, so it is not unused."""
    engine = engine_with(
        tmp_path,
        "  scan: {media_type: image/png}\n  doc: {media_type: application/pdf}\n",
        "{{ artifacts.scan.block }} What does the document say?",
    )
    assert check_project(engine) == []


def test_a_malformed_options_media_is_reported(tmp_path: Path) -> None:
    """options.media lists image and pdf only."""
    engine = engine_with(
        tmp_path, "  scan: {media_type: image/png}\n", "{{ artifacts.scan.block }}"
    )
    (tmp_path / "profiles" / "local.yaml").write_text(
        "provider: openai\nmodel: llava\nendpoint: http://127.0.0.1:8080/v1\n"
        "api_key_env: LOCAL_KEY\noptions: {media: [image, video]}\n"
    )
    problems = check_project(engine)
    assert [(p.file, p.kind) for p in problems] == [("profiles/local.yaml", "profile_invalid")]
    assert "options.media" in problems[0].message
