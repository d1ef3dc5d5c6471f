"""Sentinel errors: every failure scriptorium raises is a class of this tree.

    ScriptoriumError
    ├── InvalidRequestError (also ValueError)   invalid_request
    ├── ProfileRequiredError                    profile_required
    ├── APIKeyEnvMissingError                   api_key_env_missing
    ├── APIKeyRequiredError                     api_key_required
    ├── PromptLoadError                         prompt_load
    ├── ProfileLoadError                        profile_load
    ├── ArtifactLoadError                       artifact_load
    ├── PromptRenderError                       prompt_render
    ├── LLMGenerateError                        llm_generate
    ├── ValidationError                         validation
    └── OutputInvalidError                      output_invalid

Match by class (``except PromptLoadError``) or by the stable ``code`` attribute, never by message text.
A foreign exception is translated once, at the boundary where a collaborator raised it, with
:func:`translate`, which keeps the original as ``__cause__`` and lets scriptorium's own errors through.

Messages never carry a key value. Errors pickle with their attributes, but not with their cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, ClassVar

from scriptorium.redaction import (
    SECRET_MIN_CHARS,
    looks_like_secret,
    redact,
    redact_secret_shapes,
)

__all__ = [
    "APIKeyEnvMissingError",
    "APIKeyRequiredError",
    "ArtifactLoadError",
    "ForeignError",
    "InvalidRequestError",
    "LLMGenerateError",
    "OutputInvalidError",
    "ProfileLoadError",
    "ProfileRequiredError",
    "PromptLoadError",
    "PromptRenderError",
    "ScriptoriumError",
    "ValidationError",
    "describe",
    "scrub_chain",
    "translate",
]


def _rebuild(cls: type[ScriptoriumError], message: str, attrs: dict[str, Any]) -> ScriptoriumError:
    return cls(message, **attrs)


def _json_form(value: Any) -> Any:
    """A field's value as JSON data: models dumped, sequences of them listed."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_json_form(item) for item in value]
    return value


class ScriptoriumError(Exception):
    """Base of every scriptorium error. ``code`` is stable; ``message`` is for people."""

    code: ClassVar[str] = "scriptorium"
    #: The attributes a subclass accepts as keywords (besides ``message``); all default to None.
    fields: ClassVar[tuple[str, ...]] = ("prompt_id", "profile", "path")

    # Declared for type checkers; ``__init__`` sets every name in ``fields``.
    prompt_id: str | None
    profile: str | None
    path: str | None

    def __init__(self, message: str, **attrs: Any) -> None:
        unknown = set(attrs) - set(self.fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected fields: {sorted(unknown)}")
        if not message.isascii():
            message = _encodable(message)
        super().__init__(message)
        self.message = message
        for name in self.fields:
            setattr(self, name, attrs.get(name))

    def attrs(self) -> dict[str, Any]:
        """The structured fields of this error (those that are set)."""
        return {n: getattr(self, n) for n in self.fields if getattr(self, n, None) is not None}

    def to_dict(self) -> dict[str, Any]:
        """The wire form used by the CLI, the kernel and the HTTP adapter (objects a field holds,
        such as ``LLMGenerateError.usage``, in their JSON form)."""
        attrs = {name: _json_form(value) for name, value in self.attrs().items()}
        return {"code": self.code, "message": self.message, **attrs}

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.attrs().items())
        return f"{type(self).__name__}({self.message!r}{extra})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The default exception pickling keeps only ``args``; keep the fields too. ``__cause__`` is
        # deliberately not pickled: a foreign cause may hold anything, secrets included.
        return (_rebuild, (type(self), self.message, self.attrs()))


class InvalidRequestError(ScriptoriumError, ValueError):
    """Raised by prepare/run when the request itself is wrong: a bad prompt id, inputs failing the
    definition's ``inputs`` schema, undeclared or missing artifacts, or an out-of-range override."""

    code = "invalid_request"
    fields = ("prompt_id", "profile", "path", "field")
    field: str | None


class ProfileRequiredError(ScriptoriumError):
    """Raised by prepare when neither the request, the definition nor the engine names a profile."""

    code = "profile_required"


