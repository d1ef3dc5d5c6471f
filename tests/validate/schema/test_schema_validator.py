"""SchemaValidator: confined loading, drafts, refs, formats, caching and verdicts."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from scriptorium.errors import ValidationError
from scriptorium.hashing import hash_json
from scriptorium.validate.model import LoadedSchema, OutputContract
from scriptorium.validate.schema import SchemaValidator
from scriptorium.validate.validator import Validator

PERSON = {
    "type": "object",
    "required": ["name", "email"],
    "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
}


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    root = tmp_path / "prompts"
    (root / "extract" / "schemas").mkdir(parents=True)
    (root / "extract" / "schemas" / "common.schema.json").write_text(
        json.dumps({"$defs": {"name": {"type": "string", "minLength": 1}}})
    )
    (root / "extract" / "schemas" / "person.schema.yaml").write_text(
        "type: object\n"
        "required: [name]\n"
        "properties:\n"
        "  name: {$ref: 'common.schema.json#/$defs/name'}\n"
    )
    (root / "extract" / "person.schema.json").write_text(json.dumps(PERSON))
    (tmp_path / "outside.json").write_text(json.dumps({"type": "string"}))
    return root


def _contract(loaded: LoadedSchema, parse: str = "lenient") -> OutputContract:
    return OutputContract.model_validate(
        {
            "format": "json_schema",
            "schema": loaded.document,
            "schema_hash": loaded.hash,
            "parse": parse,
        }
    )


def test_it_satisfies_the_validator_port() -> None:
    """SchemaValidator is a Validator (checked by mypy through this assignment)."""
    validator: Validator = SchemaValidator()
    assert validator is not None


def test_the_constructor_does_no_io(tmp_path: Path) -> None:
    """A root that does not exist only matters when a file is read."""
    validator = SchemaValidator(tmp_path / "missing")
    assert validator.load_schema({"type": "string"}).document == {"type": "string"}
    with pytest.raises(ValidationError):
        validator.load_schema("x.json")


def test_a_file_schema_loads_relative_to_the_prompt_file(prompts: Path) -> None:
    """The reference is relative to the prompt's directory; hash is hash_json(document)."""
    loaded = SchemaValidator(prompts).load_schema(
        "person.schema.json", relative_to="extract/p.prompt.md"
    )
    assert loaded.document == PERSON
    assert loaded.hash == hash_json(PERSON)
    assert loaded.source == "extract/person.schema.json"
    assert loaded.referenced == {}


def test_a_yaml_schema_with_a_local_ref_to_another_file_validates(prompts: Path) -> None:
    """$ref to a sibling file resolves; the referenced document is reported and hashed."""
    validator = SchemaValidator(prompts)
    loaded = validator.load_schema("schemas/person.schema.yaml", relative_to="extract/p.prompt.md")
    assert set(loaded.referenced) == {"extract/schemas/common.schema.json"}
    assert loaded.hash == hash_json({"root": loaded.document, "refs": loaded.referenced})
    assert validator.validate('{"name": "Ada"}', _contract(loaded)).valid
    verdict = validator.validate('{"name": ""}', _contract(loaded))
    assert not verdict.valid
    assert [(i.path, i.keyword) for i in verdict.issues] == [("/name", "minLength")]


def test_editing_a_referenced_file_changes_the_hash(prompts: Path) -> None:
    """The file cache notices (mtime, size); the bundle hash follows the referenced content."""
    validator = SchemaValidator(prompts)
    first = validator.load_schema("extract/schemas/person.schema.yaml")
    common = prompts / "extract" / "schemas" / "common.schema.json"
    common.write_text(json.dumps({"$defs": {"name": {"type": "string", "maxLength": 9}}}))
    os.utime(common, ns=(1, 1))
    assert validator.load_schema("extract/schemas/person.schema.yaml").hash != first.hash


@pytest.mark.parametrize(
    "ref",
    [
        "../outside.json",
        "../../outside.json",
        "/etc/passwd",
        "file:///etc/passwd",
        "http://x/s.json",
    ],
)
def test_schema_paths_outside_the_root_are_refused(prompts: Path, ref: str) -> None:
    """Absolute paths, URLs and '..' escapes are ValidationError naming the path."""
    with pytest.raises(ValidationError) as info:
        SchemaValidator(prompts).load_schema(ref, relative_to="extract/p.prompt.md")
    assert info.value.path is not None


