"""Prepare, as one object: the steps of :mod:`scriptorium.usecase.prepare` called in order, with
the values derived from immutable objects remembered between runs.

A :class:`Planner` turns a ``RunRequest`` into a :class:`Plan`: the ``PreparedRun`` a caller may
see and the ``LLMRequest`` (the only object holding the key) a run sends. ``Runner.prepare`` shows
the first; every run, streamed, observed or answered by a provider batch, starts from the whole
plan, so what ``prepare`` shows is what the run sends.

A plan also carries its profile's fallback chain, resolved when the profile is loaded (a name that
does not load, or a loop, fails the plan), and the request it was made from: a run that falls back
asks :meth:`Planner.plan_fallback` for the next profile's plan, prepared as a run on that profile
would be (:func:`fallback_request` says from what).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import scriptorium.usecase.prepare as steps
from scriptorium.artifact.reader import Reader
from scriptorium.errors import (
    InvalidRequestError,
    ProfileLoadError,
    PromptLoadError,
    PromptRenderError,
    translate,
)
from scriptorium.hashing import hash_bytes, hash_json
from scriptorium.llm.media import check_media, media_bytes
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.llm.registry import ProviderSpec, Registry, WireView
from scriptorium.llm.secrets import route_secrets
from scriptorium.profile.chain import fallback_chain
from scriptorium.profile.model import ExecutionSettings, Profile
from scriptorium.profile.repository import Repository as ProfileRepository
from scriptorium.prompt.renderer import Renderer
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.promptdef.repository import Repository as PromptRepository
from scriptorium.usecase.hashes import prompt_and_request_hashes
from scriptorium.usecase.memo import IdentityMemo
from scriptorium.usecase.model import ArtifactRecord, PreparedRun, RunRequest, SettingSource
from scriptorium.validate.model import LoadedSchema, OutputContract
from scriptorium.validate.validator import Validator

__all__ = ["Plan", "Planner", "fallback_request"]


@dataclass(frozen=True, slots=True)
class Plan:
    """A prepared run plus what only the run needs: the LLM request, with the key; the request it
    was planned from; its profile's fallback chain (the names tried after it, in order) and the
    reasons that move a run along it."""

    prepared: PreparedRun
    request: LLMRequest
    origin: RunRequest | None = None
    fallbacks: tuple[str, ...] = ()
    fallback_on: frozenset[str] = frozenset()
    #: What the route signs with besides the request's key (Bedrock's AWS credentials, read
    #: from the environment the SDK reads): scrubbed at the run's LLM boundary like the key.
    signing_secrets: tuple[str, ...] = ()


def fallback_request(origin: RunRequest, profile: str) -> RunRequest:
    """The request a run of ``origin`` sends to ``profile``, a later profile of its chain: the same
    prompt, inputs, artifacts, metadata and settings overrides, without what names the first
    profile's target (the ``model`` and ``endpoint`` overrides) or its key (a direct ``api_key``
    belongs to the provider it was given for: every later profile reads its own key variable;
    a run given a direct key is not chained by the planner at all)."""
    overrides = origin.overrides
    if overrides.model is not None or overrides.endpoint is not None:
        overrides = overrides.model_copy(update={"model": None, "endpoint": None})
    return origin.model_copy(update={"profile": profile, "api_key": None, "overrides": overrides})


class Planner:
    """Prepares runs: loads, merges, checks the key, loads the schema, validates the inputs, reads
    the artifacts, renders and hashes, through the collaborators it was given (it does no I/O of
    its own). Safe to share between threads: the only state is content-keyed memos."""

    def __init__(
        self,
        *,
        prompts: PromptRepository,
        profiles: ProfileRepository,
        artifacts: Reader,
        renderer: Renderer,
        validator: Validator,
        providers: Registry,
        env: Mapping[str, str] | None = None,
        default_profile: str | None = None,
        known_providers_only: bool = False,
    ) -> None:
        self._prompts = prompts
        self._profiles = profiles
        self._artifacts = artifacts
        self._renderer = renderer
        self._validator = validator
        self._providers = providers
        self._env = env
        self._default_profile = default_profile
        self._known_only = known_providers_only
        # Values derived from frozen objects only, remembered by those objects' identity.
        self._hashes: IdentityMemo[str] = IdentityMemo()
        self._effective_memo: IdentityMemo[
            tuple[ExecutionSettings, dict[str, SettingSource], Target]
        ] = IdentityMemo()
        self._contracts: IdentityMemo[tuple[OutputContract, StructuredOutput | None]] = (
            IdentityMemo()
        )
        self._inputs_contracts: IdentityMemo[OutputContract] = IdentityMemo()
        self._shown: IdentityMemo[OutputContract] = IdentityMemo()

    def plan(self, request: RunRequest) -> Plan:
        """The plan of ``request``; raises the step's sentinel when a step fails (a fallback
        chain that does not load or loops included)."""
        return self._plan(request, chain=True)

    def plan_fallback(self, origin: RunRequest, profile: str) -> Plan:
        """The plan of ``origin`` on ``profile``, a later profile of its chain (see
        :func:`fallback_request`); raises as :meth:`plan` does."""
        return self._plan(fallback_request(origin, profile), chain=False)

    def _plan(self, request: RunRequest, *, chain: bool) -> Plan:
        if not isinstance(request, RunRequest):
            raise InvalidRequestError("expected a RunRequest", field="request")
        prompt_id = request.prompt_id
        steps.check_prompt_id(prompt_id)
        with translate(PromptLoadError, f"loading prompt {prompt_id!r}", prompt_id=prompt_id):
            definition = self._prompts.get(prompt_id)
        profile_name = steps.select_profile(request, definition, self._default_profile)
        with translate(
            ProfileLoadError,
            f"loading profile {profile_name!r}",
            prompt_id=prompt_id,
            profile=profile_name,
        ):
            profile = self._profiles.get(profile_name)
            # The chain of the run's profile only: a later profile's own is part of it already.
            fallbacks = fallback_chain(profile, self._profiles.get) if chain else ()
            if request.api_key is not None:
                # A run given its own key is not chained (the chain is still checked): the key
                # was given for this profile's target, and a later profile would make the
                # caller's run on the engine's own keys.
                fallbacks = ()
        if self._known_only:
            spec: ProviderSpec | None = steps.known_provider(profile, self._providers)
        else:  # an injected client serves every profile, whatever its provider's name
            spec = self._providers.find(profile.provider)
        env = os.environ if self._env is None else self._env
        settings, sources, target = self._effective(profile, request, spec)
        target = steps.resolve_endpoint(target, profile, spec, env, prompt_id=prompt_id)
        route = (
            None if spec is None else self._providers.route_for(spec, profile.options, profile.name)
        )
        found = steps.credential(
            profile,
            None if request.api_key is None else request.api_key.get_secret_value(),
            env,
            route,
            target=target,
            prompt_id=prompt_id,
        )
        key, target = found.key, found.shown_on(target)
        loaded = steps.load_output_schema(definition, self._validator)
        contract, structured = self._contract(definition, loaded, request.overrides.repair_attempts)
        definition_hash = self._definition_hash(definition, loaded)
        inputs_json = steps.validate_inputs(
            definition, request.inputs, self._validator, self._inputs_contract
        )
        artifacts = steps.read_artifacts(definition, request.artifacts, self._artifacts)
        with translate(
            PromptRenderError,
            f"rendering prompt {prompt_id!r}",
            prompt_id=prompt_id,
            secrets=[key],
        ):
            rendered = self._renderer.render(
                definition, inputs=request.inputs, artifacts=artifacts, cache_key=definition_hash
            )
        cache = steps.cache_directives(definition, rendered, definition_hash)
        llm_request = LLMRequest(
            target=target,
            api_key=key,
            system=rendered.system,
            messages=rendered.messages,
            settings=settings,
            structured_output=structured,
            session_id=rendered.session_id,
            metadata=request.metadata,
            pricing=None if profile.pricing is None else _pricing(profile),
            options=profile.options,
            profile_source=profile.source,
            cache=cache,
            prompt_id=prompt_id,
            media=media_bytes(rendered.messages, artifacts),
            profile=profile.name,
        )
        if spec is None:  # a provider only an injected client knows: sent as it is
            view = WireView(llm_request.system, None, ())
        else:
            if llm_request.media:
                limits = spec.media_limits(target.endpoint, profile.options, profile.name)
                check_media(llm_request, limits, prompt_id=prompt_id, profile=profile.name)
            # What the provider's adapter sends: prepare shows that, not the request before it.
            try:
                view = spec.wire_view(llm_request)
            except InvalidRequestError as err:
                raise _with_source(err, sources, profile.name, prompt_id) from err
        if view.strategy is not None and view.strategy != contract.strategy:
            # Shown as the adapter will send it: `auto` resolved to what the model supports.
            contract = self._shown.get(
                (contract,), view.strategy, _resolved, contract, view.strategy
            )
        prompt_hash, request_hash = prompt_and_request_hashes(
            rendered, llm_request, contract.schema_hash, shown_system=view.system
        )
        prepared = PreparedRun(
            prompt_id=prompt_id,
            prompt_version=definition.version,
            definition_hash=definition_hash,
            profile=profile.name,
            profile_hash=self._profile_hash(profile),
            target=target,
            settings=settings,
            settings_sources=sources,
            ignored_settings=view.ignored_settings,
            output=contract,
            artifacts=tuple(ArtifactRecord(**a.summary()) for a in artifacts.values()),
            inputs_hash=hash_bytes(inputs_json),
            system=view.system,
            messages=rendered.messages,
            session_id=rendered.session_id,
            rendered_prompt_hash=prompt_hash,
            request_hash=request_hash,
            cache=cache,
            schema_dropped=view.dropped,
            reasoning=view.reasoning,
            api=view.api,
        )
        return Plan(
            prepared=prepared,
            request=llm_request,
            origin=request,
            fallbacks=tuple(p.name for p in fallbacks),
            fallback_on=profile.fallback_reasons,
            signing_secrets=() if route is None else route_secrets(route.secret_env, os.environ),
        )

    def _effective(
        self, profile: Profile, request: RunRequest, spec: ProviderSpec | None
    ) -> tuple[ExecutionSettings, dict[str, SettingSource], Target]:
        """Merged settings, their sources and the target: a function of the profile and the
        overrides alone (the profile's provider spec is fixed for this planner)."""
        return self._effective_memo.get(
            (profile,), request.overrides, _effective, profile, request, spec
        )

    def _contract(
        self,
        definition: PromptDefinition,
        loaded: LoadedSchema | None,
        repair_attempts: int | None,
    ) -> tuple[OutputContract, StructuredOutput | None]:
        """The output contract and the structured-output spec, a function of the definition, the
        loaded schema and the repair override."""
        return self._contracts.get(
            (definition, loaded), repair_attempts, _contract, definition, loaded, repair_attempts
        )

    def _inputs_contract(self, loaded: LoadedSchema) -> OutputContract:
        """The inputs contract for a loaded inputs schema."""
        return self._inputs_contracts.get((loaded,), None, steps.inputs_contract, loaded)

    def _definition_hash(self, definition: PromptDefinition, loaded: LoadedSchema | None) -> str:
        extra = None if loaded is None else loaded.hash
        return self._hashes.get((definition,), extra, steps.definition_hash, definition, loaded)

    def _profile_hash(self, profile: Profile) -> str:
        return self._hashes.get((profile,), None, _profile_hash, profile)


def _effective(
    profile: Profile, request: RunRequest, spec: ProviderSpec | None
) -> tuple[ExecutionSettings, dict[str, SettingSource], Target]:
    settings, sources = steps.merge_settings(profile, request)
    needs_model = spec is not None and spec.needs_model
    return settings, sources, steps.target_for(profile, request, needs_key=needs_model)


def _contract(
    definition: PromptDefinition, loaded: LoadedSchema | None, repair_attempts: int | None
) -> tuple[OutputContract, StructuredOutput | None]:
    contract = steps.output_contract(definition, loaded, repair_attempts)
    return contract, steps.structured_output(definition, contract)


def _resolved(contract: OutputContract, strategy: str) -> OutputContract:
    return contract.model_copy(update={"strategy": strategy})


def _with_source(
    err: InvalidRequestError,
    sources: Mapping[str, SettingSource],
    profile: str,
    prompt_id: str,
) -> InvalidRequestError:
    """``err`` (a provider refusing the settings, such as a temperature a reasoning model does not
    take) saying where the setting it names came from: the profile, an override or the default,
    so the user knows which file or flag to change."""
    field = err.field or ""
    name = field.removeprefix("settings.")
    source = sources.get(name) if field.startswith("settings.") else None
    if source is None:
        return err
    where = {
        "profile": f"settings.{name} comes from profile {profile!r}",
        "override": f"settings.{name} comes from this request's overrides",
        "default": f"settings.{name} is the default",
    }[source]
    return InvalidRequestError(
        f"{err.message} ({where})",
        field=field,
        profile=err.profile or profile,
        prompt_id=err.prompt_id or prompt_id,
        path=err.path,
    )


def _pricing(profile: Profile) -> dict[str, float] | None:
    # Prices not stated stay out: the pricing module derives them (null means the same).
    return None if profile.pricing is None else profile.pricing.model_dump(exclude_none=True)


def _profile_hash(profile: Profile) -> str:
    return hash_json(profile.hash_form())
