"""``SchemaValidator``: the ``Validator`` adapter over ``jsonschema`` (imported here, lazily).

Loading checks a schema against the metaschema of its draft (``$schema``; 2020-12 by default),
resolves every ``$ref`` inside the prompts root (:mod:`.refs`) and compiles it
once; compiled validators are cached by schema hash, files by (path, mtime, size). Validating a
valid output for a cached schema costs one parse and one ``is_valid``; the full error list is built
only for invalid outputs. See ``internal_docs/validation.md``.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scriptorium.errors import ErrorBoundary, ValidationError, translate
from scriptorium.hashing import hash_json
from scriptorium.validate.json.outcome import ParseOutcome
from scriptorium.validate.json.strict import DEFAULT_MAX_CHARS, parse_lenient, parse_strict
from scriptorium.validate.model import (
    LoadedSchema,
    OutputContract,
    ValidationIssue,
    ValidationResult,
)
from scriptorium.validate.schema.fast import Acceptor, fast_acceptor
from scriptorium.validate.schema.files import SchemaFiles, base_dir, check_json_data
from scriptorium.validate.schema.formats import format_checker
from scriptorium.validate.schema.patterns import (
    UnsafePattern,
    check,
    pattern_strings,
    safe_keywords,
)

if TYPE_CHECKING:
    from jsonschema import FormatChecker
    from jsonschema.protocols import Validator as JsonSchemaValidator

# jsonschema and referencing (through validate/schema/refs.py) are imported when the first schema is
# loaded, not with this module: the engine builds a validator for every run, and a prompt without
# any schema never needs them (they are most of a cold `scriptorium run`'s imports).

__all__ = ["MAX_ISSUES", "SchemaValidator"]

#: At most this many issues are reported per output (the rest are counted in the last one).
MAX_ISSUES = 50
_MAX_MESSAGE = 300
_CACHE_SIZE = 256
_DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class _Compiled:
    document: Any
    validator: JsonSchemaValidator
    referenced: bool = False  # compiled with other files: only valid for that bundle hash
    #: ``jsonschema-rs`` saying "valid" (final) before ``jsonschema`` is asked; see schema/fast.py.
    accept: Acceptor | None = None

    def is_valid(self, value: Any) -> bool:
        accept = self.accept
        return (accept is not None and accept(value)) or self.validator.is_valid(value)


class SchemaValidator:
    """Validates model output against an :class:`OutputContract`; loads schemas under ``root``.

    ``root`` is the ``prompts/`` directory: schema files and every ``$ref`` must stay inside it
    (``None``: inline schemas only). ``max_output_chars`` bounds the text handed to the parsers.
    The constructor does no I/O. Instances are safe to share between threads.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        max_output_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self._files = SchemaFiles(root)
        self._max_output_chars = max_output_chars
        self._compiled: OrderedDict[str, _Compiled] = OrderedDict()
        # schema file -> (its document object, its hash), for self-contained schemas only.
        # source -> (the document object it was loaded as, the LoadedSchema handed out for it).
        self._file_digests: dict[str, tuple[Any, LoadedSchema]] = {}
        # id(inline document) -> (the document, a snapshot of it, what loading it gave).
        self._inline: dict[int, tuple[Any, Any, LoadedSchema]] = {}
        self._lock = threading.Lock()
        self._checker: FormatChecker | None = None  # built with the first schema compiled

    # -- loading --------------------------------------------------------------------------------

    def load_schema(
        self, ref: str | dict[str, Any] | bool, *, relative_to: str | None = None
    ) -> LoadedSchema:
        """Load (a file path relative to the prompt file ``relative_to``, or an inline document),
        check against the metaschema and compile; every failure is ``ValidationError``.

        ``hash`` is ``hash_json(document)``; when the schema references other files it is the
        hash of ``{"root": document, "refs": referenced}``, so editing any of them changes it.
        """
        if type(ref) is not dict:
            return self._load_schema(ref, relative_to)
        # An inline document (a prompt's ``inputs`` schema, loaded on every run) is the same
        # object run after run: skip re-checking and re-hashing it while it still equals the
        # snapshot taken when it was compiled (an edited dict is loaded afresh).
        known = self._inline.get(id(ref))
        if known is not None and known[0] is ref and known[1] == ref:
            return known[2]
        loaded = self._load_schema(ref, relative_to)
        if not loaded.referenced:
            with self._lock:
                if len(self._inline) >= _CACHE_SIZE:
                    self._inline.clear()
                self._inline[id(ref)] = (ref, copy.deepcopy(ref), loaded)
        return loaded

    def _load_schema(
        self, ref: str | dict[str, Any] | bool, relative_to: str | None
    ) -> LoadedSchema:
        directory = _base_dir(relative_to)
        if isinstance(ref, str):
            source: str | None
            source, uri = _file_source(ref, directory)
            document = self._files.load(source)
        elif isinstance(ref, (dict, bool)):
            source = None
            document = ref
            check_json_data(document, None)
            import scriptorium.validate.schema.refs as refs

            uri = refs.uri_of(f"{directory}/<inline>" if directory else "<inline>")
        else:
            raise ValidationError(f"a schema is a path, an object or a boolean, not {ref!r:.60}")
        if not isinstance(document, (dict, bool)):
            raise ValidationError(
                f"schema {source or '(inline)'} is a {type(document).__name__}, not an object",
                path=source,
            )
        if source is not None:
            known = self._file_digests.get(source)
            if known is not None and known[0] is document:
                # The file is unchanged (same document object from the stat-keyed cache) and was
                # compiled self-contained: hand out the same LoadedSchema again (so callers can
                # key their own caches on it) without re-hashing the document.
                return known[1]
        with translate(ValidationError, f"loading schema {source or '(inline)'}", path=source):
            digest = hash_json(document)
            with self._lock:
                cached = self._compiled.get(digest)
            if cached is not None and not cached.referenced:
                # Self-contained: where the document lives cannot change what it means.
                loaded = LoadedSchema(document=document, hash=digest, source=source)
                self._remember_file(source, document, loaded)
                return loaded
            validator, referenced = self._compile(document, uri, source)
        if referenced:
            digest = hash_json({"root": document, "refs": referenced})
        with self._lock:
            cached = self._compiled.get(digest)
        if cached is None or cached.document != document:
            accept = fast_acceptor(document, referenced=bool(referenced))
            self._remember(digest, _Compiled(document, validator, bool(referenced), accept))
        loaded = LoadedSchema(document=document, hash=digest, source=source, referenced=referenced)
        if not referenced:
            self._remember_file(source, document, loaded)
        return loaded

    def _compile(
        self, document: dict[str, Any] | bool, uri: str, source: str | None
    ) -> tuple[JsonSchemaValidator, dict[str, Any]]:
        import jsonschema
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for
        from referencing.jsonschema import UnknownDialect, specification_with

        import scriptorium.validate.schema.refs as refs

        dialect = document.get("$schema", _DEFAULT_DIALECT) if isinstance(document, dict) else None
        if dialect is not None and not isinstance(dialect, str):
            raise ValidationError(f"schema {source or '(inline)'}: $schema must be a string")
        try:
            specification = specification_with(dialect or _DEFAULT_DIALECT)
        except UnknownDialect as err:
            raise ValidationError(
                f"schema {source or '(inline)'}: unknown $schema {dialect!r}", path=source
            ) from err
        cls = validator_for(document, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(document)  # type: ignore[arg-type]  # booleans are schemas too
        except SchemaError as err:
            where = "/" + "/".join(_escape(part) for part in err.absolute_path)
            message = _clip(err.message)
            raise ValidationError(
                f"schema {source or '(inline)'} is invalid at {where}: {message}", path=source
            ) from err
        found = refs.bundle(document, uri, specification, self._files.load)
        _check_patterns(document, source)
        for referenced in found.referenced.values():
            _check_patterns(referenced, source)
        # A schema referencing other files is validated through a reference to its own URI, so
        # its relative references resolve against where it lives (a bare document has no base).
        root = {"$ref": uri} if found.referenced else document
        if self._checker is None:
            self._checker = format_checker()
        validator = _linear_time(cls)(root, registry=found.registry, format_checker=self._checker)
        return validator, found.referenced

    def _remember_file(self, source: str | None, document: Any, loaded: LoadedSchema) -> None:
        if source is None:
            return
        with self._lock:
            if len(self._file_digests) >= _CACHE_SIZE:
                self._file_digests.clear()
            self._file_digests[source] = (document, loaded)

    def _remember(self, digest: str, compiled: _Compiled) -> None:
        with self._lock:
            self._compiled[digest] = compiled
            self._compiled.move_to_end(digest)
            while len(self._compiled) > _CACHE_SIZE:
                self._compiled.popitem(last=False)

    def _compiled_for(self, contract: OutputContract) -> _Compiled:
        schema = contract.schema_
        if schema is None:
            raise ValidationError("output format json_schema needs a schema")
        digest = contract.schema_hash or hash_json(schema)
        with self._lock:
            cached = self._compiled.get(digest)
        if cached is not None and cached.document == schema:
            return cached
        # Not loaded by this instance (or evicted): compile the inline document; relative file
        # references then resolve against the prompts root.
        loaded = self.load_schema(schema)
        with self._lock:
            compiled = self._compiled[loaded.hash]
        if contract.schema_hash:
            self._remember(contract.schema_hash, compiled)
        return compiled

    def cached_validator(self, schema_hash: str) -> JsonSchemaValidator | None:
        """The compiled validator cached under ``schema_hash`` (``LoadedSchema.hash``), if any."""
        with self._lock:
            compiled = self._compiled.get(schema_hash)
        return None if compiled is None else compiled.validator

    # -- validating -----------------------------------------------------------------------------

    def validate(self, text: str, contract: OutputContract) -> ValidationResult:
        """The verdict on ``text``; content failures are in the result. Raises ``ValidationError``
        only when the schema cannot be compiled or the validator itself breaks."""
        fmt = contract.format
        if fmt == "text":
            # A text contract has no shape to check: any text, the empty one included, is valid.
            return ValidationResult(valid=True, format="text")
        compiled = self._compiled_for(contract) if fmt == "json_schema" else None
        check: Callable[[Any], bool] | None = None
        if compiled is not None:
            check = compiled.is_valid
        with self._broken_validator():
            outcome = self._parse(text, contract, check)
        if not outcome.ok:
            return self._result(outcome, contract, valid=False, issues=outcome.issues)
        if compiled is None:
            return self._result(outcome, contract, valid=True)
        with self._broken_validator():
            if compiled.is_valid(outcome.value):
                return self._result(outcome, contract, valid=True)
            issues = _issues(compiled.validator, outcome.value)
        return self._result(outcome, contract, valid=False, issues=issues)

    def _parse(
        self, text: str, contract: OutputContract, check: Callable[[Any], bool] | None
    ) -> ParseOutcome:
        if contract.parse == "strict":
            return parse_strict(text, max_chars=self._max_output_chars)
        return parse_lenient(text, schema_check=check, max_chars=self._max_output_chars)

    @staticmethod
    def _result(
        outcome: ParseOutcome,
        contract: OutputContract,
        *,
        valid: bool,
        issues: tuple[ValidationIssue, ...] = (),
    ) -> ValidationResult:
        return ValidationResult(
            valid=valid,
            format=contract.format,
            value=outcome.value if outcome.ok else None,
            issues=issues,
            parse=outcome.mode,  # "strict" when the text was valid JSON, even under lenient
            fixes=outcome.fixes,
        )

    @staticmethod
    def _broken_validator() -> _BrokenValidator:
        """A reference that cannot be resolved mid-validation is the validator breaking."""
        return _BROKEN


class _BrokenValidator(ErrorBoundary):
    """Stateless, so one instance serves every validation."""

    __slots__ = ()
    passes = (ValidationError,)

    def rewrap(self, err: Exception) -> None:
        from referencing.exceptions import Unresolvable  # loaded with the validator that raised

        if isinstance(err, Unresolvable):
            raise ValidationError(f"schema reference cannot be resolved: {err}") from err
        if isinstance(err, RecursionError):
            raise ValidationError("schema or value nested too deeply to validate") from err


_BROKEN = _BrokenValidator()


@functools.cache
def _linear_time(cls: type[JsonSchemaValidator]) -> type[JsonSchemaValidator]:
    """``cls`` with its pattern keywords matching in linear time (schema/patterns.py)."""
    import jsonschema.validators

    keywords = safe_keywords(dict(cls.VALIDATORS))
    return jsonschema.validators.extend(cls, keywords)  # type: ignore[no-untyped-call,no-any-return]


def _check_patterns(document: Any, source: str | None) -> None:
    """Every regular expression in ``document`` must be matchable in linear time (and valid)."""
    for pattern in pattern_strings(document):
        try:
            check(pattern)
        except UnsafePattern as err:
            raise ValidationError(
                f"schema {source or '(inline)'}: pattern {_shown(pattern)} {err}", path=source
            ) from err
        except re.error as err:
            raise ValidationError(
                f"schema {source or '(inline)'}: pattern {_shown(pattern)} is not a valid "
                f"regular expression ({err.msg})",
                path=source,
            ) from err


def _shown(pattern: str) -> str:
    return repr(pattern) if len(pattern) <= 60 else repr(pattern[:57] + "...")


@functools.lru_cache(maxsize=1024)
def _base_dir(relative_to: str | None) -> str:
    # Pure string work, repeated for the same prompt on every run (errors are not cached).
    return base_dir(relative_to)


@functools.lru_cache(maxsize=1024)
def _file_source(ref: str, directory: str) -> tuple[str, str]:
    """The root-relative path ``ref`` names from ``directory`` (checked lexically), and its URI."""
    import scriptorium.validate.schema.refs as refs

    source = SchemaFiles.relative(ref, directory)
    return source, refs.uri_of(source)


def _issues(validator: JsonSchemaValidator, value: Any) -> tuple[ValidationIssue, ...]:
    """Every error, sorted by instance path then keyword then message, capped at MAX_ISSUES."""
    found = sorted(
        (
            ([(isinstance(p, int), p) for p in error.absolute_path], str(error.validator), error)
            for error in validator.iter_errors(value)
        ),
        key=lambda item: (item[0], item[1], item[2].message),
    )
    issues = [
        ValidationIssue(
            path="".join("/" + _escape(p) for p in error.absolute_path),
            message=_clip(error.message),
            keyword=keyword,
        )
        for _, keyword, error in found[:MAX_ISSUES]
    ]
    if len(found) > MAX_ISSUES:
        issues.append(
            ValidationIssue(
                path="",
                message=f"{len(found) - MAX_ISSUES} more errors not shown",
                keyword="truncated_issues",
            )
        )
    return tuple(issues)


def _escape(part: object) -> str:
    """One JSON Pointer reference token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def _clip(message: str) -> str:
    """Messages quote the offending instance; keep a huge one from flooding the result."""
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"