class APIKeyEnvMissingError(ScriptoriumError):
    """Raised by prepare when the profile's ``api_key_env`` variable is unset, empty or too short to
    be a key, and no direct key was given. ``env_var`` names the variable; its value is never
    shown."""

    code = "api_key_env_missing"
    fields = ("prompt_id", "profile", "path", "env_var")
    env_var: str | None


class APIKeyRequiredError(ScriptoriumError):
    """Raised by prepare when the provider needs a key and neither a direct key, ``api_key_env``
    nor the provider's conventional variable supplies one; ``env_var`` is the conventional
    variable it looked for (None: the profile has an endpoint of its own and names none)."""

    code = "api_key_required"
    fields = ("prompt_id", "profile", "path", "provider", "env_var")
    provider: str | None
    env_var: str | None


class _LoadError(ScriptoriumError):
    """What prompt and profile load errors share: ``reason``, one of :data:`REASONS`, so an
    adapter can tell a missing file (HTTP 404) from a broken one (500) without reading messages."""

    fields = ("prompt_id", "profile", "path", "reason")
    #: ``not_found``: no such file or entry; ``invalid``: it exists but its content is wrong;
    #: ``unreadable``: it exists but cannot be read (permissions, not a regular file, I/O error).
    REASONS: ClassVar[frozenset[str]] = frozenset({"not_found", "invalid", "unreadable"})

    reason: str | None

    def __init__(self, message: str, **attrs: Any) -> None:
        reason = attrs.get("reason")
        if reason is None:
            attrs["reason"] = "invalid"
        elif reason not in self.REASONS:
            raise TypeError(f"unknown {type(self).__name__} reason {reason!r}")
        super().__init__(message, **attrs)

    @staticmethod
    def reason_for(err: BaseException) -> str:
        """The reason to give when a foreign exception is translated into this error."""
        if isinstance(err, LookupError | FileNotFoundError):
            return "not_found"
        if isinstance(err, OSError):
            return "unreadable"
        return "invalid"


class PromptLoadError(_LoadError):
    """Raised by a prompt repository (or the renderer, for a template that does not compile) when
    a definition is missing, unreadable, or invalid (front matter, template syntax). ``reason`` is
    ``not_found``, ``invalid`` or ``unreadable``."""

    code = "prompt_load"


class ProfileLoadError(_LoadError):
    """Raised by a profile repository when a profile is missing, unreadable, or invalid.
    ``reason`` is ``not_found``, ``invalid`` or ``unreadable``."""

    code = "profile_load"


class ArtifactLoadError(ScriptoriumError):
    """Raised by an artifact reader when an artifact is missing, outside its root, too large, or not
    decodable as its declared media type. ``reason`` is ``not_found``, ``too_large`` or
    ``unreadable`` (a media header that cannot be read within its bound) when it is one of those
    (the HTTP API answers 413 for ``too_large``), else None."""

    code = "artifact_load"
    fields = ("prompt_id", "profile", "path", "artifact", "reason")
    artifact: str | None
    reason: str | None


class PromptRenderError(ScriptoriumError):
    """Raised by the renderer for an undefined variable, a sandbox violation, or a render bound
    exceeded. Never a raw Jinja exception."""

    code = "prompt_render"
    fields = ("prompt_id", "profile", "path", "section")
    section: str | None


class LLMGenerateError(ScriptoriumError):
    """Raised by an LLM client when generation failed. ``reason`` is one of :data:`REASONS`;
    ``retryable`` says whether trying again later may help. ``partial_text`` is the text a
    stream had already delivered when it failed (None when nothing had arrived).

    Raised by a run that fell back through a chain of profiles and failed on the last one, it
    also carries ``fallbacks`` (the profiles left before it, the same ``FallbackRecord`` objects
    ``RunResult.fallbacks`` holds) and ``usage`` (the ``Usage`` of every generation and failed
    call of the run, this one's included); both are None otherwise. ``to_dict`` gives their JSON
    form."""

    code = "llm_generate"
    fields = (
        "prompt_id",
        "profile",
        "path",
        "reason",
        "retryable",
        "http_status",
        "retry_after_s",
        "attempts",
        "elapsed_s",
        "provider",
        "model",
        "partial_text",
        "fallbacks",
        "usage",
    )
    REASONS: ClassVar[frozenset[str]] = frozenset(
        {
            "rate_limited",
            "overloaded",
            "server_error",
            "timeout",
            "connection",
            "auth",
            "permission",
            "quota",
            "invalid_request",
            "not_found",
            "context_window",
            "content_filter",
            "invalid_response",
            "cancelled",
            "provider_unavailable",
            "config",
            "replay_miss",
        }
    )

    reason: str | None
    retryable: bool | None
    http_status: int | None
    retry_after_s: float | None
    attempts: int | None
    elapsed_s: float | None
    provider: str | None
    model: str | None
    partial_text: str | None
    # ``tuple[usecase.model.FallbackRecord, ...]`` and ``llm.model.Usage``: not imported here, the
    # error tree is below every model that raises it.
    fallbacks: tuple[Any, ...] | None
    usage: Any

    def __init__(self, message: str, **attrs: Any) -> None:
        reason = attrs.get("reason")
        if reason is not None and reason not in self.REASONS:
            raise TypeError(f"unknown LLMGenerateError reason {reason!r}")
        super().__init__(message, **attrs)
        if self.retryable is None:
            self.retryable = False


