"""The Runner: prepare a run, call the model, validate, repair; sync and async share one flow."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scriptorium.artifact.reader import Reader
from scriptorium.errors import (
    InvalidRequestError,
    LLMGenerateError,
    ProfileLoadError,
    PromptLoadError,
    PromptRenderError,
    ValidationError,
    translate,
)
from scriptorium.hashing import hash_bytes, hash_json, hash_text
from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.media import check_media, media_bytes
from scriptorium.llm.model import LLMRequest, LLMResponse, StructuredOutput, Target, TokenCount
from scriptorium.llm.registry import ProviderSpec, Registry, WireView, default_registry
from scriptorium.llm.tokens import estimate_input_tokens
from scriptorium.observe import scope as run_scope
from scriptorium.observe.observer import Observer
from scriptorium.profile.model import ExecutionSettings, Profile
from scriptorium.profile.repository import Repository as ProfileRepository
from scriptorium.prompt.renderer import Renderer
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.promptdef.repository import Repository as PromptRepository
from scriptorium.usecase import observed
from scriptorium.usecase import prepare as steps
from scriptorium.usecase.boundary import LLMBoundary, checked_repair, checked_response
from scriptorium.usecase.hashes import prompt_and_request_hashes
from scriptorium.usecase.memo import IdentityMemo
from scriptorium.usecase.model import (
    ArtifactRecord,
    AttemptRecord,
    OutputRecord,
    PreparedRun,
    RunRequest,
    RunResult,
    SettingSource,
)
from scriptorium.usecase.repair import OutputRepairer, RepairContext, RepairResult
from scriptorium.usecase.stream import AsyncRunStream, RunStream
from scriptorium.usecase.unicode import checked_verdict as unicode_checked
from scriptorium.validate.model import (
    LoadedSchema,
    OutputContract,
    ValidationIssue,
    ValidationResult,
)
from scriptorium.validate.validator import Validator

__all__ = ["Runner"]

log = logging.getLogger("scriptorium.runner")

Clock = Callable[[], datetime]
NewId = Callable[[], str]

_NO_REPAIR_AFTER = {"length": "truncated", "refusal": "refusal"}


@dataclass(frozen=True, slots=True)
class _Plan:
    """A prepared run plus what only the run needs: the request with the key, and the contract."""

    prepared: PreparedRun
    request: LLMRequest


@dataclass(frozen=True, slots=True)
class _Generate:
    request: LLMRequest


@dataclass(frozen=True, slots=True)
class _Repair:
    context: RepairContext


_Call = _Generate | _Repair


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex


class Runner:
    """Executes prompt definitions through injected collaborators.

    The constructor only stores its collaborators (no I/O). ``run`` always goes through the same
    preparation as ``prepare``; nothing is kept between requests except content-keyed caches.
    """

    def __init__(
        self,
        *,
        prompts: PromptRepository,
        profiles: ProfileRepository,
        artifacts: Reader,
        renderer: Renderer,
        client: Client | AsyncClient,
        validator: Validator,
        repairer: OutputRepairer | None = None,
        env: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        new_id: NewId | None = None,
        default_profile: str | None = None,
        observer: Observer | None = None,
        providers: Registry | None = None,
    ) -> None:
        self._prompts = prompts
        self._providers = providers or default_registry()
        self._observer = observer
        self._profiles = profiles
        self._artifacts = artifacts
        self._renderer = renderer
        self._client = client
        self._kinds: tuple[object, Client | None, AsyncClient | None] = (None, None, None)
        self._validator = validator
        self._repairer = repairer
        self._env = env
        self._clock = clock or _utcnow
        self._new_id = new_id or _new_id
        self._default_profile = default_profile
        # Values derived from frozen objects only, remembered by those objects' identity.
        self._hashes: IdentityMemo[str] = IdentityMemo()
        self._effective_memo: IdentityMemo[
            tuple[ExecutionSettings, dict[str, SettingSource], Target]
        ] = IdentityMemo()
        self._contracts: IdentityMemo[tuple[OutputContract, StructuredOutput | None]] = (
            IdentityMemo()
        )
        self._inputs_contracts: IdentityMemo[OutputContract] = IdentityMemo()

    # -- public API -------------------------------------------------------------------------

    def prepare(self, request: RunRequest) -> PreparedRun:
        """Everything but the LLM call: load, merge, check the key, load the schema, validate the
        inputs, read the artifacts, render, hash."""
        return self._plan(request).prepared

    def run(self, request: RunRequest) -> RunResult:
        """Prepare, generate, validate and (when allowed) repair."""
        started = self._clock()
        run_id = self._new_id()
        if self._observer is not None:
            return observed.run_observed(self, self._observer, request, run_id, started)
        plan = self._plan(request)
        prepared = plan.prepared
        token = run_scope.enter_for_logs(run_id, prepared.prompt_id, prepared.request_hash)
        try:
            flow = self._flow(plan)
            call = next(flow)
            while True:
                try:
                    call = flow.send(self._call(call, plan))
                except StopIteration as done:
                    return self._result(run_id, started, plan, done.value)
        finally:
            if token is not None:
                run_scope.leave(token)

    async def arun(self, request: RunRequest) -> RunResult:
        """The async twin of :meth:`run`, with the same contract."""
        started = self._clock()
        run_id = self._new_id()
        if self._observer is not None:
            return await observed.arun_observed(self, self._observer, request, run_id, started)
        plan = self._plan(request)
        prepared = plan.prepared
        token = run_scope.enter_for_logs(run_id, prepared.prompt_id, prepared.request_hash)
        try:
            flow = self._flow(plan)
            call = next(flow)
            while True:
                try:
                    call = flow.send(await self._acall(call, plan))
                except StopIteration as done:
                    return self._result(run_id, started, plan, done.value)
        finally:
            if token is not None:
                run_scope.leave(token)

    def stream(self, request: RunRequest) -> RunStream:
        """The run as events while the model writes; ``result()`` is what :meth:`run` returns.
        Prepares now (its errors raise here); the model is called when the stream is read."""
        started = self._clock()
        run_id = self._new_id()
        return RunStream(self, request, run_id, started)

    def astream(self, request: RunRequest) -> AsyncRunStream:
        """The async twin of :meth:`stream`."""
        started = self._clock()
        run_id = self._new_id()
        return AsyncRunStream(self, request, run_id, started)

    def request_for(self, request: RunRequest) -> tuple[PreparedRun, LLMRequest]:
        """What a run of ``request`` would send: its prepared run and the LLM request (the key
        included), for drivers that send the generation themselves (provider batches)."""
        plan = self._plan(request)
        return plan.prepared, plan.request

    def run_answered(
        self, request: RunRequest, answer: Callable[[LLMRequest], LLMResponse]
    ) -> RunResult:
        """A run whose first generation is ``answer(llm_request)`` instead of a client call (a
        provider batch's result for this very request). Everything else is the run's own:
        preparation, the LLM boundary's checks and translation, validation, repairs (through the
        client, when a repairer is present), usage and the result."""
        started = self._clock()
        run_id = self._new_id()

        def first_answer(plan: _Plan) -> LLMResponse:
            with self._llm_boundary(plan, "reading the batch result"):
                return checked_response(answer(plan.request))

        if self._observer is not None:
            return observed.run_observed(
                self, self._observer, request, run_id, started, first_answer
            )
        plan = self._plan(request)
        flow = self._flow(plan)
        call = next(flow)
        first: LLMResponse | None = first_answer(plan)
        while True:
            try:
                outcome = first if first is not None else self._call(call, plan)
                first = None
                call = flow.send(outcome)
            except StopIteration as done:
                return self._result(run_id, started, plan, done.value)

    def count_tokens(self, request: RunRequest) -> TokenCount:
        """The input tokens of the prepared request: the client's own count when it has one
        (``count_tokens``, e.g. Anthropic's counting endpoint), else a local estimate."""
        plan = self._plan(request)
        target = plan.prepared.target
        counter = getattr(self._client, "count_tokens", None)
        if callable(counter):
            with self._llm_boundary(plan, "counting tokens"):
                counted = counter(plan.request)
            if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
                return TokenCount(
                    input_tokens=counted,
                    estimated=False,
                    provider=target.provider,
                    model=target.model,
                )
        return TokenCount(
            input_tokens=estimate_input_tokens(plan.request),
            estimated=True,
            provider=target.provider,
            model=target.model,
        )

    # -- prepare ----------------------------------------------------------------------------

    def _plan(self, request: RunRequest) -> _Plan:
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
        spec = self._providers.find(profile.provider)
        settings, sources, target = self._effective(profile, request, spec)
        key = steps.credential(
            profile,
            None if request.api_key is None else request.api_key.get_secret_value(),
            os.environ if self._env is None else self._env,
            prompt_id=prompt_id,
            needs_key=spec is not None and spec.needs_key,
        )
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
        )
        if spec is None:  # a provider only an injected client knows: sent as it is
            view = WireView(llm_request.system, None, ())
        else:
            if llm_request.media:
                limits = spec.media_limits(target.endpoint, profile.options, profile.name)
                check_media(llm_request, limits, prompt_id=prompt_id, profile=profile.name)
            # What the provider's adapter sends: prepare shows that, not the request before it.
            view = spec.wire_view(llm_request)
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
        )
        return _Plan(prepared=prepared, request=llm_request)

    def _effective(
        self, profile: Profile, request: RunRequest, spec: ProviderSpec | None
    ) -> tuple[ExecutionSettings, dict[str, SettingSource], Target]:
        """Merged settings, their sources and the target: a function of the profile and the
        overrides alone (the profile's provider spec is fixed for this runner)."""
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

    # -- the run flow, shared by run and arun ------------------------------------------------

    def _flow(
        self, plan: _Plan
    ) -> Generator[_Call, Any, tuple[list[_Generation], ValidationResult]]:
        """Yields the calls to make and receives their outcomes; returns the generations made and
        the final verdict. Holds no I/O, so both drivers share every rule of the run."""
        contract = plan.prepared.output
        response: LLMResponse = yield _Generate(plan.request)
        verdict = self._judge(response, contract)
        generations = [_Generation("initial", response, verdict)]
        repairs = 0
        while self._may_repair(verdict, response, contract, repairs):
            repairs += 1
            context = RepairContext(
                prepared=plan.prepared,
                request=plan.request,
                previous_output=response.text,
                issues=verdict.issues,
                attempt=repairs,
            )
            outcome: RepairResult | LLMGenerateError = yield _Repair(context)
            if isinstance(outcome, LLMGenerateError):
                # A failed repair call ends the repairs but keeps what was already generated and
                # paid for; the failure is reported as an issue, not raised.
                failed = ValidationIssue(
                    message=f"repair {repairs} failed: {outcome.message}", keyword="repair_failed"
                )
                verdict = verdict.model_copy(update={"issues": (*verdict.issues, failed)})
                generations[-1] = generations[-1].with_failed_calls(outcome.attempts or 0)
                break
            response = outcome.response
            verdict = self._judge(response, contract)
            generations.append(_Generation("repair", response, verdict))
        return generations, verdict

    def _may_repair(
        self,
        verdict: ValidationResult,
        response: LLMResponse,
        contract: OutputContract,
        repairs: int,
    ) -> bool:
        return (
            self._repairer is not None
            and not verdict.valid
            and contract.format in ("json", "json_schema")
            and repairs < contract.repair_attempts
            and response.finish_reason not in _NO_REPAIR_AFTER
        )

    def _judge(self, response: LLMResponse, contract: OutputContract) -> ValidationResult:
        with translate(ValidationError, "validating the output"):
            verdict = self._validator.validate(response.text, contract)
        verdict = unicode_checked(verdict, response)
        keyword = _NO_REPAIR_AFTER.get(response.finish_reason)
        if keyword is not None:
            why = (
                "the generation stopped at max_tokens; the output is incomplete"
                if keyword == "truncated"
                else "the model refused to answer"
            )
            issue = ValidationIssue(message=why, keyword=keyword)
            verdict = verdict.model_copy(
                update={"valid": False, "value": None, "issues": (issue, *verdict.issues)}
            )
        return verdict

    # -- drivers ------------------------------------------------------------------------------

    def _call(self, call: _Call, plan: _Plan) -> LLMResponse | RepairResult | LLMGenerateError:
        if isinstance(call, _Generate):
            with self._llm_boundary(plan, "calling the model"):
                sync_client = self._client_kinds()[0]
                if sync_client is None:
                    raise LLMGenerateError("the client has no generate()", reason="config")
                return checked_response(sync_client.generate(call.request))
        try:
            with self._llm_boundary(plan, "repairing the output"):
                assert self._repairer is not None
                return checked_repair(self._repairer.repair(call.context))
        except LLMGenerateError as err:
            return err

    async def _acall(
        self, call: _Call, plan: _Plan
    ) -> LLMResponse | RepairResult | LLMGenerateError:
        import asyncio  # not at module level: already loaded here, and slow to import for sync use

        if isinstance(call, _Generate):
            with self._llm_boundary(plan, "calling the model"):
                sync_client, async_client = self._client_kinds()
                if async_client is not None:
                    return checked_response(await async_client.agenerate(call.request))
                if sync_client is not None:
                    generate = sync_client.generate
                    return checked_response(await asyncio.to_thread(generate, call.request))
                raise LLMGenerateError("the client has no generate()", reason="config")
        try:
            with self._llm_boundary(plan, "repairing the output"):
                repairer = self._repairer
                assert repairer is not None
                arepair = getattr(repairer, "arepair", None)
                if arepair is not None:
                    return checked_repair(await arepair(call.context))
                return checked_repair(await asyncio.to_thread(repairer.repair, call.context))
        except LLMGenerateError as err:
            return err

    def _client_kinds(self) -> tuple[Client | None, AsyncClient | None]:
        """The client as a sync and as an async client (None where it is not one), decided once
        per client object: isinstance against a runtime-checkable Protocol is slow per call."""
        client = self._client
        kinds = self._kinds
        if kinds[0] is not client:
            sync = client if isinstance(client, Client) else None
            aio = client if isinstance(client, AsyncClient) else None
            kinds = self._kinds = (client, sync, aio)
        return kinds[1], kinds[2]

    def _llm_boundary(self, plan: _Plan, what: str) -> LLMBoundary:
        return LLMBoundary(plan.prepared, plan.request, what)

    # -- the result ---------------------------------------------------------------------------

    def _result(
        self,
        run_id: str,
        started: datetime,
        plan: _Plan,
        outcome: tuple[list[_Generation], ValidationResult],
    ) -> RunResult:
        generations, verdict = outcome
        attempts = tuple(g.record() for g in generations)
        usage = attempts[0].usage
        for attempt in attempts[1:]:
            usage = usage + attempt.usage
        last = generations[-1].response
        verdict = verdict.model_copy(
            update={
                "attempts": len(attempts),
                "repaired": verdict.valid and len(attempts) > 1,
            }
        )
        finished = self._clock()
        result = RunResult(
            run_id=run_id,
            started_at=started,
            finished_at=finished,
            duration_ms=max(0.0, (finished - started).total_seconds() * 1000.0),
            prepared=plan.prepared,
            output=OutputRecord(text=last.text, sha256=hash_text(last.text)),
            validation=verdict,
            attempts=attempts,
            usage=usage,
            finish_reason=last.finish_reason,
            model=last.model or plan.prepared.target.model,
            metadata=_result_metadata(last, plan.prepared),
        )
        log.debug(
            "run %s prompt=%s valid=%s attempts=%d llm_calls=%d",
            run_id,
            plan.prepared.prompt_id,
            verdict.valid,
            len(attempts),
            usage.llm_calls,
            extra={
                "run_id": run_id,
                "prompt_id": plan.prepared.prompt_id,
                "request_hash": plan.prepared.request_hash,
            },
        )
        return result


