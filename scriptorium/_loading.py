"""What the file formats (prompt front matter, profiles) share: strict UTF-8, a hardened YAML loader,
and error messages that never repeat the input values.

Each helper raises :class:`FormatProblem` (a ``ValueError``) with a message safe to show; the
adapter that called it turns that into its own sentinel (``PromptLoadError``, ``ProfileLoadError``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable
from typing import Any, get_args

import yaml
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from scriptorium.redaction import looks_like_secret

__all__ = [
    "MAX_DEPTH",
    "FormatProblem",
    "check_json_compatible",
    "decode_utf8",
    "describe_validation_error",
    "format_path",
    "load_reason",
    "load_yaml",
    "model_keys",
    "safe_name",
    "show_name",
    "validation_messages",
]

_BOM = "\ufeff"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_INT_TAG = "tag:yaml.org,2002:int"
_MAX_REPORTED_ERRORS = 5
_SHOWN_NAME_CHARS = 80
#: How deeply a loaded document may nest (the validator bounds JSON outputs the same way).
MAX_DEPTH = 64
#: The longest integer scalar (in characters, signs and underscores included) a YAML file may hold:
#: more is refused rather than handed to ``int()``, whose cost grows with the square of the length.
MAX_INT_CHARS = 64
#: The non-specific tag ``!`` only says "a string", so it is the one explicit tag allowed.
_NON_SPECIFIC = frozenset({None, "!"})


class FormatProblem(ValueError):
    """A file's content is not what its format allows. The message never holds input values."""


#: A file problem's kind (see ``_files.FileProblem``) as a load error's ``reason``. A path that
#: resolves outside its directory, or is not a regular file, exists but cannot be served: an
#: operator's problem (``unreadable``), not a caller's (``not_found``). Too large is bad content.
_REASONS = {
    "missing": "not_found",
    "outside": "unreadable",
    "not_file": "unreadable",
    "unreadable": "unreadable",
    "too_large": "invalid",
}


def load_reason(kind: str) -> str:
    """The ``reason`` of a ``PromptLoadError``/``ProfileLoadError`` for a file problem's kind."""
    return _REASONS.get(kind, "unreadable")


def show_name(value: object) -> str:
    """A short rendering of a (possibly malformed) id or name for an error message; one that looks
    like a pasted key is not shown at all."""
    text = repr(value)
    if looks_like_secret(text):
        return "(a value that looks like a key, not shown)"
    return text if len(text) <= _SHOWN_NAME_CHARS else text[: _SHOWN_NAME_CHARS - 3] + "..."


def safe_name(value: object) -> str | None:
    """``value`` as an error attribute: kept when it is a string that does not look like a key."""
    return value if isinstance(value, str) and not looks_like_secret(value) else None


def decode_utf8(data: bytes) -> str:
    """Strict UTF-8, one leading byte order mark dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatProblem(f"not valid UTF-8 (byte {err.start})") from err
    return text.removeprefix(_BOM)


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses duplicate keys, anchors, aliases, explicit tags and huge
    integers, and leaves dates as strings.

    Duplicate keys silently keep the last value in plain YAML, which hides mistakes. Anchors and
    aliases are refused because they let a few bytes expand into a huge document (and nothing here
    needs them). Explicit tags (``!!int``, ``!!timestamp``, ``!!binary``, ``!custom``) are refused
    because they make values JSON cannot hold or fail inside PyYAML with messages that repeat the
    value. Timestamps stay strings so every loaded value is JSON and hashes the same way everywhere.
    """

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        problem = None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            problem = "anchors and aliases (&name, *name) are not allowed"
        elif getattr(event, "tag", None) not in _NON_SPECIFIC:
            problem = "explicit tags (!!type, !name) are not allowed"
        if problem is not None:
            raise yaml.composer.ComposerError(None, None, problem, event.start_mark)
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"integer longer than {MAX_INT_CHARS} characters", node.start_mark
            )
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, "duplicate key", key_node.start_mark
                )
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(_INT_TAG, _StrictLoader.construct_yaml_int)
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# Quoted text in a PyYAML problem ("found character '%'", "the tag '!x'") comes from the input.
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _yaml_message(err: yaml.YAMLError, line_offset: int) -> str:
    # Only the problem's wording and position: a quoted piece of the file could be a pasted key,
    # so it is kept only when it is one short token (a stray character) that does not look like one.
    problem = str(getattr(err, "problem", None) or "invalid YAML")
    problem = _QUOTED.sub(
        lambda m: (
            m.group(0) if len(m.group(0)) <= 6 and not looks_like_secret(m.group(0)) else "..."
        ),
        problem,
    )
    mark = getattr(err, "problem_mark", None)
    where = ""
    if mark is not None:
        where = f" at line {mark.line + 1 + line_offset}, column {mark.column + 1}"
    return f"invalid YAML{where}: {problem}"