def test_a_symlink_leading_outside_the_root_is_refused(prompts: Path) -> None:
    """Confinement is checked on the resolved path."""
    (prompts / "link.json").symlink_to(prompts.parent / "outside.json")
    with pytest.raises(ValidationError, match="outside"):
        SchemaValidator(prompts).load_schema("link.json")


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []  # noqa: RUF012 - shared on purpose: the test reads it

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def loopback_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    _Recorder.hits = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/s.json"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["http", "file", "parent"])
def test_refs_to_the_network_or_outside_the_root_fail_and_fetch_nothing(
    prompts: Path, loopback_url: str, kind: str
) -> None:
    """$ref to http://, file:// or ../ is ValidationError at load time; nothing is fetched."""
    ref = {"http": loopback_url, "file": "file:///etc/passwd", "parent": "../outside.json"}[kind]
    schema = {"properties": {"a": {"$ref": ref}}}
    with pytest.raises(ValidationError, match="outside the prompts directory"):
        SchemaValidator(prompts).load_schema(schema, relative_to="p.prompt.md")
    assert _Recorder.hits == []


def test_ref_inside_enum_data_is_not_followed(prompts: Path) -> None:
    """Only schema positions hold references; enum values are data."""
    schema = {"enum": [{"$ref": "http://example.com/x"}]}
    SchemaValidator(prompts).load_schema(schema)


def test_an_unresolvable_pointer_fails_at_load_time() -> None:
    """A $ref to a missing definition is caught before any validation."""
    with pytest.raises(ValidationError, match="cannot be resolved"):
        SchemaValidator().load_schema({"$ref": "#/$defs/missing"})


@pytest.mark.parametrize(
    "schema",
    [{"type": "nope"}, {"minLength": -1}, {"pattern": "("}, {"$schema": "http://example.com/s"}],
)
def test_invalid_schemas_are_validation_errors(schema: dict[str, Any]) -> None:
    """Metaschema violations and unknown dialects fail loading."""
    with pytest.raises(ValidationError):
        SchemaValidator().load_schema(schema)


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("missing.json", None, "missing.json"),
        ("bad.json", "{nope", "parsing"),
        ("list.json", "[1]", "not an object"),
        ("yes.yaml", "properties:\n  on: {type: string}\n", "quote it"),
        ("schema.txt", "{}", ".json"),
    ],
)
def test_unusable_schema_files_are_validation_errors(
    prompts: Path, name: str, content: str | None, match: str
) -> None:
    """Missing, unparsable, non-object, non-JSON YAML and unknown file types all fail."""
    if content is not None:
        (prompts / name).write_text(content)
    with pytest.raises(ValidationError, match=match) as info:
        SchemaValidator(prompts).load_schema(name)
    assert info.value.path == name


