"""The OpenAPI 3.1 document of the API, generated from the pydantic models' JSON Schemas.

Request and answer bodies are the very models the routes parse and send (``RunRequest`` as
validated, ``RunResult``/``PreparedRun`` as serialised), so a client generated from this document
speaks what the server speaks. Built once per app, for that app's policy: what this server refuses
of a ``RunRequest`` (its own ``api_key`` unless client keys are allowed, an ``overrides.endpoint``
without such a key, a string artifact reference without an artifact root) is shown as refused, so
no request the document allows is turned away for a reason the document does not state.
"""

from __future__ import annotations

from typing import Any

from scriptorium._version import __version__

__all__ = ["ERROR_STATUSES", "build_openapi"]

_REF = "#/components/schemas/{model}"

#: Per route, the error statuses it may answer with, and when.
ERROR_STATUSES: dict[int, str] = {
    400: "invalid_request, profile_required, artifact_load; a body that is not JSON or has "
    "unknown fields",
    401: "unauthorized: missing or wrong bearer token",
    404: "prompt_load / profile_load with reason not_found",
    413: "the body is over the server's limit; an artifact over its size limit",
    422: "prompt_render; output_invalid with ?require_valid=true",
    500: "server configuration: a broken prompt or profile file, validation (schema), "
    "api_key_env_missing, api_key_required, llm_generate config / provider_unavailable; "
    "internal for anything else",
    502: "llm_generate: the provider failed (auth, permission, server_error, connection, "
    "invalid_response, content_filter, ...)",
    503: "llm_generate rate_limited / overloaded / quota; see Retry-After",
    504: "llm_generate timeout: the run's time budget was spent",
}

#: A key as the server takes one: anything that is not blank (a blank key is no key), however
#: short (local servers document ``EMPTY`` and ``none``).
_KEY_PATTERN = r"\S"
_BLANK = {"type": "string", "pattern": r"^\s*$"}

_RUN_ERRORS = (400, 401, 404, 413, 422, 500, 502, 503, 504)
_PREPARE_ERRORS = (400, 401, 404, 413, 422, 500)
_PROMPT_ERRORS = (400, 401, 404, 500)


#: RunRequest fields a JSON null leaves out (generated clients send every optional field).
_NULL_MEANS_ABSENT = ("inputs", "artifacts", "overrides", "metadata")


def _policy(
    components: dict[str, Any],
    request: dict[str, Any],
    *,
    client_keys: bool,
    artifact_refs: bool,
    repairs: bool,
) -> None:
    """The RunRequest schema narrowed to what this server accepts (see the module)."""
    props = request["properties"]
    overrides = components.get("Overrides", {}).get("properties", {})
    if not repairs and "repair_attempts" in overrides:
        overrides["repair_attempts"] = {
            "anyOf": [{"type": "integer", "minimum": 0, "maximum": 0}, {"type": "null"}],
            "default": None,
            "title": "Repair Attempts",
            "description": "refused above 0: this server runs without a repairer (started "
            "without --repair), so a request for repairs is refused rather than ignored",
        }
    if client_keys:
        key = {"type": "string", "pattern": _KEY_PATTERN, "writeOnly": True, "format": "password"}
        props["api_key"] = {
            "anyOf": [key, {"type": "null"}, _BLANK],
            "default": None,
            "description": "a key of the caller's own, sent to the provider instead of the "
            "server's (at least 8 characters); empty or blank counts as none",
        }
        if "endpoint" in overrides:
            overrides["endpoint"]["description"] = (
                "where to send the run instead of the profile's endpoint: only with the "
                "request's own api_key"
            )
            # The server's key never goes to an address a caller picked.
            request["if"] = {
                "required": ["overrides"],
                "properties": {
                    "overrides": {
                        "required": ["endpoint"],
                        "properties": {"endpoint": {"type": "string"}},
                    }
                },
            }
            request["then"] = {"required": ["api_key"], "properties": {"api_key": key}}
    else:
        props["api_key"] = {
            "anyOf": [{"type": "null"}, _BLANK],
            "default": None,
            "description": "refused: this server uses its own keys (started without "
            "allow_client_keys); empty or blank counts as none",
        }
        if "endpoint" in overrides:
            overrides["endpoint"] = {
                "type": "null",
                "default": None,
                "title": "Endpoint",
                "description": "refused: the server's key is only sent to the endpoints its "
                "profiles name (an endpoint needs the request's own api_key, which this server "
                "does not take)",
            }
    if not artifact_refs and "artifacts" in props:
        props["artifacts"]["additionalProperties"] = {"$ref": _REF.format(model="ArtifactContent")}
        props["artifacts"]["description"] = (
            "artifacts by value only: this server reads no file for a request"
        )
    for name in _NULL_MEANS_ABSENT:
        field = props.get(name)
        if field is not None:
            described = {k: field.pop(k) for k in ("title", "description", "default") if k in field}
            props[name] = {"anyOf": [field, {"type": "null"}], **described}