class ValidationError(ScriptoriumError):
    """Raised when loading or compiling an output schema fails, or the validator itself breaks.
    An output that fails its contract is *not* an error: it is reported in ``RunResult.validation``."""

    code = "validation"


class OutputInvalidError(ScriptoriumError):
    """Raised only by ``RunResult.raise_for_validation()`` when the output failed its contract."""

    code = "output_invalid"
    fields = ("prompt_id", "profile", "path", "issues")
    issues: Any


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    # A message quoting a server's text may hold a lone surrogate (legal in JSON), which no UTF-8
    # writer (the CLI's stderr, a batch file, an HTTP body) can encode: U+FFFD stands in for it.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _scrub_text(text: str, secrets: Iterable[str | None]) -> str:
    # The known secrets first and case-sensitively, then anything shaped like a credential.

    return redact_secret_shapes(redact(text, secrets))


class ForeignError(Exception):
    """The stand-in :func:`scrub_chain` puts in an error chain for a foreign exception whose text
    may hold a key: the original's class name (``original_type``), its message scrubbed, and its
    traceback. It is never raised on its own, only seen as a ``__cause__``/``__context__``."""

    def __init__(self, original_type: str, message: str) -> None:
        super().__init__(f"{original_type}: {message}" if message else original_type)
        self.original_type = original_type


_MAX_CHAIN = 32


def scrub_chain(err: BaseException, secrets: Iterable[str | None] = ()) -> BaseException:
    """``err`` with every foreign exception in it and its chain (``__cause__``, ``__context__``)
    that holds one of ``secrets`` or credential-shaped text replaced by a :class:`ForeignError`
    whose message has them removed, so ``traceback.format_exception`` and ``logging.exception``
    print no key.

    An exception that holds a key is replaced, not edited: its other attributes (an SDK error's
    ``body``) may hold the key too, and it is not ours to change. One that holds none is kept as
    it is (callers may match on its class); only its chain links are replaced where needed.
    """
    known = tuple(s for s in secrets if s and len(s) >= SECRET_MIN_CHARS)
    return _scrub(err, known, 0)


def _texts(err: BaseException) -> Iterable[str]:
    """What a traceback or a debugger's first look shows of ``err``: str, repr, its attributes."""
    yield from (_safe(str, err), _safe(repr, err))
    for value in getattr(err, "__dict__", {}).values():
        if not isinstance(value, BaseException):  # chain links are looked at on their own
            yield _safe(repr, value)[:_MAX_SCANNED]


_MAX_SCANNED = 1 << 20


def _safe(show: Any, value: Any) -> str:
    try:
        return str(show(value))
    except Exception:  # a broken __str__/__repr__ shows nothing, so it leaks nothing
        return ""


def _holds_secret(err: BaseException, secrets: tuple[str, ...]) -> bool:

    return any(
        any(secret in text for secret in secrets) or looks_like_secret(text) for text in _texts(err)
    )


