"""The ``format`` keywords scriptorium checks, chosen one by one and written with the stdlib only.

``jsonschema``'s own checker depends on whichever optional packages happen to be installed (so the
same schema would validate differently on two machines), and installing its ``format-nongpl`` extra
made ``import jsonschema`` take 3.3 s. So this module builds a checker with a fixed list:
:data:`CHECKED_FORMATS`. Any other ``format`` is an annotation only, as JSON Schema allows.
Non-string instances always pass a format check (the ``type`` keyword is there for those).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jsonschema import FormatChecker

__all__ = ["CHECKED_FORMATS", "format_checker"]

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
_FULL_TIME = re.compile(_TIME)
_DATE_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]" + _TIME)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f]*")


def _is_date(value: str) -> bool:
    if not _DATE.fullmatch(value):
        return False
    date.fromisoformat(value)  # raises ValueError for 2024-02-30
    return True


def _valid_time(hour: str, minute: str, second: str, offset: str) -> bool:
    if int(hour) > 23 or int(minute) > 59 or int(second) > 60:  # 60: a leap second
        return False
    if offset not in ("Z", "z"):
        off_hour, off_minute = offset[1:].split(":")
        return int(off_hour) <= 23 and int(off_minute) <= 59
    return True


def _is_time(value: str) -> bool:
    match = _FULL_TIME.fullmatch(value)
    if match is None:
        return False
    hour, minute, second, _, offset = match.groups()
    return _valid_time(hour, minute, second, offset)


def _is_date_time(value: str) -> bool:
    match = _DATE_TIME.fullmatch(value)
    if match is None:
        return False
    day, hour, minute, second, _, offset = match.groups()
    if not _is_date(day) or not _valid_time(hour, minute, second, offset):
        return False
    datetime.fromisoformat(f"{day}T{hour}:{minute}:{min(int(second), 59):02d}")
    return True


def _is_email(value: str) -> bool:
    # Deliberately loose: one "@" with something on each side and no spaces. Full RFC 5322 parsing
    # rejects little that models produce and a few addresses people really use.
    return _EMAIL.fullmatch(value) is not None


def _is_ipv4(value: str) -> bool:
    ipaddress.IPv4Address(value)  # refuses leading zeros, as the JSON Schema suite expects
    return True


def _is_ipv6(value: str) -> bool:
    if "%" in value:  # zone ids are not part of the RFC 4291 text form
        return False
    ipaddress.IPv6Address(value)
    return True


def _is_uuid(value: str) -> bool:
    return _UUID.fullmatch(value) is not None


def _is_regex(value: str) -> bool:
    re.compile(value)  # Python's dialect: close to ECMA 262 for the patterns schemas use
    return True


def _is_hostname(value: str) -> bool:
    name = value[:-1] if value.endswith(".") else value
    if not name or len(name) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in name.split("."))


def _is_uri(value: str) -> bool:
    # An absolute URI: a scheme, then no spaces or control characters. Not the full RFC 3986
    # grammar (that needs rfc3987); enough to tell "example.com" from "https://example.com".
    return _URI.fullmatch(value) is not None


_CHECKS: dict[str, tuple[Callable[[str], bool], tuple[type[Exception], ...]]] = {
    "date": (_is_date, (ValueError,)),
    "date-time": (_is_date_time, (ValueError,)),
    "time": (_is_time, (ValueError,)),
    "email": (_is_email, ()),
    "ipv4": (_is_ipv4, (ValueError,)),
    "ipv6": (_is_ipv6, (ValueError,)),
    "uuid": (_is_uuid, ()),
    "regex": (_is_regex, (re.error,)),
    "hostname": (_is_hostname, ()),
    "uri": (_is_uri, ()),
}

#: The formats checked; every other ``format`` value is an annotation.
CHECKED_FORMATS: tuple[str, ...] = tuple(sorted(_CHECKS))


def format_checker() -> FormatChecker:
    """A new ``jsonschema.FormatChecker`` holding exactly :data:`CHECKED_FORMATS`."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, (check, raises) in _CHECKS.items():
        checker.checks(name, raises=raises)(_strings_only(check))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[object], bool]:
    def run(instance: object) -> bool:
        return not isinstance(instance, str) or check(instance)

    return run
