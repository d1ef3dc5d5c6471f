"""The ``.prompt.md`` format: front matter rules and how a body splits into role sections."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import InvalidRequestError, PromptLoadError
from scriptorium.hashing import canonical_json
from scriptorium.promptdef import Section
from scriptorium.promptdef.parse import parse_prompt, split_sections


def _roles(body: str) -> list[tuple[str, str]]:
    return [(s.role, s.template) for s in split_sections(body)]


def test_a_body_without_role_lines_is_one_user_message() -> None:
    """No role line: the whole (trimmed) body is the user message."""
    assert _roles("\n\nSummarize {{ text }}.\n\n") == [("user", "Summarize {{ text }}.")]


def test_role_lines_open_sections_in_order() -> None:
    """system, user and assistant sections come back in file order."""
    body = "## system\nBe brief.\n## user\nHi\n## assistant\n{\n## user\nMore\n"
    assert _roles(body) == [
        ("system", "Be brief."),
        ("user", "Hi"),
        ("assistant", "{"),
        ("user", "More"),
    ]


def test_only_blank_lines_at_a_section_edge_are_trimmed() -> None:
    """Leading/trailing blank lines go; indentation and inner blank lines stay."""
    body = "## user\n\n   \n  indented\n\n  second  \n\n\n"
    assert _roles(body) == [("user", "  indented\n\n  second  ")]


def test_role_lines_allow_trailing_blanks_only() -> None:
    """``## user  `` is a role line; other spellings are ordinary text."""
    body = "## user \t\nHi\n##user\n## User\n ## user\n### user\n## user please\n"
    assert _roles(body) == [
        ("user", "Hi\n##user\n## User\n ## user\n### user\n## user please"),
    ]


def test_windows_line_endings_split_the_same_way() -> None:
    """CRLF files give the same sections as LF files."""
    assert split_sections("## system\r\nA\r\n## user\r\nB\r\n") == split_sections(
        "## system\nA\n## user\nB\n"
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "empty"),
        ("  \n\n", "empty"),
        ("Intro\n## user\nHi\n", "before the first role line"),
        ("## user\n\n\n## assistant\nx\n", r"section 1 \(## user\) is empty"),
        ("## user\nHi\n## system\nLate\n", "## system may appear only once"),
        ("## system\nA\n## system\nB\n## user\nC\n", "## system may appear only once"),
        ("## system\nOnly instructions\n", "no ## user or ## assistant"),
    ],
)
def test_malformed_bodies_are_refused(body: str, reason: str) -> None:
    """Structure errors are PromptLoadError with a reason, never a silent drop."""
    with pytest.raises(PromptLoadError, match=reason):
        split_sections(body)


def test_template_output_cannot_create_a_message() -> None:
    """Splitting reads the source only: a variable that will hold ``## user`` stays in its section."""
    definition = parse_prompt("## user\n{{ document }}\n", prompt_id="p")
    assert definition.sections == (Section(role="user", template="{{ document }}"),)


def test_a_file_without_front_matter_is_all_body() -> None:
    """No leading ``---``: defaults for every front matter field."""
    definition = parse_prompt("Hello\n---\nworld\n", prompt_id="p")
    assert definition.description is None
    assert definition.output.format == "text"
    assert definition.sections == (Section(role="user", template="Hello\n---\nworld"),)


def test_empty_front_matter_means_defaults() -> None:
    """``---`` directly followed by ``---`` is allowed and changes nothing."""
    assert parse_prompt("---\n---\nHi\n", prompt_id="p") == parse_prompt("Hi", prompt_id="p")


def test_byte_order_mark_and_line_endings_do_not_change_the_definition() -> None:
    """A BOM or CRLF endings give the same definition, hence the same hash."""
    text = "---\ndescription: d\n---\n## user\nHi\n"
    crlf = "\ufeff" + text.replace("\n", "\r\n")
    assert parse_prompt(crlf, prompt_id="p") == parse_prompt(text, prompt_id="p")


