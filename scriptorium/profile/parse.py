"""The profile format: one YAML mapping (``profiles/<name>.yaml``) validated into a :class:`Profile`.

Profiles sit in project folders that get committed and shared, so a value that looks like a pasted
credential is refused wherever it appears, and no error message repeats a value from the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from scriptorium._loading import (
    FormatProblem,
    check_json_compatible,
    describe_validation_error,
    format_path,
    load_yaml,
    safe_name,
    show_name,
)
from scriptorium.errors import InvalidRequestError, ProfileLoadError
from scriptorium.profile.model import Profile, is_valid_profile_name
from scriptorium.redaction import looks_like_secret

__all__ = ["check_profile_name", "find_secret", "parse_profile", "parse_profile_data"]

# Model fields the file does not get to set: the repository derives them.
_DERIVED_KEYS = ("name", "source")


def check_profile_name(name: object) -> None:
    """Raise ``InvalidRequestError`` unless ``name`` is well formed (before any path use)."""
    if not is_valid_profile_name(name):
        raise InvalidRequestError(
            f"invalid profile name {show_name(name)}: expected lowercase letters, digits, '-' or '_'",
            profile=safe_name(name),
            field="profile",
        )


def find_secret(value: Any, loc: tuple[int | str, ...] = ()) -> str | None:
    """The path (``options.headers.Authorization``) of the first key or string value that looks
    like a credential, or None. The value itself is never returned."""
    if isinstance(value, str):
        return format_path(loc) if looks_like_secret(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and looks_like_secret(key):
                return format_path(loc) + " (a key)"
            found = find_secret(item, (*loc, key if isinstance(key, str | int) else "?"))
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_secret(item, (*loc, index))
            if found is not None:
                return found
    return None


def parse_profile_data(data: Mapping[str, Any], *, name: str, source: str | None = None) -> Profile:
    """Validate an already loaded profile mapping (what :func:`parse_profile` does after YAML)."""
    check_profile_name(name)
    where = f"profile {name!r}"

    def fail(reason: str) -> ProfileLoadError:
        return ProfileLoadError(f"{where}: {reason}", profile=name, path=source)

    if not isinstance(data, Mapping):
        raise fail("must be a mapping of keys to values")
    secret_at = find_secret(data)
    if secret_at is not None:
        # Checked before the model sees the data: a pydantic error would carry the value along.
        raise fail(
            f"{secret_at} looks like a pasted credential; keep keys in environment variables "
            "and name the variable in api_key_env"
        )
    try:
        check_json_compatible(dict(data))
    except FormatProblem as err:
        raise fail(str(err)) from err
    derived = [key for key in _DERIVED_KEYS if key in data]
    if derived:
        raise fail(f"{derived[0]}: unknown key (set from the file name)")
    try:
        return Profile.model_validate({**data, "name": name, "source": source})
    except PydanticValidationError as err:
        raise fail(describe_validation_error(err)) from err


def parse_profile(text: str, *, name: str, source: str | None = None) -> Profile:
    """Parse profile YAML into a frozen :class:`Profile`.

    ``InvalidRequestError`` for a malformed name; ``ProfileLoadError`` (with ``profile`` and
    ``path=source``) for bad YAML, a non-mapping, unknown keys, invalid values or anything that
    looks like a pasted key. Messages name where the problem is, never the value found there.
    """
    check_profile_name(name)
    try:
        data = load_yaml(text.removeprefix("\ufeff"))
    except FormatProblem as err:
        # A YAML problem may quote a token from the file (an unknown tag, say). If that token could
        # be a key, neither the message nor a printed cause may show it.
        leaky = looks_like_secret(str(err))
        reason = "invalid YAML" if leaky else str(err)
        error = ProfileLoadError(f"profile {name!r}: {reason}", profile=name, path=source)
        raise error from (None if leaky else err)
    if data is None:
        raise ProfileLoadError(f"profile {name!r}: the file is empty", profile=name, path=source)
    return parse_profile_data(data, name=name, source=source)
