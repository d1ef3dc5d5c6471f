"""The Runner: prepare a run, call the model, validate, repair.

Every run is the same three pieces: the :class:`~scriptorium.usecase.flow.RunFlow` (the rules),
:mod:`~scriptorium.usecase.calls` (each call inside the LLM boundary) and a
:mod:`~scriptorium.usecase.watch` (the observer and the log scope). The drivers here and in
:mod:`~scriptorium.usecase.stream` are short loops over them: sync, async, streamed, observed or
answered by a provider batch, a run cannot differ from another in anything but how it calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import scriptorium.usecase.calls as calls
from scriptorium.artifact.reader import Reader
from scriptorium.limits.cooldown import Cooldowns, LocalCooldowns
from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.model import LLMRequest, TokenCount
from scriptorium.llm.registry import Registry, default_registry
from scriptorium.llm.tokens import estimate_input_tokens
from scriptorium.observe.observer import Observer
from scriptorium.profile.repository import Repository as ProfileRepository
from scriptorium.prompt.renderer import Renderer
from scriptorium.promptdef.repository import Repository as PromptRepository
from scriptorium.usecase.calls import Callees
from scriptorium.usecase.flow import Answer, RunFlow
from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
from scriptorium.usecase.offload import judged, off_loop
from scriptorium.usecase.plan import Plan, Planner
from scriptorium.usecase.prepare import heavy_to_prepare
from scriptorium.usecase.repair import OutputRepairer
from scriptorium.usecase.stream import AsyncRunStream, RunStream, StreamedRun
from scriptorium.usecase.watch import watch_for
from scriptorium.validate.validator import Validator

__all__ = ["Runner"]

#: Returns the current time, timezone-aware.
Clock = Callable[[], datetime]
#: Returns a new run id.
NewId = Callable[[], str]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex


class Runner:
    """Executes prompt definitions through injected collaborators.

    ``known_providers_only``: the client routes by provider name (the engine's router), so a
    profile naming a provider the registry does not know is refused when it is loaded; an
    injected client serves every profile, so by default any name is accepted.

    ``cooldowns``: the table of profiles cooling down after they said "busy", shared by every run
    of this runner (default: one of its own, in this process); the engine gives one that also
    reaches the job's table while a batch row runs.

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
        known_providers_only: bool = False,
        cooldowns: Cooldowns | None = None,
    ) -> None:
        self._planner = Planner(
            prompts=prompts,
            profiles=profiles,
            artifacts=artifacts,
            renderer=renderer,
            validator=validator,
            providers=providers or default_registry(),
            env=env,
            default_profile=default_profile,
            known_providers_only=known_providers_only,
        )
        self._callees = Callees(client, repairer, self._planner)
        self._cooldowns = LocalCooldowns() if cooldowns is None else cooldowns
        self._validator = validator
        self._observer = observer
        self._clock = clock or _utcnow
        self._new_id = new_id or _new_id

    def prepare(self, request: RunRequest) -> PreparedRun:
        """Everything but the LLM call: load, merge, check the key, load the schema, validate the
        inputs, read the artifacts, render, hash."""
        return self._planner.plan(request).prepared

    def run(self, request: RunRequest) -> RunResult:
        """Prepare, generate, validate and (when allowed) repair."""
        return self._run(request, None)

    def plan(self, request: RunRequest) -> Plan:
        """The whole plan of ``request`` (its ``prepared`` is what :meth:`prepare` returns), for a
        driver that needs the prepared run before the call and then runs that same plan with
        :meth:`run_plan` (a batch row: its hash decides whether it runs at all)."""
        return self._planner.plan(request)

    def run_plan(self, request: RunRequest, plan: Plan) -> RunResult:
        """:meth:`run` of ``request`` from ``plan``, its plan made by :meth:`plan`, instead of
        preparing it again."""
        return self._run(request, None, plan)

    def run_answered(self, request: RunRequest, answer: Answer) -> RunResult:
        """A run whose first generation is ``answer(llm_request)`` instead of a client call (a
        provider batch's result for this very request). Everything else is the run's own:
        preparation, the LLM boundary's checks and translation, validation, repairs (through the
        client, when a repairer is present), usage and the result; an observer sees the first
        generation as kind ``batch``."""
        return self._run(request, answer)

    async def arun(self, request: RunRequest) -> RunResult:
        """The async twin of :meth:`run`, with the same contract. Preparing a request that carries
        much content, and judging a long output, happen in a worker thread (see
        :mod:`~scriptorium.usecase.offload`), so the event loop keeps serving."""
        started, run_id = self._clock(), self._new_id()
        with watch_for(self._observer, run_id, request) as watch:
            plan = await off_loop(heavy_to_prepare(request), lambda: self._planner.plan(request))
            flow = self._flow(watch.prepared(plan), run_id, started)
            while (step := flow.next_step()) is not None:
                await judged(flow, await watch.acall(step, calls.acall, self._callees))
            return watch.ended(flow.result())

    def stream(self, request: RunRequest) -> RunStream:
        """The run as events while the model writes; ``result()`` is what :meth:`run` returns.
        Prepares now (its errors raise here); the model is called when the stream is read."""
        return RunStream(self._streamed(request))

    def astream(self, request: RunRequest) -> AsyncRunStream:
        """The async twin of :meth:`stream`."""
        return AsyncRunStream(self._streamed(request))

    def request_for(self, request: RunRequest) -> tuple[PreparedRun, LLMRequest]:
        """What a run of ``request`` would send: its prepared run and the LLM request (the key
        included), for drivers that send the generation themselves (provider batches)."""
        plan = self._planner.plan(request)
        return plan.prepared, plan.request

    def count_tokens(self, request: RunRequest) -> TokenCount:
        """The input tokens of the prepared request: the client's own count when it has one
        (``count_tokens``, e.g. Anthropic's counting endpoint), else a local estimate."""
        plan = self._planner.plan(request)
        target = plan.prepared.target
        counted = calls.count_tokens(plan, self._callees.client)
        if isinstance(counted, int):
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
            reason=None if counted is None else counted.reason,
        )

    def _run(
        self, request: RunRequest, answer: Answer | None, planned: Plan | None = None
    ) -> RunResult:
        """The sync driver, for :meth:`run`, :meth:`run_plan` and :meth:`run_answered`."""
        started, run_id = self._clock(), self._new_id()
        with watch_for(self._observer, run_id, request) as watch:
            plan = watch.prepared(self._planner.plan(request) if planned is None else planned)
            flow = self._flow(plan, run_id, started, answer)
            while (step := flow.next_step()) is not None:
                flow.send(watch.call(step, calls.call, self._callees))
            return watch.ended(flow.result())

    def _streamed(self, request: RunRequest) -> StreamedRun:
        """A streamed run, prepared (a failure raises now and ends the observation)."""
        started, run_id = self._clock(), self._new_id()
        with watch_for(self._observer, run_id, request) as watch:
            plan = watch.prepared(self._planner.plan(request))
        return StreamedRun(self._flow(plan, run_id, started), self._callees, watch)

    def _flow(
        self, plan: Plan, run_id: str, started: datetime, answer: Answer | None = None
    ) -> RunFlow:
        return RunFlow(
            plan,
            validator=self._validator,
            can_repair=self._callees.repairer is not None,
            run_id=run_id,
            started=started,
            clock=self._clock,
            answer=answer,
            cooldowns=self._cooldowns,
        )