def _schemas(*, client_keys: bool, artifact_refs: bool, repairs: bool) -> dict[str, Any]:
    from pydantic.json_schema import models_json_schema

    import scriptorium.httpapi.schemas as schemas
    from scriptorium.promptdef.model import PROMPT_ID_PATTERN
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

    models: list[tuple[Any, Any]] = [
        (RunRequest, "validation"),
        (RunResult, "serialization"),
        (PreparedRun, "serialization"),
        (schemas.ErrorBody, "serialization"),
        (schemas.PromptList, "serialization"),
        (schemas.PromptDetail, "serialization"),
        (schemas.ProfileList, "serialization"),
        (schemas.Health, "serialization"),
    ]
    keys, document = models_json_schema(models, by_alias=True, ref_template=_REF)
    components: dict[str, Any] = document.get("$defs", {})
    names = {model: key["$ref"].rsplit("/", 1)[-1] for (model, _), key in keys.items()}
    # The 422 of a run holds the RunResult itself, by reference.
    components["OutputInvalidBody"] = {
        "type": "object",
        "title": "OutputInvalidBody",
        "description": "422 with ?require_valid=true: the error and the whole RunResult.",
        "required": ["error", "result"],
        "properties": {
            "error": {"$ref": _REF.format(model="ErrorDetail")},
            "result": {"$ref": _REF.format(model=names[RunResult])},
        },
    }
    request = components.get(names[RunRequest], {})
    if "prompt_id" in request.get("properties", {}):
        # The id's shape is checked in code; saying it here lets clients check it first.
        request["properties"]["prompt_id"]["pattern"] = PROMPT_ID_PATTERN.pattern
        _policy(
            components,
            request,
            client_keys=client_keys,
            artifact_refs=artifact_refs,
            repairs=repairs,
        )
    if "ArtifactContent" in components:
        # The model validates its JSON forms in a hook its generated schema cannot show.
        components["ArtifactContent"] = _ARTIFACT_CONTENT
    _drop_structured_defaults(components)
    components["_names"] = names  # removed by build_openapi
    return components