def _effective(
    profile: Profile, request: RunRequest, spec: ProviderSpec | None
) -> tuple[ExecutionSettings, dict[str, SettingSource], Target]:
    settings, sources = steps.merge_settings(profile, request)
    needs_key = spec is not None and spec.needs_key
    return settings, sources, steps.target_for(profile, request, needs_key=needs_key)


def _contract(
    definition: PromptDefinition, loaded: LoadedSchema | None, repair_attempts: int | None
) -> tuple[OutputContract, StructuredOutput | None]:
    contract = steps.output_contract(definition, loaded, repair_attempts)
    return contract, steps.structured_output(definition, contract)


def _pricing(profile: Profile) -> dict[str, float] | None:
    # Prices not stated stay out: the pricing module derives them (null means the same).
    return None if profile.pricing is None else profile.pricing.model_dump(exclude_none=True)


# Keys every RunResult.metadata has, None when the adapter did not report them, so consumers can
# read them without guarding against absence.
_METADATA_KEYS = ("request_id", "strategy", "service_tier", "pricing")


def _result_metadata(response: LLMResponse, prepared: PreparedRun) -> dict[str, Any]:
    """The last generation's adapter metadata; ``ignored_settings`` always said, from the prepared
    run when the client did not report it (an injected client knows nothing of the provider)."""
    metadata = dict(response.metadata)
    if "ignored_settings" not in metadata:
        metadata["ignored_settings"] = list(prepared.ignored_settings)
    for key in _METADATA_KEYS:
        metadata.setdefault(key, None)
    return metadata


def _profile_hash(profile: Profile) -> str:
    return hash_json(profile.hash_form())


@dataclass(frozen=True, slots=True)
class _Generation:
    kind: str
    response: LLMResponse
    verdict: ValidationResult
    failed_calls: int = 0

    def with_failed_calls(self, calls: int) -> _Generation:
        return _Generation(self.kind, self.response, self.verdict, self.failed_calls + calls)

    def record(self) -> AttemptRecord:
        usage = self.response.usage.model_copy(
            update={"llm_calls": self.response.attempts + self.failed_calls}
        )
        return AttemptRecord(
            kind="initial" if self.kind == "initial" else "repair",
            text=self.response.text,
            finish_reason=self.response.finish_reason,
            usage=usage,
            latency_ms=self.response.latency_ms,
            valid=self.verdict.valid,
            issues=self.verdict.issues,
        )