def _forget_source(err: yaml.YAMLError) -> None:
    # A marked YAML error prints a snippet of the offending line when shown (in a traceback, say).
    # That line may hold a pasted key, and the error is kept as ``__cause__``: drop the source
    # buffer so only line and column remain.
    for name in ("context_mark", "problem_mark"):
        mark = getattr(err, name, None)
        if mark is not None:
            mark.buffer = None


def load_yaml(text: str, *, line_offset: int = 0) -> Any:
    """Parse one YAML document with :class:`_StrictLoader` and check it is plain JSON data.

    ``line_offset`` is how many lines of the file precede ``text``, so positions in messages are
    positions in the file.
    """
    try:
        value = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        _forget_source(err)
        raise FormatProblem(_yaml_message(err, line_offset)) from err
    except RecursionError as err:  # PyYAML composes recursively: absurd nesting exhausts the stack
        raise FormatProblem("invalid YAML: nested too deeply") from err
    except (ValueError, TypeError, OverflowError, MemoryError) as err:
        # A value PyYAML's own constructors choke on (only reachable through an implicit type the
        # checks above missed); its message would repeat the value, so it is not kept.
        raise FormatProblem(
            f"invalid YAML: a value cannot be read ({type(err).__name__})"
        ) from None
    check_json_compatible(value)
    return value


def format_path(loc: tuple[int | str, ...]) -> str:
    """``("settings", "stop_sequences", 0)`` -> ``settings.stop_sequences[0]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # A key is file content too: one that looks like a pasted key is never shown.
            name = "<redacted>" if looks_like_secret(str(part)) else str(part)
            out += f".{name}" if out else name
    return out or "(top level)"


def check_json_compatible(value: Any, loc: tuple[int | str, ...] = ()) -> None:
    """Refuse what JSON cannot hold (non-string keys, non-finite numbers, bytes, sets, ...), so
    every loaded file has one canonical JSON form to hash, and nesting deeper than
    :data:`MAX_DEPTH`."""
    if len(loc) > MAX_DEPTH:
        raise FormatProblem(f"{format_path(loc[:3])}...: nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FormatProblem(f"{format_path(loc)}: non-finite numbers are not allowed")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            check_json_compatible(item, (*loc, index))
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise FormatProblem(
                    f"{format_path(loc)}: keys must be strings (quote it in YAML: on, yes, 1 are "
                    "read as other types)"
                )
            check_json_compatible(item, (*loc, key))
        return
    raise FormatProblem(f"{format_path(loc)}: a {type(value).__name__} value is not allowed")


def validation_messages(err: PydanticValidationError, known_keys: Iterable[str] = ()) -> list[str]:
    """One message per problem a model found in its data (``path: why``), from locations and
    messages only; an unknown key gets a "did you mean" among ``known_keys``."""
    from scriptorium._suggest import did_you_mean

    known = tuple(known_keys)
    messages = []
    for detail in err.errors(include_url=False, include_input=False):
        loc = tuple(detail["loc"])
        if detail["type"] == "extra_forbidden":
            key = loc[-1] if loc and isinstance(loc[-1], str) else ""
            message = "unknown key" + (did_you_mean(key, known) if key else "")
        else:
            message = detail["msg"]
        messages.append(f"{format_path(loc)}: {message}")
    return messages


def model_keys(model: type[BaseModel]) -> set[str]:
    """Every field name (and alias) of ``model`` and of the models its fields hold."""
    keys: set[str] = set()
    todo: list[Any] = [model]
    seen: set[Any] = set()
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            for name, field in item.model_fields.items():
                keys.add(field.alias or name)
                todo.append(field.annotation)
        else:
            todo.extend(get_args(item))
    return keys


def describe_validation_error(err: PydanticValidationError, known_keys: Iterable[str] = ()) -> str:
    """Where and why a model refused its data, built from locations and messages only (see
    :func:`validation_messages`), at most a few of them.

    ``str(err)`` of a pydantic error repeats each ``input_value``, which could be a pasted key.
    """
    parts = validation_messages(err, known_keys)[:_MAX_REPORTED_ERRORS]
    hidden = err.error_count() - len(parts)
    if hidden > 0:
        parts.append(f"and {hidden} more")
    return "; ".join(parts)
