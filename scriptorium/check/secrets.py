"""Anything in a prompt or profile file that looks like a pasted API key. A problem names where
it is (a key path, or a line), never the value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scriptorium._files import ConfinedDir
from scriptorium._loading import FormatProblem, format_path, load_yaml
from scriptorium.check.files import read_text
from scriptorium.check.problems import Problem
from scriptorium.redaction import looks_like_secret

__all__ = ["profile_secrets", "secret_lines"]

_KEEP_KEYS_AWAY = "keep keys in environment variables and name the variable in api_key_env"


def profile_secrets(directory: ConfinedDir, relative: str, file: str) -> Iterator[Problem]:
    """Secret-looking values of a profile by key path; by line when the YAML does not parse."""
    text = read_text(directory, relative)
    try:
        data = None if text is None else load_yaml(text)
    except FormatProblem:
        data = None
    if isinstance(data, dict):
        for where in _secret_paths(data, ()):
            yield Problem(
                file, "secret_in_profile", f"{where} looks like a pasted API key; {_KEEP_KEYS_AWAY}"
            )
        return
    for line in secret_lines(directory, relative):
        yield Problem(
            file,
            "secret_in_profile",
            f"this line looks like a pasted API key; {_KEEP_KEYS_AWAY}",
            line,
        )


def _secret_paths(value: Any, loc: tuple[int | str, ...]) -> Iterator[str]:
    """The key path of every string (or mapping key) that looks like a credential."""
    if isinstance(value, str):
        if looks_like_secret(value):
            yield format_path(loc)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and looks_like_secret(key):
                yield f"a key under {format_path(loc) or 'the top level'}"
                continue
            yield from _secret_paths(item, (*loc, key if isinstance(key, str | int) else "?"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _secret_paths(item, (*loc, index))


def secret_lines(directory: ConfinedDir, relative: str) -> Iterator[int]:
    """Line numbers of a file holding something that looks like a key (the value is not kept)."""
    text = read_text(directory, relative)
    if text is None:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if looks_like_secret(line):
            yield number
