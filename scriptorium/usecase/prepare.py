"""The Prepare flow (load, select, merge, check the key, resolve the output, check inputs and
artifacts, render, hash) as small functions the Runner calls in order.

Each step translates whatever its collaborator raises into that step's sentinel, cause kept; the
functions here hold no state, so a Runner can serve many requests at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from scriptorium.artifact.build import DEFAULT_MAX_BYTES, artifact_from_content
from scriptorium.artifact.model import Artifact, ArtifactContent
from scriptorium.artifact.reader import Reader
from scriptorium.errors import (
    APIKeyRequiredError,
    ArtifactLoadError,
    InvalidRequestError,
    ProfileRequiredError,
    ValidationError,
    translate,
)
from scriptorium.hashing import canonical_json, hash_json
from scriptorium.llm.model import (
    MIN_KEY_CHARS,
    CacheDirectives,
    StructuredOutput,
    Target,
    given_key,
    is_short_key,
    key_from_env,
)
from scriptorium.llm.registry import provider_needs_key
from scriptorium.profile.model import (
    DEFAULT_SETTINGS,
    ExecutionSettings,
    Profile,
    redact_secret_shapes,
    validate_endpoint,
)
from scriptorium.prompt.model import RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id
from scriptorium.usecase.model import RunRequest, SettingSource
from scriptorium.validate.model import LoadedSchema, OutputContract
from scriptorium.validate.validator import Validator

__all__ = [
    "OFFLOAD_BYTES",
    "check_declared_inputs",
    "check_prompt_id",
    "credential",
    "definition_hash",
    "heavy_to_prepare",
    "inputs_contract",
    "load_output_schema",
    "merge_settings",
    "output_contract",
    "read_artifacts",
    "select_profile",
    "structured_output",
    "target_for",
    "validate_inputs",
]

_SETTING_FIELDS = tuple(ExecutionSettings.model_fields)


def check_prompt_id(prompt_id: str) -> None:
    """Step 1: the id must match the id pattern before anything is looked up."""
    if not is_valid_prompt_id(prompt_id):
        raise InvalidRequestError(
            "invalid prompt id: use lowercase letters, digits, '-', '_' and up to three '/'",
            field="prompt_id",
        )


def select_profile(request: RunRequest, definition: PromptDefinition, default: str | None) -> str:
    """Step 2: the explicit profile, else the definition's, else the engine's default."""
    name = request.profile or definition.profile or default
    if not name:
        raise ProfileRequiredError(
            f"prompt {request.prompt_id!r} names no profile and none was given",
            prompt_id=request.prompt_id,
        )
    return name


def merge_settings(
    profile: Profile, request: RunRequest
) -> tuple[ExecutionSettings, dict[str, SettingSource]]:
    """Step 3: built-in defaults < profile settings < overrides, keeping where each came from.

    Presence, not truthiness, decides: an override of ``0`` or ``0.0`` wins.
    """
    from_profile = profile.settings.given()
    overrides = request.overrides
    values: dict[str, Any] = {}
    sources: dict[str, SettingSource] = {}
    for name in _SETTING_FIELDS:
        override = getattr(overrides, name)
        if override is not None:
            values[name], sources[name] = override, "override"
        elif name in from_profile:
            values[name], sources[name] = from_profile[name], "profile"
        else:
            values[name], sources[name] = getattr(DEFAULT_SETTINGS, name), "default"
    with translate(InvalidRequestError, "invalid settings", prompt_id=request.prompt_id):
        settings = ExecutionSettings(**values)
    return settings, sources


def target_for(profile: Profile, request: RunRequest, *, needs_key: bool | None = None) -> Target:
    """Step 4a: provider, model and endpoint, with overrides applied and the endpoint checked.
    ``needs_key``: whether the provider needs a key (and so a model); None asks its spec in the
    default registry."""
    overrides = request.overrides
    explicit = ["provider"]
    model = profile.model
    if profile.model:
        explicit.append("model")
    if overrides.model is not None:
        model = overrides.model
        explicit.append("model")
    endpoint = profile.endpoint
    if endpoint is not None:
        explicit.append("endpoint")
    if overrides.endpoint is not None:
        with translate(InvalidRequestError, "invalid endpoint override", field="endpoint"):
            endpoint = validate_endpoint(overrides.endpoint)
        explicit.append("endpoint")
    if profile.api_key_env:
        explicit.append("api_key_env")
    if needs_key is None:
        needs_key = provider_needs_key(profile.provider)
    if needs_key and not model:
        raise InvalidRequestError(
            f"profile {profile.name!r} names no model for provider {profile.provider!r}",
            profile=profile.name,
            field="model",
        )
    return Target(
        provider=profile.provider,
        model=model,
        endpoint=endpoint,
        api_key_env=profile.api_key_env,
        explicit=tuple(dict.fromkeys(explicit)),
    )


#: Requests carrying more content than this (bytes of artifacts given by value and of input
#: text) are prepared in a worker thread by async runs: decoding, hashing, rendering and reading
#: media headers grow with the content. A request naming a file is prepared there too (reading a
#: file is I/O). Below it, the loop keeps the work (a thread hop costs about 0.1 ms, as much as a
#: whole small run; ``python -m bench.offload``).
OFFLOAD_BYTES = 256 * 1024
# How many input values the weighing looks at before calling a request heavy anyway.
_WEIGH_ITEMS = 10_000


def heavy_to_prepare(request: RunRequest) -> bool:
    """Whether preparing ``request`` could hold an event loop long enough to matter (see
    :data:`OFFLOAD_BYTES`). Cheap: it stops as soon as it knows."""
    weight = 0
    for value in request.artifacts.values():
        if isinstance(value, str):
            return True
        weight += len(value.data)
        if weight > OFFLOAD_BYTES:
            return True
    stack: list[Any] = [request.inputs]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _WEIGH_ITEMS:
            return True
        if isinstance(item, str):
            weight += len(item)
            if weight > OFFLOAD_BYTES:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def credential(
    profile: Profile,
    api_key: str | None,
    env: Mapping[str, str],
    *,
    prompt_id: str | None = None,
    needs_key: bool | None = None,
) -> str | None:
    """Step 4b: a direct key wins; else the profile's variable must be set and non-empty.

    The one place a key enters a run, whatever brought it (a request, the HTTP API, a kernel, a
    batch line, ``verify``): an empty or blank key is no key (a blank direct key falls back to the
    variable, exactly as no key does), and a key shorter than ``MIN_KEY_CHARS`` is refused as a
    key (``InvalidRequestError`` for a direct key, ``APIKeyEnvMissingError`` for a variable),
    never quoted. Whether a key is needed is decided by the provider's spec (``needs_key``; None
    asks the default registry), whatever client will be used.
    """
    direct = given_key(api_key)
    if direct is not None:
        if is_short_key(direct):
            raise InvalidRequestError(
                f"api_key is too short to be an API key (fewer than {MIN_KEY_CHARS} characters)",
                field="api_key",
                prompt_id=prompt_id,
            )
        return direct
    if profile.api_key_env:
        return key_from_env(
            env,
            profile.api_key_env,
            reader=f"profile {profile.name!r}",
            profile=profile.name,
            prompt_id=prompt_id,
        )
    if needs_key is None:
        needs_key = provider_needs_key(profile.provider)
    if needs_key:
        raise APIKeyRequiredError(
            f"provider {profile.provider!r} needs an API key: set api_key_env in profile "
            f"{profile.name!r} or pass api_key",
            provider=profile.provider,
            profile=profile.name,
            prompt_id=prompt_id,
        )
    return None


def load_output_schema(definition: PromptDefinition, validator: Validator) -> LoadedSchema | None:
    """Step 5a: for ``json_schema`` the schema is loaded and compiled now, so a broken schema
    fails before any LLM call (``ValidationError``). Done on every run: the file may have changed."""
    spec = definition.output
    if spec.format != "json_schema":
        return None
    if spec.schema_ is None:
        raise ValidationError(
            f"prompt {definition.id!r} has output format json_schema but no schema",
            prompt_id=definition.id,
        )
    with translate(ValidationError, "loading the output schema", prompt_id=definition.id):
        return validator.load_schema(spec.schema_, relative_to=definition.source)


def output_contract(
    definition: PromptDefinition, loaded: LoadedSchema | None, repair_attempts: int | None
) -> OutputContract:
    """Step 5b: the effective output contract (an override of ``repair_attempts`` wins)."""
    spec = definition.output
    return OutputContract(
        format=spec.format,
        schema_=None if loaded is None else loaded.document,
        schema_hash=None if loaded is None else loaded.hash,
        repair_attempts=spec.repair_attempts if repair_attempts is None else repair_attempts,
        strategy=spec.strategy,
        parse=spec.parse,
    )


def inputs_contract(loaded: LoadedSchema) -> OutputContract:
    """The contract inputs are checked under: strict JSON matching the ``inputs`` schema."""
    return OutputContract(
        format="json_schema", schema_=loaded.document, schema_hash=loaded.hash, parse="strict"
    )


# Keywords by which a schema says what it does with properties it does not list.
_EXTRAS_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def check_declared_inputs(definition: PromptDefinition, inputs: Mapping[str, Any]) -> None:
    """An input the ``inputs`` schema does not declare is refused, naming it and the declared
    ones, when the schema lists ``properties`` and says nothing about others: a typo
    (``max_sentence`` for ``max_sentences``) must not pass silently. A schema that states
    ``additionalProperties`` (or pattern/unevaluated properties) decides for itself."""
    schema = definition.inputs
    if not isinstance(schema, dict):
        return
    declared = schema.get("properties")
    if not isinstance(declared, dict) or any(k in schema for k in _EXTRAS_KEYWORDS):
        return
    undeclared = sorted(set(inputs) - set(declared))
    if undeclared:
        names = ", ".join(repr(n) for n in undeclared)
        known = ", ".join(repr(n) for n in sorted(declared)) or "none"
        raise InvalidRequestError(
            f"prompt {definition.id!r} declares no input {names} (declared inputs: {known})",
            prompt_id=definition.id,
            field="inputs",
        )


def validate_inputs(
    definition: PromptDefinition,
    inputs: dict[str, Any],
    validator: Validator,
    contract_for: Callable[[LoadedSchema], OutputContract] = inputs_contract,
) -> bytes:
    """Step 6a: inputs must be JSON data and satisfy the definition's ``inputs`` schema.

    Returns the canonical JSON of the inputs (hashed for ``inputs_hash``). The check goes through
    the Validator port: the inputs document is validated exactly like a strict JSON output.
    ``contract_for`` lets a caller reuse the contract built for an unchanged schema.
    """
    with translate(InvalidRequestError, "inputs are not JSON data", field="inputs"):
        encoded = canonical_json(inputs)
    _require_string_keys(inputs)  # after encoding, which refuses cycles
    if definition.inputs is None:
        return encoded
    check_declared_inputs(definition, inputs)
    with translate(ValidationError, "loading the inputs schema", prompt_id=definition.id):
        loaded = validator.load_schema(definition.inputs, relative_to=definition.source)
        contract = contract_for(loaded)
        verdict = validator.validate(encoded.decode("utf-8"), contract)
    if not verdict.valid:
        details = "; ".join(_input_issue(i.path, i.keyword, i.message) for i in verdict.issues[:5])
        raise InvalidRequestError(
            f"inputs do not match prompt {definition.id!r}: {details}",
            prompt_id=definition.id,
            field="inputs",
        )
    return encoded


# Keywords whose messages name properties (from the schema, or the input's own keys), never an
# input value; every other keyword's message may quote the value that failed it.
_NAMING_KEYWORDS = frozenset({"required", "additionalProperties", "unevaluatedProperties"})


def _input_issue(path: str, keyword: str, message: str) -> str:
    """One inputs problem for an error message: where and which rule, never the failing value
    (an input may be a key pasted into the wrong field)."""
    where = path or "/"
    if keyword in _NAMING_KEYWORDS:
        return f"{where}: {redact_secret_shapes(message)}"
    return f"{where}: fails {keyword!r}" if keyword else f"{where}: invalid"


def _require_string_keys(inputs: Mapping[str, Any]) -> None:
    """Inputs are JSON data: every mapping key a string. ``{1: 2}`` would hash like ``{"1": 2}``
    (JSON turns the key into text) but render differently, so it is refused, not converted."""
    stack: list[Any] = [inputs]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if not isinstance(key, str):
                    raise InvalidRequestError(
                        f"inputs are not JSON data: a {type(key).__name__} key (keys must be "
                        "strings)",
                        field="inputs",
                    )
                if isinstance(value, Mapping | list | tuple):
                    stack.append(value)
        elif isinstance(item, list | tuple):
            stack.extend(v for v in item if isinstance(v, Mapping | list | tuple))


def read_artifacts(
    definition: PromptDefinition, refs: Mapping[str, str | ArtifactContent], reader: Reader
) -> dict[str, Artifact]:
    """Step 6b: every declared artifact that was given is read and hashed; undeclared or missing
    required ones are request errors. Content given by value goes through the same checks as a
    file (declared type, ``max_bytes``, decoding) without the reader."""
    undeclared = sorted(set(refs) - set(definition.artifacts))
    if undeclared:
        raise InvalidRequestError(
            f"prompt {definition.id!r} declares no artifact named {', '.join(undeclared)}",
            prompt_id=definition.id,
            field="artifacts",
        )
    missing = sorted(n for n, s in definition.artifacts.items() if s.required and n not in refs)
    if missing:
        raise InvalidRequestError(
            f"prompt {definition.id!r} requires artifact {', '.join(missing)}",
            prompt_id=definition.id,
            field="artifacts",
        )
    artifacts: dict[str, Artifact] = {}
    for name in sorted(refs):
        spec = definition.artifacts[name]
        with translate(
            ArtifactLoadError, f"reading artifact {name!r}", prompt_id=definition.id, artifact=name
        ):
            given = refs[name]
            if isinstance(given, ArtifactContent):
                artifacts[name] = artifact_from_content(
                    given, name=name, media_type=spec.media_type, max_bytes=_limit(spec.max_bytes)
                )
            else:
                artifacts[name] = reader.read(
                    given, name=name, media_type=spec.media_type, max_bytes=spec.max_bytes
                )
    return artifacts


def _limit(declared: int | None) -> int:
    # Content by value has no reader whose own limit applies: the default a file gets stands in.
    return DEFAULT_MAX_BYTES if declared is None else declared


_NAME_RE = re.compile(r"[^A-Za-z0-9_-]+")


def structured_output(
    definition: PromptDefinition, contract: OutputContract
) -> StructuredOutput | None:
    """Step 8a: how the provider is asked for structure (``None`` for text)."""
    if contract.format == "text":
        return None
    name = _NAME_RE.sub("_", definition.id)[:64] or "output"
    return StructuredOutput(
        schema_=contract.schema_ if contract.format == "json_schema" else None,
        name=name,
        strategy=contract.strategy,
        format=contract.format,
    )


def definition_hash(definition: PromptDefinition, loaded: LoadedSchema | None) -> str:
    """The definition with its template body and schema document inlined."""
    document: Any = None
    if loaded is not None:
        referenced = getattr(loaded, "referenced", None)
        document = (
            loaded.document if not referenced else {"root": loaded.document, "refs": referenced}
        )
    return hash_json(definition.hash_form(document))


def cache_directives(
    definition: PromptDefinition, rendered: RenderedPrompt, definition_hash: str
) -> CacheDirectives | None:
    """What the request asks of the provider's prompt cache (None when the prompt's cache is off)."""
    spec = definition.cache
    if spec.mode == "off":
        return None
    return CacheDirectives(
        mode=spec.mode, ttl=spec.ttl, points=rendered.cache_points, key=definition_hash
    )