def _scrub(err: BaseException, secrets: tuple[str, ...], depth: int) -> BaseException:
    if isinstance(err, ForeignError):
        return err
    if depth >= _MAX_CHAIN:  # a chain this long (or a cycle) is cut here
        return ForeignError(type(err).__name__, "(chain cut)")
    cause, context, suppress = err.__cause__, err.__context__, err.__suppress_context__
    out = err
    if not isinstance(err, ScriptoriumError) and _holds_secret(err, secrets):
        out = ForeignError(type(err).__name__, _scrub_text(_safe(str, err), secrets))
        out.__traceback__ = err.__traceback__
        notes = getattr(err, "__notes__", None)
        if isinstance(notes, list):
            out.__notes__ = [_scrub_text(str(n), secrets) for n in notes]
    new_cause = None if cause is None else _scrub(cause, secrets, depth + 1)
    new_context = None if context is None else _scrub(context, secrets, depth + 1)
    if out is not err or new_cause is not cause:
        out.__cause__ = new_cause
    if out is not err or new_context is not context:
        out.__context__ = new_context
    out.__suppress_context__ = suppress
    return out


def _pydantic_summary(err: BaseException) -> str | None:
    # pydantic's own str() repeats the offending input values; list field paths and reasons only.
    errors = getattr(err, "errors", None)
    if not callable(errors) or not hasattr(err, "title"):
        return None
    try:
        items = errors(include_input=False, include_url=False)
    except Exception:
        return None
    parts = []
    for item in items[:5]:
        loc = ".".join(str(p) for p in item.get("loc", ())) or "value"
        parts.append(f"{loc}: {item.get('msg', 'invalid')}")
    if len(items) > 5:
        parts.append(f"and {len(items) - 5} more")
    return "; ".join(parts)


def describe(err: BaseException) -> str:
    """A one-line account of a foreign exception: its type and first line (for pydantic validation
    errors, the failing fields and reasons, without the input values)."""
    summary = _pydantic_summary(err)
    if summary is not None:
        return summary
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    name = type(err).__name__
    return f"{name}: {text}" if text else name


class ErrorBoundary:
    """The base of a context manager that turns a foreign exception raised in its block into a
    sentinel: :meth:`rewrap` raises the sentinel (``from`` the cause it keeps) or returns to let
    the exception go on unchanged. What is never rewrapped is decided here, once: no exception,
    one of ``passes`` (the boundary's own sentinel, raised inside on purpose), and what is not an
    ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, a generator's exit).

    A class, not a generator: boundaries wrap every collaborator call and every rendered section of
    every run, where a generator-based context manager costs several times more."""

    __slots__ = ()
    #: The exceptions that pass through unchanged.
    passes: ClassVar[tuple[type[BaseException], ...]] = (ScriptoriumError,)

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if err is None or isinstance(err, self.passes) or not isinstance(err, Exception):
            return
        self.rewrap(err)

    def rewrap(self, err: Exception) -> None:
        """Raise the sentinel ``err`` becomes, or return to let ``err`` go on."""
        raise NotImplementedError


class _Translating(ErrorBoundary):
    """The boundary :func:`translate` returns."""

    __slots__ = ("_attrs", "_error", "_secrets", "_what")

    def __init__(
        self,
        error: type[ScriptoriumError],
        what: str,
        secrets: Iterable[str | None],
        attrs: dict[str, Any],
    ) -> None:
        self._error = error
        self._what = what
        self._secrets = secrets
        self._attrs = attrs

    def rewrap(self, err: Exception) -> None:
        secrets = tuple(s for s in self._secrets if s)
        message = redact(f"{self._what}: {describe(err)}", secrets)
        # Where a key is in play and the error holds it, the cause is a scrubbed stand-in (the
        # original is still this error's ``__context__``, which tracebacks do not print under
        # ``from``).
        cause = scrub_chain(err, secrets) if secrets else err
        attrs = self._attrs
        reason_for = getattr(self._error, "reason_for", None)
        if reason_for is not None and "reason" not in attrs:
            attrs = {**attrs, "reason": reason_for(err)}
        raise self._error(message, **attrs) from cause


def translate(
    error: type[ScriptoriumError],
    what: str,
    *,
    secrets: Iterable[str | None] = (),
    **attrs: Any,
) -> AbstractContextManager[None]:
    """Translate any foreign exception raised in the block into ``error``, cause kept.

    scriptorium's own errors pass through unchanged. ``secrets`` are scrubbed from the message, and
    when any is given the cause goes through :func:`scrub_chain`.
    ``KeyboardInterrupt``/``SystemExit`` and other non-``Exception`` signals are never translated.
    """
    return _Translating(error, what, secrets, attrs)