def test_source_and_id_are_set_by_the_caller() -> None:
    """The id and source come from the arguments, and the file may not set them."""
    definition = parse_prompt("Hi", prompt_id="a/b", source="a/b.prompt.md")
    assert (definition.id, definition.source) == ("a/b", "a/b.prompt.md")
    for key in ("id", "source", "sections"):
        with pytest.raises(PromptLoadError, match=f"unknown key '{key}'"):
            parse_prompt(f"---\n{key}: x\n---\nHi\n", prompt_id="p")


def test_dates_stay_strings_so_the_definition_has_a_json_form() -> None:
    """YAML timestamps are not turned into datetimes: every definition hashes canonically."""
    text = "---\nversion: 2024-05-01\ninputs: {default: 2024-05-01T10:00:00}\n---\nHi\n"
    definition = parse_prompt(text, prompt_id="p")
    assert definition.version == "2024-05-01"
    assert canonical_json(definition.hash_form())


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ("a: &x 1\nb: *x", "aliases"),
        ("version: 1\nversion: 2", "duplicate key"),
        ("inputs: {maximum: .inf}", "non-finite"),
        ("inputs: {1: x}", "keys must be strings"),
        ("inputs: {blob: !!binary aGk=}", "explicit tags"),
        ("profile: Not A Name", "profile"),
        ("description: [", "invalid YAML at line 2"),
    ],
)
def test_front_matter_outside_plain_json_data_is_refused(front: str, reason: str) -> None:
    """Aliases, duplicate keys and non-JSON values are PromptLoadError with a located reason."""
    with pytest.raises(PromptLoadError, match=reason) as info:
        parse_prompt(f"---\n{front}\n---\nHi\n", prompt_id="p", source="p.prompt.md")
    assert (info.value.prompt_id, info.value.path) == ("p", "p.prompt.md")
    assert info.value.__cause__ is not None


def test_validation_messages_do_not_echo_values() -> None:
    """A rejected value is reported by location and rule, not repeated back."""
    with pytest.raises(PromptLoadError) as info:
        parse_prompt("---\noutput: {format: marmalade-format}\n---\nHi\n", prompt_id="p")
    assert "output.format" in info.value.message
    assert "marmalade-format" not in info.value.message


def test_a_malformed_id_is_an_invalid_request() -> None:
    """parse_prompt checks the id too, before looking at the text."""
    with pytest.raises(InvalidRequestError):
        parse_prompt("Hi", prompt_id="../x")


def test_a_key_pasted_as_an_id_is_not_echoed() -> None:
    """An id that looks like a credential is refused without repeating it anywhere."""
    key = "sk-ant-api03-" + "Qw3Er4Ty5Ui6Op7As8Df9" * 2
    with pytest.raises(InvalidRequestError) as info:
        parse_prompt("Hi", prompt_id=key)
    assert key not in str(info.value)
    assert key not in repr(info.value)
    assert info.value.prompt_id is None


@pytest.mark.parametrize("depth", [65, 5000])
def test_absurd_nesting_is_a_load_error(depth: int) -> None:
    """Deeply nested front matter fails as PromptLoadError, never as RecursionError."""
    text = "---\ninputs: " + "[" * depth + "]" * depth + "\n---\nHi\n"
    with pytest.raises(PromptLoadError, match="nested"):
        parse_prompt(text, prompt_id="p")


_yamlish = st.text(alphabet="-#:[]{}&*!|>'\"\n .abcsuyerm0123%@`\t\\", max_size=120)


@settings(max_examples=200, deadline=None)
@given(front=_yamlish, body=_yamlish)
def test_any_text_parses_or_is_a_load_error(front: str, body: str) -> None:
    """Whatever the file holds, parsing returns a definition or raises PromptLoadError."""
    for text in (front + body, f"---\n{front}\n---\n{body}"):
        try:
            parse_prompt(text, prompt_id="p")
        except PromptLoadError:
            pass
