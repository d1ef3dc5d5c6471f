"""The Prepare flow (load, select, merge, check the key, resolve the output, check inputs and
artifacts, render, hash) as small functions the Runner calls in order.

Each step translates whatever its collaborator raises into that step's sentinel, cause kept; the
functions here hold no state, so a Runner can serve many requests at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scriptorium._suggest import did_you_mean
from scriptorium.artifact.build import DEFAULT_MAX_BYTES, artifact_from_content
from scriptorium.artifact.model import Artifact, ArtifactContent
from scriptorium.artifact.reader import Reader
from scriptorium.errors import (
    APIKeyRequiredError,
    ArtifactLoadError,
    InvalidRequestError,
    ProfileLoadError,
    ProfileRequiredError,
    ValidationError,
    translate,
)
from scriptorium.hashing import canonical_json, hash_json
from scriptorium.llm.model import (
    CacheDirectives,
    StructuredOutput,
    Target,
    given_key,
    key_from_env,
)
from scriptorium.llm.registry import ProviderSpec, Registry, Route
from scriptorium.profile.model import (
    DEFAULT_SETTINGS,
    ExecutionSettings,
    Profile,
    is_private_endpoint,
    validate_endpoint,
)
from scriptorium.prompt.model import RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id
from scriptorium.usecase.input_issues import input_issue
from scriptorium.usecase.model import RunRequest, SettingSource
from scriptorium.validate.model import LoadedSchema, OutputContract
from scriptorium.validate.validator import Validator

__all__ = [
    "OFFLOAD_BYTES",
    "Credential",
    "check_declared_inputs",
    "check_prompt_id",
    "credential",
    "definition_hash",
    "heavy_to_prepare",
    "inputs_contract",
    "known_provider",
    "load_output_schema",
    "merge_settings",
    "output_contract",
    "read_artifacts",
    "resolve_endpoint",
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


def target_for(profile: Profile, request: RunRequest, *, needs_key: bool) -> Target:
    """Step 4a: provider, model and endpoint, with overrides applied and the endpoint checked.
    ``needs_key``: whether the provider needs a key (and so a model), as the injected registry's
    spec for it says."""
    overrides = request.overrides
    explicit = ["provider"]
    model = profile.model
    if profile.model:
        explicit.append("model")
    if overrides.model is not None:
        model = overrides.model
        explicit.append("model")
    endpoint = profile.endpoint
    source: Literal["profile", "override"] | None = None
    if endpoint is not None:
        explicit.append("endpoint")
        source = "profile"
    if overrides.endpoint is not None:
        with translate(InvalidRequestError, "invalid endpoint override", field="endpoint"):
            endpoint = validate_endpoint(
                overrides.endpoint, allow_insecure_http=profile.allow_insecure_http
            )
        explicit.append("endpoint")
        source = "override"
    if profile.api_key_env:
        explicit.append("api_key_env")
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
        endpoint_source=source,
    )


def known_provider(profile: Profile, providers: Registry) -> ProviderSpec:
    """Step 3a, for a run whose client routes by provider: the profile's provider must be one the
    registry knows. ``ProfileLoadError`` (before any key is looked up, so a typo is never
    reported as a missing key) naming the known providers and the closest one."""
    spec = providers.find(profile.provider)
    if spec is None:
        raise ProfileLoadError(
            f"profile {profile.name!r}: {providers.unknown_message(profile.provider)}",
            profile=profile.name,
            reason="invalid",
        )
    return spec


def resolve_endpoint(
    target: Target,
    profile: Profile,
    spec: ProviderSpec | None,
    env: Mapping[str, str],
    *,
    prompt_id: str | None = None,
) -> Target:
    """Step 4c: a target with no endpoint takes the provider SDK's own base-URL variable from
    ``env`` (source ``env``; the route's own variable, for a cloud platform); then the endpoint,
    wherever it came from, must be one the provider can use (its spec's rule, such as no ``/v1``
    on an Anthropic base URL). The target shows the route's platform and region."""
    route = None if spec is None else spec.route_for(profile.options, profile.name)
    if route is not None and route.platform is not None:
        target = target.model_copy(update={"platform": route.platform, "region": route.region})
    variable = None if route is None else route.base_url_env
    if target.endpoint is None and variable:
        value = env.get(variable)
        if value:
            with translate(
                InvalidRequestError, f"invalid {variable}", field="endpoint", prompt_id=prompt_id
            ):
                validate_endpoint(value, allow_insecure_http=profile.allow_insecure_http)
            target = target.model_copy(update={"endpoint": value, "endpoint_source": "env"})
    problem = (
        None if spec is None or target.endpoint is None else spec.check_endpoint(target.endpoint)
    )
    if problem is not None:
        if target.endpoint_source == "profile":
            raise ProfileLoadError(
                f"profile {profile.name!r}: {problem}", profile=profile.name, reason="invalid"
            )
        where = variable if target.endpoint_source == "env" else "the endpoint override"
        raise InvalidRequestError(f"{where}: {problem}", field="endpoint", prompt_id=prompt_id)
    return target


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


@dataclass(frozen=True)
class Credential:
    """What the credential step found: the key (None: none is sent), and the variable it was
    read from with why that one (``profile``: the profile names it; ``default``: the provider's
    conventional variable, the profile naming none)."""

    key: str | None
    env_var: str | None = None
    source: Literal["profile", "default"] | None = None

    def shown_on(self, target: Target) -> Target:
        """``target`` saying which variable gave the key, and why (what ``prepare`` shows)."""
        if self.env_var is None:
            return target
        return target.model_copy(
            update={"api_key_env": self.env_var, "api_key_source": self.source}
        )


def credential(
    profile: Profile,
    api_key: str | None,
    env: Mapping[str, str],
    route: Route | None,
    *,
    target: Target | None = None,
    prompt_id: str | None = None,
) -> Credential:
    """Step 4b: which key a run sends. A direct key wins; else the variable the profile names
    (``APIKeyEnvMissingError`` when it is unset or blank); else the variable its options name for
    an access token (``route.token_env``, a cloud platform's); else the provider's conventional
    variables (``route.key_envs``, the ones its SDK reads). On a route whose profile's own
    ``endpoint`` is another server (``route.endpoint_names_key``: OpenAI's, whose compatible
    servers are many) those are not read: the profile names its variable or sends no key, which
    a loopback or private endpoint may (a local server); elsewhere a route that needs a key
    raises ``APIKeyRequiredError`` naming what was looked for.

    The one place a key enters a run, whatever brought it (a request, the HTTP API, a kernel, a
    batch line, ``verify``): an empty or blank key is no key (a blank direct key falls back to the
    variable, exactly as no key does); any other value is a key as given, however short (local
    servers document ``EMPTY``, ``none``, ``ollama``). Whether a key is needed is the profile's
    ``route``; None is a provider no spec describes (an injected client serves it), whose
    ``api_key_env`` is read as named. Where the route needs no key (a replay that is not
    recording, the ``fake`` provider), ``api_key_env`` is read when the variable is set and
    passed over when it is not: a replay profile that names its recording key still replays in
    CI without it.
    """
    if route is not None and route.no_key_env and profile.api_key_env:
        raise InvalidRequestError(
            f"profile {profile.name!r}: {route.no_key_env}",
            field="api_key_env",
            profile=profile.name,
            prompt_id=prompt_id,
        )
    direct = given_key(api_key)
    if direct is not None:
        return Credential(direct)
    fields = {"profile": profile.name, "prompt_id": prompt_id}
    optional = route is not None and not route.needs_key
    variable = profile.api_key_env
    if variable and not (optional and given_key(env.get(variable)) is None):
        reader = f"profile {profile.name!r}"
        return Credential(key_from_env(env, variable, reader=reader, **fields), variable, "profile")
    if route is not None and route.token_env:
        reader = f"profile {profile.name!r} (its options)"
        return Credential(key_from_env(env, route.token_env, reader=reader, **fields))
    if route is None or variable:
        return Credential(None)
    own_endpoint = (
        route.endpoint_names_key
        and target is not None
        and target.endpoint_source in ("profile", "override")
    )
    looked: tuple[str, ...] = () if own_endpoint else route.key_envs
    for name in looked:
        key = given_key(env.get(name))
        if key is not None:
            return Credential(key, name, "default")
    if not route.needs_key:
        return Credential(None)
    endpoint = None if target is None else target.endpoint
    if own_endpoint and is_private_endpoint(endpoint or ""):
        return Credential(None)
    if looked:
        message = (
            f"provider {profile.provider!r} needs an API key: profile {profile.name!r} names no "
            f"api_key_env and {' / '.join(looked)} is unset or empty (set it, name api_key_env, "
            "or pass api_key)"
        )
    else:
        where = "its endpoint" if own_endpoint else "it"
        message = (
            f"provider {profile.provider!r} needs an API key: profile {profile.name!r} names no "
            f"api_key_env for {where} (name the variable holding the key, or pass api_key)"
        )
    raise APIKeyRequiredError(
        message,
        provider=profile.provider,
        env_var=looked[0] if looked else None,
        **fields,
    )


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
    # ``additionalProperties: false`` refuses the same names: said the same way, with a hint.
    stated = [k for k in _EXTRAS_KEYWORDS if k in schema]
    closed = stated == ["additionalProperties"] and schema["additionalProperties"] is False
    if not isinstance(declared, dict) or (stated and not closed):
        return
    undeclared = sorted(set(inputs) - set(declared))
    if undeclared:
        names = ", ".join(repr(n) for n in undeclared)
        known = ", ".join(repr(n) for n in sorted(declared)) or "none"
        hint = did_you_mean(undeclared[0], declared)
        raise InvalidRequestError(
            f"prompt {definition.id!r} declares no input {names} (declared inputs: {known}){hint}",
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
        details = "; ".join(
            input_issue(i.path, i.keyword, i.message, definition.inputs, inputs)
            for i in verdict.issues[:5]
        )
        raise InvalidRequestError(
            f"inputs do not match prompt {definition.id!r}: {details}",
            prompt_id=definition.id,
            field="inputs",
        )
    return encoded


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
        declared = ", ".join(repr(n) for n in sorted(definition.artifacts)) or "none"
        hint = did_you_mean(undeclared[0], definition.artifacts)
        raise InvalidRequestError(
            f"prompt {definition.id!r} declares no artifact named {', '.join(undeclared)} "
            f"(declared artifacts: {declared}){hint}",
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
