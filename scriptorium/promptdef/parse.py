"""The ``.prompt.md`` format: optional YAML front matter between ``---`` lines, then a body of role
sections (``## system``, ``## user``, ``## assistant``) holding Jinja source.

The body is split on the *source*, before anything is rendered, so no input or artifact text can
open a new message: a ``## user`` line produced by a template is just text inside its section.
Template syntax is the renderer's business; this module checks structure only.
"""

from __future__ import annotations

import re
from typing import Any, Literal, cast

from pydantic import ValidationError as PydanticValidationError

from scriptorium._loading import (
    FormatProblem,
    describe_validation_error,
    load_yaml,
    safe_name,
    show_name,
)
from scriptorium.errors import InvalidRequestError, PromptLoadError
from scriptorium.profile.model import is_valid_profile_name
from scriptorium.promptdef.model import CacheMark, PromptDefinition, Section, is_valid_prompt_id

__all__ = [
    "CACHE_LINE",
    "ROLE_LINE",
    "check_prompt_id",
    "parse_prompt",
    "split_front_matter",
    "split_sections",
]

#: A line that opens a role section: exactly ``## <role>``, trailing blanks allowed.
ROLE_LINE = re.compile(r"^## (system|user|assistant)[ \t]*$")
_Role = Literal["system", "user", "assistant"]
_FENCE = re.compile(r"^---[ \t]*$")
# Model fields the file does not get to set: the repository derives them.
_DERIVED_KEYS = ("id", "sections", "source")


def check_prompt_id(prompt_id: object) -> None:
    """Raise ``InvalidRequestError`` unless ``prompt_id`` is well formed (before any path use)."""
    if not is_valid_prompt_id(prompt_id):
        raise InvalidRequestError(
            f"invalid prompt id {show_name(prompt_id)}: expected lowercase words joined by '/'",
            prompt_id=safe_name(prompt_id),
            field="prompt_id",
        )


def _trim_blank_lines(lines: list[str]) -> str:
    # Only whole blank lines at the edges go: they are layout around the role line, whereas the
    # first line's indentation or a last line's trailing spaces may be meant.
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


#: A cache breakpoint line: ``{# cache #}``, ``{# cache 5m #}`` or ``{# cache 1h #}`` alone on its line.
CACHE_LINE = re.compile(r"^[ \t]*\{#-?[ \t]*cache(?:[ \t]+(5m|1h))?[ \t]*-?#\}[ \t]*$")


def _section(role: _Role, lines: list[str]) -> Section:
    """A section from its lines, with cache breakpoint lines taken out and remembered by offset.

    The lines are removed whatever the prompt's cache mode, so the rendered text is the same with
    caching on or off (and so is ``request_hash``)."""
    kept: list[str] = []
    marks: list[tuple[int, str | None]] = []  # (index into kept, ttl)
    for line in lines:
        match = CACHE_LINE.match(line)
        if match:
            marks.append((len(kept), match.group(1)))
        else:
            kept.append(line)
    start = 0
    while start < len(kept) and not kept[start].strip():
        start += 1
    template = _trim_blank_lines(kept)
    cache_marks = []
    for index, ttl in marks:
        # The block ends where the marker line was: after the kept lines before it.
        before = "\n".join(kept[start:index])
        offset = min(len(before), len(template)) if index > start else 0
        cache_marks.append(CacheMark(offset=offset, ttl=cast(Any, ttl)))
    return Section(role=role, template=template, cache_marks=tuple(cache_marks))


def split_sections(body: str) -> tuple[Section, ...]:
    """Split a body into role sections (``PromptLoadError`` when its structure is wrong).

    A body without role lines is one user message. With role lines, only blank lines may precede
    the first; every section needs some text; ``## system`` may appear once, as the first section;
    and at least one user or assistant section must follow.
    """
    preamble_lines: list[str] = []
    parts: list[tuple[_Role, list[str]]] = []
    for line in body.replace("\r\n", "\n").split("\n"):
        match = ROLE_LINE.match(line)
        if match:
            parts.append((cast(_Role, match.group(1)), []))
        else:
            (parts[-1][1] if parts else preamble_lines).append(line)

    preamble = _trim_blank_lines(preamble_lines)
    if not parts:
        if not preamble:
            raise PromptLoadError("the body is empty: there is no message")
        section = _section("user", preamble_lines)
        if not section.template:
            raise PromptLoadError("the body is empty: there is no message")
        return (section,)
    if preamble:
        raise PromptLoadError(
            "text before the first role line (## system, ## user or ## assistant)"
        )

    sections = []
    for number, (role, lines) in enumerate(parts, start=1):
        section = _section(role, lines)
        if not section.template:
            raise PromptLoadError(f"section {number} (## {role}) is empty")
        if role == "system" and number != 1:
            raise PromptLoadError("## system may appear only once, as the first section")
        sections.append(section)
    if all(section.role == "system" for section in sections):
        raise PromptLoadError("there is no ## user or ## assistant section")
    return tuple(sections)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """``(front matter, body)`` of a prompt file's text (None: it has no front matter);
    ``PromptLoadError`` when the front matter is not closed."""
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return None, text
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise PromptLoadError("the front matter is not closed: no second --- line")


def _front_matter(source: str | None) -> dict[str, Any]:
    if source is None:
        return {}
    try:
        data = load_yaml(source, line_offset=1)  # the opening --- line
    except FormatProblem as err:
        raise PromptLoadError(f"front matter: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PromptLoadError("front matter must be a mapping of keys to values")
    derived = [key for key in _DERIVED_KEYS if key in data]
    if derived:
        raise PromptLoadError(f"front matter: unknown key {derived[0]!r} (set from the file)")
    profile = data.get("profile")
    if profile is not None and not is_valid_profile_name(profile):
        raise PromptLoadError("front matter: profile: not a valid profile name")
    return data


def parse_prompt(text: str, *, prompt_id: str, source: str | None = None) -> PromptDefinition:
    """Parse ``.prompt.md`` text into a frozen :class:`PromptDefinition`.

    ``InvalidRequestError`` for a malformed id; ``PromptLoadError`` (with ``prompt_id`` and
    ``path=source``) for bad front matter, unknown keys or a malformed body. Line endings are
    normalised to ``\\n`` and a leading byte order mark is dropped first, so neither changes the
    definition or its hash.
    """
    check_prompt_id(prompt_id)
    where = f"prompt {prompt_id!r}"
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    try:
        front, body = split_front_matter(text)
        data = _front_matter(front)
        sections = split_sections(body)
    except PromptLoadError as err:
        raise PromptLoadError(f"{where}: {err.message}", prompt_id=prompt_id, path=source) from err
    try:
        return PromptDefinition.model_validate(
            {**data, "id": prompt_id, "sections": sections, "source": source}
        )
    except PydanticValidationError as err:
        message = f"{where}: front matter: {describe_validation_error(err)}"
        raise PromptLoadError(message, prompt_id=prompt_id, path=source) from err