def test_draft_07_is_selected_by_its_schema_keyword() -> None:
    """A draft-07 schema with definitions validates by draft-07 rules."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/definitions/n"}, "b": {"items": [{"type": "string"}]}},
    }
    validator = SchemaValidator()
    contract = _contract(validator.load_schema(schema))
    assert validator.validate('{"a": 1, "b": ["x", 2]}', contract).valid
    verdict = validator.validate('{"a": "x", "b": [3]}', contract)
    assert [(i.path, i.keyword) for i in verdict.issues] == [("/a", "type"), ("/b/0", "type")]


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("email", "ada@example.com", "not-an-email"),
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-01-01T10:00:00Z", "2024-01-01 10:00"),
        ("ipv4", "10.0.0.1", "10.0.0.300"),
        ("uuid", "12345678-1234-1234-1234-123456789abc", "1234"),
    ],
)
def test_chosen_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    """format is an assertion for the formats scriptorium checks."""
    validator = SchemaValidator()
    contract = _contract(validator.load_schema({"type": "string", "format": fmt}))
    assert validator.validate(json.dumps(good), contract).valid
    verdict = validator.validate(json.dumps(bad), contract)
    assert [i.keyword for i in verdict.issues] == ["format"]


def test_unchecked_formats_are_annotations() -> None:
    """A format outside the chosen list never fails a value."""
    validator = SchemaValidator()
    contract = _contract(validator.load_schema({"format": "iri-reference"}))
    assert validator.validate('"::: not an iri"', contract).valid


def test_issue_paths_are_json_pointers_with_rfc6901_escaping() -> None:
    """Keys holding '/' and '~' are escaped as ~1 and ~0."""
    schema = {"properties": {"a/b": {"type": "integer"}, "c~d": {"type": "integer"}}}
    validator = SchemaValidator()
    verdict = validator.validate(
        '{"a/b": "x", "c~d": "y"}', _contract(validator.load_schema(schema))
    )
    assert [i.path for i in verdict.issues] == ["/a~1b", "/c~0d"]


def test_issues_are_every_error_sorted_by_path_then_keyword() -> None:
    """All errors are reported, deterministically ordered; array indexes sort numerically."""
    schema = {
        "type": "object",
        "required": ["z"],
        "properties": {
            "list": {"items": {"type": "integer", "minimum": 5}},
            "b": {"type": "string"},
        },
    }
    validator = SchemaValidator()
    text = '{"list": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "x"], "b": 1}'
    verdict = validator.validate(text, _contract(validator.load_schema(schema)))
    assert [(i.path, i.keyword) for i in verdict.issues] == [
        ("", "required"),
        ("/b", "type"),
        ("/list/0", "minimum"),
        ("/list/1", "minimum"),
        ("/list/2", "minimum"),
        ("/list/3", "minimum"),
        ("/list/10", "type"),
    ]


def test_long_messages_are_clipped() -> None:
    """A huge offending value does not flood the issue message."""
    validator = SchemaValidator()
    verdict = validator.validate(
        json.dumps("x" * 10_000), _contract(validator.load_schema({"type": "integer"}))
    )
    assert len(verdict.issues[0].message) <= 300


def test_compiled_validators_are_cached_by_hash(prompts: Path) -> None:
    """Loading the same schema twice reuses the compiled validator object."""
    validator = SchemaValidator(prompts)
    first = validator.load_schema("extract/person.schema.json")
    compiled = validator.cached_validator(first.hash)
    assert compiled is not None
    validator.load_schema(dict(PERSON))
    assert validator.cached_validator(first.hash) is compiled


def test_a_contract_from_elsewhere_is_compiled_on_first_use() -> None:
    """A contract whose schema this instance never loaded still validates."""
    contract = OutputContract.model_validate({"format": "json_schema", "schema": PERSON})
    verdict = SchemaValidator().validate('{"name": "Ada", "email": "a@b.c"}', contract)
    assert verdict.valid
    assert verdict.value == {"name": "Ada", "email": "a@b.c"}


def test_lenient_parsing_uses_the_schema_to_pick_among_candidates() -> None:
    """Two candidate objects, only one valid: that one is chosen and validated."""
    validator = SchemaValidator()
    contract = _contract(validator.load_schema(PERSON))
    text = 'Example: {"name": "x"}\nAnswer:\n```json\n{"name": "Ada", "email": "ada@x.io"}\n```'
    verdict = validator.validate(text, contract)
    assert verdict.valid
    assert verdict.value == {"name": "Ada", "email": "ada@x.io"}
    assert verdict.parse == "lenient"
    assert "stripped_code_fence" in verdict.fixes


def test_candidates_the_schema_cannot_separate_are_ambiguous() -> None:
    """Two different valid candidates: invalid with keyword ambiguous."""
    validator = SchemaValidator()
    contract = _contract(validator.load_schema(PERSON))
    text = '{"name": "A", "email": "a@x.io"} {"name": "B", "email": "b@x.io"}'
    verdict = validator.validate(text, contract)
    assert not verdict.valid
    assert [i.keyword for i in verdict.issues] == ["ambiguous"]
    assert verdict.value is None


def test_strict_contracts_do_not_repair() -> None:
    """parse: strict reports a fenced answer as a parse issue."""
    validator = SchemaValidator()
    contract = _contract(validator.load_schema(PERSON), parse="strict")
    verdict = validator.validate('```json\n{"name": "A", "email": "a@x.io"}\n```', contract)
    assert not verdict.valid
    assert verdict.parse == "strict"
    assert verdict.issues[0].keyword == "parse"


def test_text_contracts_accept_any_text_even_empty() -> None:
    """format text has no shape: valid, no value, no parse mode."""
    verdict = SchemaValidator().validate("", OutputContract())
    assert verdict.valid
    assert verdict.value is None
    assert verdict.parse is None


def test_valid_json_under_a_lenient_contract_reports_parse_strict() -> None:
    """parse says how the value was obtained: valid JSON needed no lenient recovery."""
    verdict = SchemaValidator().validate('{"a": 1}', OutputContract(format="json"))
    assert verdict.parse == "strict"
    assert verdict.fixes == ()


def test_json_contracts_return_the_value_and_the_fixes() -> None:
    """format json: the parsed value, lenient fixes recorded."""
    verdict = SchemaValidator().validate("{'a': 1,}", OutputContract(format="json"))
    assert verdict.valid
    assert verdict.value == {"a": 1}
    assert verdict.parse == "lenient"
    assert verdict.fixes == ("single_quotes", "removed_trailing_comma")


def test_a_json_schema_contract_without_a_schema_is_a_validator_error() -> None:
    """A contract that cannot be checked is an operational failure."""
    with pytest.raises(ValidationError):
        SchemaValidator().validate("{}", OutputContract(format="json_schema"))
