"""The optional ``title`` of a prompt: read from the front matter, hashed only when given."""

from __future__ import annotations

from scriptorium.promptdef.parse import parse_prompt

BODY = "## user\nHello.\n"


def test_the_title_is_read_from_the_front_matter() -> None:
    definition = parse_prompt(f"---\ntitle: Greeting\n---\n{BODY}", prompt_id="p")
    assert definition.title == "Greeting"
    assert definition.hash_form()["title"] == "Greeting"


def test_a_prompt_without_a_title_hashes_as_it_always_did() -> None:
    definition = parse_prompt(f"---\ndescription: d\n---\n{BODY}", prompt_id="p")
    assert definition.title is None
    assert "title" not in definition.hash_form()