def _drop_structured_defaults(schema: Any) -> None:
    """Remove every ``default`` that is an object or an array: client generators
    (openapi-python-client among them) cannot build one and leave the operation out. What a
    field holds when left out is said by its model's description, and the server fills it in."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("default"), dict | list):
                del item["default"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


#: What the server decodes as base64 (strictly: the alphabet, and whole groups of four, padded
#: as needed; padding after a whole group is tolerated, as the decoder tolerates it).
_BASE64_PATTERN = (
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}=*|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
)


def _content_form(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key],
        "additionalProperties": False,
        "properties": {
            key: value,
            "media_type": {"type": "string", "minLength": 3, "maxLength": 255},
            "filename": {"type": "string", "minLength": 1, "maxLength": 255},
        },
    }


#: An artifact given by value, as it travels in JSON.
_ARTIFACT_CONTENT: dict[str, Any] = {
    "title": "ArtifactContent",
    "description": "An artifact given by value: {'text': ...} for text, or {'base64': ..., "
    "'media_type', 'filename'} for bytes. Checked and hashed as a file with the same bytes.",
    "oneOf": [
        _content_form("text", {"type": "string"}),
        _content_form(
            "base64",
            {"type": "string", "contentEncoding": "base64", "pattern": _BASE64_PATTERN},
        ),
    ],
}


def _json(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF.format(model=ref)}}}


def _errors(statuses: tuple[int, ...], error: str) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for status in statuses:
        answer: dict[str, Any] = {"description": ERROR_STATUSES[status], "content": _json(error)}
        if status == 503:
            answer["headers"] = {
                "Retry-After": {
                    "description": "seconds to wait before trying again",
                    "schema": {"type": "integer", "minimum": 1},
                }
            }
        answers[str(status)] = answer
    return answers


def build_openapi(
    *,
    secured: bool,
    client_keys: bool = False,
    artifact_refs: bool = False,
    repairs: bool = False,
) -> dict[str, Any]:
    """The document. ``secured``: the server wants a bearer token on every route but /healthz;
    ``client_keys``: it takes a request's own ``api_key``; ``artifact_refs``: it reads string
    artifact references as files."""
    from scriptorium.promptdef.model import PROMPT_ID_PATTERN

    components = _schemas(client_keys=client_keys, artifact_refs=artifact_refs, repairs=repairs)
    names: dict[Any, str] = components.pop("_names")
    by_name = {model.__name__: name for model, name in names.items()}
    error = by_name["ErrorBody"]
    run_request = {
        "required": True,
        "content": _json(by_name["RunRequest"]),
        "description": "a RunRequest; artifacts by value ({'text': ...} or {'base64': ..., "
        "'media_type', 'filename'}); a string reference only when the server has an artifact root",
    }
    run_errors = _errors(_RUN_ERRORS, error)
    run_errors["422"] = {
        "description": ERROR_STATUSES[422],
        "content": {
            "application/json": {
                "schema": {
                    "anyOf": [
                        {"$ref": _REF.format(model="OutputInvalidBody")},
                        {"$ref": _REF.format(model=error)},
                    ]
                }
            }
        },
    }
    paths: dict[str, Any] = {
        "/v1/runs": {
            "post": {
                "operationId": "run",
                "summary": "Run a prompt",
                "description": "200 with the RunResult, also when the output is invalid "
                "(validation.valid false), unless require_valid=true makes that a 422.",
                "parameters": [
                    {
                        "name": "require_valid",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "boolean", "default": False},
                        "description": "answer 422 output_invalid when the output fails its "
                        "contract",
                    }
                ],
                "requestBody": run_request,
                "responses": {
                    "200": {
                        "description": "the RunResult; with 'Accept: text/event-stream', the run "
                        "as server-sent events attempt, reasoning, text, partial, result and error",
                        "content": {
                            **_json(by_name["RunResult"]),
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **run_errors,
                },
            }
        },
        "/v1/prepare": {
            "post": {
                "operationId": "prepare",
                "summary": "Prepare a run: everything but the LLM call",
                "requestBody": run_request,
                "responses": {
                    "200": {
                        "description": "the PreparedRun",
                        "content": _json(by_name["PreparedRun"]),
                    },
                    **_errors(_PREPARE_ERRORS, error),
                },
            }
        },
        "/v1/prompts": {
            "get": {
                "operationId": "listPrompts",
                "summary": "List the prompts",
                "responses": {
                    "200": {"description": "every prompt", "content": _json(by_name["PromptList"])},
                    **_errors((401,), error),
                },
            }
        },
        "/v1/prompts/{id}": {
            "get": {
                "operationId": "getPrompt",
                "summary": "One prompt, with the JSON Schema of its inputs",
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": PROMPT_ID_PATTERN.pattern},
                        "description": "the prompt id: lowercase words joined by '/' "
                        "(extract/contact); anything else is refused with 400",
                    }
                ],
                "responses": {
                    "200": {
                        "description": "the prompt",
                        "content": _json(by_name["PromptDetail"]),
                    },
                    **_errors(_PROMPT_ERRORS, error),
                },
            }
        },
        "/v1/profiles": {
            "get": {
                "operationId": "listProfiles",
                "summary": "List the profiles (no key, no variable value)",
                "responses": {
                    "200": {
                        "description": "every profile",
                        "content": _json(by_name["ProfileList"]),
                    },
                    **_errors((401,), error),
                },
            }
        },
        "/healthz": {
            "get": {
                "operationId": "health",
                "summary": "Liveness; needs no token",
                "security": [],
                "responses": {
                    "200": {"description": "the server is up", "content": _json(by_name["Health"])}
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "the OpenAPI 3.1 document",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **_errors((401,), error),
                },
            }
        },
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "scriptorium",
            "version": __version__,
            "description": "Run prompt definitions over HTTP. Errors are "
            '{"error": {"code", "message", "request_id", "retryable", ...}}.',
        },
        "paths": paths,
        "components": {"schemas": components},
    }
    if secured:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    else:
        # Without a token no route answers 401: the document says only what can happen.
        for item in paths.values():
            for operation in item.values():
                operation["responses"].pop("401", None)
    return document
