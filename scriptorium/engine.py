"""The Engine: the one composition root. It wires the file adapters, the Jinja renderer, the schema
validator and the provider router over a project directory, and hands requests to a Runner."""

from __future__ import annotations

import copy
import os
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

from scriptorium.errors import (
    InvalidRequestError,
    LLMGenerateError,
    ScriptoriumError,
    translate,
)

if TYPE_CHECKING:
    from scriptorium.batch.executor import BatchExecutor
    from scriptorium.batch.job import BatchJob, StepHook
    from scriptorium.batch.work import Recipe, RowWork
    from scriptorium.check.problems import Problem
    from scriptorium.check.view import ProjectView
    from scriptorium.evals.cassettes import CassetteMode
    from scriptorium.evals.optimize import OptimizeReport
    from scriptorium.evals.reference import Reference
    from scriptorium.evals.report import TestReport
    from scriptorium.evals.suite import Progress
    from scriptorium.llm.batches import BatchLimits
    from scriptorium.llm.client import AsyncClient, Client
    from scriptorium.llm.model import LLMResponse, Target, TokenCount
    from scriptorium.llm.registry import ProviderSpec, Registry
    from scriptorium.llm.retry import RetryHooks
    from scriptorium.llm.router import Router
    from scriptorium.observe.observer import Observer
    from scriptorium.profile.model import Profile, RateLimits
    from scriptorium.profile.repository import Repository as ProfileRepository
    from scriptorium.promptdef.repository import Repository as PromptRepository
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
    from scriptorium.usecase.plan import Plan
    from scriptorium.usecase.runner import Clock, NewId
    from scriptorium.usecase.stream import AsyncRunStream, RunStream
    from scriptorium.usecase.structured_probe import StructuredVerdict

__all__ = ["Engine"]


class Engine:
    """scriptorium over a project directory holding ``prompts/`` and ``profiles/``.

    ``client`` replaces the provider router for every profile (tests, custom providers);
    ``repair=True`` adds the default output repairer (off by default); ``env`` is where key
    variables are read (default ``os.environ``, read at run time); ``artifact_root`` is where
    artifact references resolve (default ``root``); ``observer`` watches every run (for example
    ``scriptorium.observe.OTelObserver()``; none by default). Construction does no I/O.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        *,
        client: Client | AsyncClient | None = None,
        repair: bool = False,
        env: Mapping[str, str] | None = None,
        artifact_root: str | os.PathLike[str] | None = None,
        default_profile: str | None = None,
        clock: Clock | None = None,
        new_id: NewId | None = None,
        retry_hooks: RetryHooks | None = None,
        observer: Observer | None = None,
        providers: Iterable[ProviderSpec] = (),
    ) -> None:
        from scriptorium.artifact.files import FileReader
        from scriptorium.limits.cooldown import LocalCooldowns
        from scriptorium.limits.hooks import RowCooldowns
        from scriptorium.llm.client import Client
        from scriptorium.profile.files import FileRepository as ProfileFiles
        from scriptorium.prompt.jinja import JinjaRenderer
        from scriptorium.promptdef.files import FileRepository as PromptFiles
        from scriptorium.usecase.repair import DefaultOutputRepairer
        from scriptorium.usecase.runner import Runner
        from scriptorium.validate.schema.validator import SchemaValidator

        self.root = _directory(root, "root")
        prompts_dir = self.root / "prompts"
        #: The providers this engine knows: built-in, ``providers`` and installed entry points.
        self.providers = _registry(given := tuple(providers))
        #: The specs given in code, as given: what a worker needs to know the same providers.
        self.given_providers = given
        routed = client is None
        if client is None:
            from scriptorium.limits.hooks import rate_limit_hooks
            from scriptorium.llm.router import Router

            # A batch row's transport retries draw from the profile's rate limits too.
            client = Router(hooks=rate_limit_hooks(retry_hooks), registry=self.providers)
        self.client = client
        self.env = env
        #: As given: what the row work's recipe carries to build this engine again elsewhere.
        self.repair = repair
        self.default_profile = default_profile
        self.retry_hooks = retry_hooks
        repairer = None
        if repair:
            if not isinstance(client, Client):
                raise InvalidRequestError("repair=True needs a client with generate()")
            repairer = DefaultOutputRepairer(client)
        self.prompts = PromptFiles(prompts_dir)
        self.profiles = ProfileFiles(self.root / "profiles")
        self.validator = SchemaValidator(prompts_dir)
        self.renderer = JinjaRenderer()
        #: The artifact root as given (None: references resolve under ``root``). The HTTP API reads
        #: file references only when one was given.
        self.artifact_root = (
            None if artifact_root is None else _directory(artifact_root, "artifact_root")
        )
        self.artifacts = FileReader(self.root if self.artifact_root is None else self.artifact_root)
        # Kept to build a runner over other repositories (a test run's: see `_twin`).
        self._runner_parts: dict[str, Any] = {
            "artifacts": self.artifacts,
            "renderer": self.renderer,
            "client": client,
            "validator": self.validator,
            "repairer": repairer,
            "env": env,
            "clock": clock,
            "new_id": new_id,
            "default_profile": default_profile,
            "observer": observer,
            "providers": self.providers,
            "known_providers_only": routed,
            # Fallback chains skip a busy profile for every run of this engine, and for every
            # worker of a batch job while one of its rows runs (the job's limiter holds its own).
            "cooldowns": RowCooldowns(LocalCooldowns()),
        }
        self.runner = Runner(prompts=self.prompts, profiles=self.profiles, **self._runner_parts)

    def __repr__(self) -> str:
        return f"Engine(root={str(self.root)!r})"

    # -- single runs ---------------------------------------------------------------------------

    def prepare(self, request: RunRequest | str, /, **fields: Any) -> PreparedRun:
        """Everything but the LLM call (messages, target, settings, hashes)."""
        return self.runner.prepare(as_request(request, fields))

    def run(self, request: RunRequest | str, /, **fields: Any) -> RunResult:
        """Prepare, call the model, validate, repair when enabled."""
        return self.runner.run(as_request(request, fields))

    async def arun(self, request: RunRequest | str, /, **fields: Any) -> RunResult:
        """The async twin of :meth:`run`."""
        return await self.runner.arun(as_request(request, fields))

    def stream(self, request: RunRequest | str, /, **fields: Any) -> RunStream:
        """The run as events while the model writes (a context manager and an iterator of
        ``TextDelta``, ``PartialValue``, ``AttemptStarted``, ``Done``); ``result()`` is the
        ``RunResult`` that :meth:`run` returns for the same response."""
        return self.runner.stream(as_request(request, fields))

    def astream(self, request: RunRequest | str, /, **fields: Any) -> AsyncRunStream:
        """The async twin of :meth:`stream` (``async with`` / ``async for``)."""
        return self.runner.astream(as_request(request, fields))

    def count_tokens(self, request: RunRequest | str, /, **fields: Any) -> TokenCount:
        """The input tokens the prepared request would send: Anthropic's token-counting endpoint
        for Anthropic profiles, a local estimate (``estimated=True``) for the others."""
        return self.runner.count_tokens(as_request(request, fields))

    # -- batches -------------------------------------------------------------------------------

    @overload
    def run_many(  # type: ignore[overload-overlap]  # iterators match first
        self,
        requests: Iterator[RunRequest],
        *,
        concurrency: int = 8,
        executor: BatchExecutor | None = None,
    ) -> Iterator[RunResult | ScriptoriumError]: ...

    @overload
    def run_many(
        self,
        requests: Iterable[RunRequest],
        *,
        concurrency: int = 8,
        executor: BatchExecutor | None = None,
    ) -> list[RunResult | ScriptoriumError]: ...

    def run_many(
        self,
        requests: Iterable[RunRequest],
        *,
        concurrency: int = 8,
        executor: BatchExecutor | None = None,
    ) -> list[RunResult | ScriptoriumError] | Iterator[RunResult | ScriptoriumError]:
        """Run every request with at most ``concurrency`` in flight. Results come back in input
        order; a failed item is its error in that slot and never sinks the batch. ``executor``
        runs the rows (default: a thread pool here; ``scriptorium.batch.ray.RayExecutor()``
        for a Ray cluster); either way the profiles' ``limits`` hold across every worker.

        Given a list (or any iterable that is not an iterator), the list of results. Given an
        iterator (a generator), an iterator of results, each given as soon as it and those
        before it are done, reading the requests only as fast as results are taken: memory
        stays bounded by ``concurrency``, not by the number of requests."""
        # Imported here: `from scriptorium import Engine` stays quick for code that never batches.
        from scriptorium.batch.executor import run_many
        from scriptorium.batch.local import LocalExecutor

        return run_many(
            self.row_work(),
            requests,
            executor=executor or LocalExecutor(),
            concurrency=concurrency,
        )

    def row_work(self) -> RowWork:
        """This engine as a batch executor sees it (``scriptorium.batch.work.RowWork``): prepare
        and run a request, a profile's rate limits, and the recipe another process rebuilds the
        same engine from (refused for an engine with a custom client or an ``env`` mapping)."""
        return _EngineRows(self, travels=self._router() is not None)

    @overload
    async def arun_many(  # type: ignore[overload-overlap]  # iterators match first
        self,
        requests: Iterator[RunRequest] | AsyncIterator[RunRequest],
        *,
        concurrency: int = 8,
    ) -> AsyncIterator[RunResult | ScriptoriumError]: ...

    @overload
    async def arun_many(
        self, requests: Iterable[RunRequest], *, concurrency: int = 8
    ) -> list[RunResult | ScriptoriumError]: ...

    async def arun_many(
        self,
        requests: Iterable[RunRequest] | AsyncIterator[RunRequest],
        *,
        concurrency: int = 8,
    ) -> list[RunResult | ScriptoriumError] | AsyncIterator[RunResult | ScriptoriumError]:
        """The async twin of :meth:`run_many`: a list of results for a list; for an iterator
        (sync or async), an async iterator of results in input order (``async for``), holding
        no more than a window of rows at a time."""
        if concurrency < 1:
            raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
        from scriptorium.batch.aio import arun_ordered

        if isinstance(requests, Iterator | AsyncIterator):
            return arun_ordered(self.runner.arun, requests, concurrency=concurrency)
        items = list(requests)
        import asyncio  # already loaded: this coroutine runs on an event loop

        gate = asyncio.Semaphore(concurrency)

        async def one(item: RunRequest) -> RunResult | ScriptoriumError:
            async with gate:
                try:
                    return await self.runner.arun(item)
                except ScriptoriumError as err:
                    return err

        return list(await asyncio.gather(*(one(i) for i in items)))

    def submit_batch(
        self,
        requests: Iterable[RunRequest],
        *,
        state: str | os.PathLike[str] | None = None,
        limits: BatchLimits | None = None,
        on_step: StepHook | None = None,
    ) -> BatchJob:
        """Send ``requests`` through the provider's batch API (half price, results within a
        day) and return the job. Each request is prepared exactly as a run; equal requests are
        sent once. ``state`` is the file the job's state is saved to, before and after every
        submission, for :meth:`resume_batch`; ``limits`` lowers the per-batch limits;
        ``on_step`` is called with the name of each step the job reaches (``before-submit``,
        ``after-submit``, ``in-progress``; crash tests stop the process there)."""
        from scriptorium.batch.job import batch_apis, submit
        from scriptorium.batch.store import StateFile

        store = None if state is None else StateFile(state)
        return submit(
            self.runner,
            list(requests),
            store=store,
            limits=limits,
            hooks=self.retry_hooks,
            factory=batch_apis(self.providers),
            on_step=on_step,
        )

    def resume_batch(
        self,
        state: str | os.PathLike[str] | Mapping[str, Any],
        *,
        limits: BatchLimits | None = None,
        api_key: str | None = None,
        on_step: StepHook | None = None,
    ) -> BatchJob:
        """Carry on a provider batch job from its state file (or ``BatchJob.state``): a chunk
        whose submission is in doubt is looked up, not resent; expired or canceled rows are
        sent again. ``api_key`` stands in for a direct key the original requests carried (keys
        are never saved); ``on_step`` as for :meth:`submit_batch`."""
        from scriptorium.batch.job import batch_apis, resume
        from scriptorium.batch.store import StateFile

        saved = state if isinstance(state, Mapping) else StateFile(state)
        return resume(
            self.runner,
            saved,
            limits=limits,
            hooks=self.retry_hooks,
            api_key=api_key,
            factory=batch_apis(self.providers),
            on_step=on_step,
        )

    # -- the project ---------------------------------------------------------------------------

    def list_prompts(self) -> list[str]:
        """Every prompt id under ``prompts/``."""
        return self.prompts.list()

    def list_profiles(self) -> list[str]:
        """Every profile name under ``profiles/``."""
        return self.profiles.list()

    def load_profile(self, name: str) -> Profile:
        """The profile ``name`` as a run loads it: with this engine's router, a provider the
        registry does not know is ``ProfileLoadError`` (an injected client takes any name)."""
        from scriptorium.usecase.prepare import known_provider

        profile = self.profiles.get(name)
        if self._router() is not None:
            known_provider(profile, self.providers)
        return profile

    def verify(
        self, profile: str, *, model: str | None = None, api_key: str | None = None
    ) -> LLMResponse:
        """Prove a profile's key, endpoint and model with a minimal real request (``scriptorium
        verify``). The key comes from ``api_key`` or the profile's ``api_key_env`` exactly as for a
        run; ``fake`` and ``replay`` profiles are proven by building their client."""
        from scriptorium.llm.adapter import verify_request
        from scriptorium.llm.client import Client, Verifier, supports
        from scriptorium.llm.model import LLMResponse
        from scriptorium.llm.router import Router

        loaded, target, key = self._verify_setup(profile, model, api_key)
        client = self.client
        with self._verifying(profile, loaded, key):
            if isinstance(client, Router):
                return client.verify(target, key, options=loaded.options, source=loaded.source)
            if supports(client, Verifier):
                result = cast("Verifier", client).verify(target, key)
                if isinstance(result, LLMResponse):
                    return result
            if not supports(client, Client):
                raise LLMGenerateError(
                    "the engine's client cannot verify (it has no generate())",
                    reason="config",
                    profile=profile,
                )
            return cast("Client", client).generate(
                verify_request(target, key, options=loaded.options, source=loaded.source)
            )

    def verify_structured(
        self, profile: str, *, model: str | None = None, api_key: str | None = None
    ) -> StructuredVerdict:
        """Whether the profile's server holds its model to a JSON schema (``scriptorium verify
        --structured``): one small request whose schema an unconstrained model would break,
        judged ``enforced``, ``not enforced`` or ``refused`` (a server rejecting the form), with
        what was sent. Other failures raise as for :meth:`verify`."""
        from scriptorium.llm.client import Client, supports
        from scriptorium.usecase import structured_probe as probe

        loaded, target, key = self._verify_setup(profile, model, api_key)
        request = probe.probe_request(
            target, key, options=dict(loaded.options), source=loaded.source
        )
        spec = self.providers.find(loaded.provider)
        sent = probe.sent_of(request, None if spec is None else spec.structured_members(request))
        client = self.client
        if not supports(client, Client):
            raise LLMGenerateError(
                "the engine's client cannot verify (it has no generate())",
                reason="config",
                profile=profile,
            )
        try:
            with self._verifying(profile, loaded, key):
                response = cast("Client", client).generate(request)
        except LLMGenerateError as err:
            if probe.refused(err):
                return probe.refusal(err, sent)
            raise
        return probe.judge(response.text, sent)

    def _verify_setup(
        self, profile: str, model: str | None, api_key: str | None
    ) -> tuple[Profile, Target, str | None]:
        """The profile, its target and its key, as a run resolves them (for the verifies)."""
        from scriptorium.usecase.model import Overrides, RunRequest
        from scriptorium.usecase.prepare import credential, resolve_endpoint, target_for

        loaded = self.load_profile(profile)
        env = os.environ if self.env is None else self.env
        # target_for only reads the overrides; the prompt id is a placeholder it never reports.
        placeholder = RunRequest(prompt_id="verify", profile=profile)
        with translate(InvalidRequestError, "invalid model override", field="model"):
            placeholder = placeholder.model_copy(update={"overrides": Overrides(model=model)})
        spec = self.providers.find(loaded.provider)
        needs_model = spec is not None and spec.needs_model
        target = resolve_endpoint(
            target_for(loaded, placeholder, needs_key=needs_model), loaded, spec, env
        )
        route = (
            None if spec is None else self.providers.route_for(spec, loaded.options, loaded.name)
        )
        key = credential(loaded, api_key, env, route, target=target).key
        return loaded, target, key

    def _verifying(self, profile: str, loaded: Profile, key: str | None) -> Any:
        """The translation every verify's call goes through (its key kept out of messages)."""
        return translate(
            LLMGenerateError,
            f"verifying profile {profile!r}",
            secrets=[key],
            profile=profile,
            provider=loaded.provider,
            reason="server_error",
        )

    def check(self) -> list[Problem]:
        """Every problem in the project's prompts, profiles, templates, schemas and tests files."""
        from scriptorium.check.project import check_project

        return check_project(self.project_view())

    def test(
        self,
        prompts: Sequence[str] | None = None,
        profiles: Sequence[str] | None = None,
        repeat: int | None = None,
        *,
        cases: Collection[str] | None = None,
        concurrency: int = 8,
        cassettes: CassetteMode | None = None,
        provider_batch: bool = False,
        poll_s: float = 15.0,
        baseline: TestReport | str | os.PathLike[str] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        against: str | os.PathLike[str] | Reference | None = None,
    ) -> TestReport:
        """Run the test cases beside the prompts (``prompts/<id>.tests.yaml``) and report:
        every case of ``prompts`` (all that have tests when None), on each of ``profiles`` (else
        the tests file's or the prompt's profile), ``repeat`` times (else the file's), through
        :meth:`run_many`'s executor (``concurrency`` in flight, the profiles' rate limits), then
        their judges. ``cases`` keeps only the cases of those names; ``cassettes`` switches
        every replay profile to ``record`` or ``replay``; ``provider_batch`` sends the cases
        through the provider's batch API (polling every ``poll_s`` seconds at first);
        ``baseline`` (a report, or the path of one written as JSON) flags regressions;
        ``on_progress`` is called as runs finish. ``against`` (a git revision, a directory
        holding ``prompts/``, or an open ``evals.reference.Reference``) runs the same cases on
        that version too and sets the report's ``comparison`` (a ``VersionComparison``); its
        ``ok`` is then the comparison's."""
        from scriptorium.evals.baseline import compare, read_baseline
        from scriptorium.evals.report import TestReport

        old = baseline
        if old is not None and not isinstance(old, TestReport):
            old = read_baseline(old)  # before anything is spent
        options: dict[str, Any] = {
            "repeat": repeat,
            "cases": cases,
            "concurrency": concurrency,
            "cassettes": cassettes,
            "provider_batch": provider_batch,
            "poll_s": poll_s,
            "on_progress": on_progress,
        }
        if against is None:
            report = self._suite_report(self.prompts, self.profiles, prompts, profiles, **options)
        else:
            report = self._compared(against, prompts, profiles, options)
        if old is None:
            return report
        source = None if isinstance(baseline, TestReport) else os.fspath(cast("str", baseline))
        flagged = compare(report, old, source=source)
        if report.comparison is None:
            return flagged
        # The baseline's report is rebuilt from its groups: the version comparison is kept, and
        # decides with the baseline's regressions.
        regressed = flagged.baseline is not None and flagged.baseline.regressions > 0
        return flagged.model_copy(
            update={"comparison": report.comparison, "ok": report.ok and not regressed}
        )

    def _compared(
        self,
        against: str | os.PathLike[str] | Reference,
        prompts: Sequence[str] | None,
        profiles: Sequence[str] | None,
        options: dict[str, Any],
    ) -> TestReport:
        """The candidate's report (this project as it is) with its comparison against the
        version ``against`` names: the same cases, on the same profiles, run on both."""
        from scriptorium.errors import PromptLoadError
        from scriptorium.evals.compare import compare_versions
        from scriptorium.evals.reference import ReferenceProfiles, open_reference
        from scriptorium.evals.report import TestReport
        from scriptorium.profile.files import FileRepository as ProfileFiles
        from scriptorium.promptdef.files import FileRepository as PromptFiles
        from scriptorium.validate.schema.validator import SchemaValidator

        with open_reference(against, self.root) as reference:  # a bad REF costs nothing
            after = self._suite_report(self.prompts, self.profiles, prompts, profiles, **options)
            old_prompts = PromptFiles(reference.prompts_dir)
            found = reference.profiles_dir
            old_profiles = ReferenceProfiles(
                None if found is None else ProfileFiles(found), self.profiles
            )
            on_profiles: dict[str, list[str]] = {}
            for group in after.groups:
                try:
                    old_prompts.get(group.prompt)
                except PromptLoadError as err:
                    if err.reason != "not_found":
                        raise
                    continue  # a prompt added since: its cases are new
                on_profiles.setdefault(group.prompt, []).append(group.profile)
            if on_profiles:
                before = self._suite_report(
                    old_prompts,
                    old_profiles,
                    list(on_profiles),
                    on_profiles,
                    validator=SchemaValidator(reference.prompts_dir),
                    **options,
                )
            else:
                before = TestReport()
        return compare_versions(after, before, against=reference.given, revision=reference.revision)

    def _suite_report(
        self,
        prompt_repo: PromptRepository,
        profile_repo: ProfileRepository,
        prompts: Sequence[str] | None,
        profiles: Sequence[str] | Mapping[str, Sequence[str]] | None,
        *,
        repeat: int | None,
        cases: Collection[str] | None,
        concurrency: int,
        cassettes: CassetteMode | None,
        provider_batch: bool,
        poll_s: float,
        on_progress: Callable[[Progress], None] | None,
        validator: Any = None,
    ) -> TestReport:
        """One run of the project's tests files over these prompt and profile repositories."""
        from scriptorium.batch.executor import run_many
        from scriptorium.batch.local import LocalExecutor
        from scriptorium.evals.cassettes import CassetteProfiles
        from scriptorium.evals.files import TestFiles, case_artifacts
        from scriptorium.evals.judge import JudgePrompts
        from scriptorium.evals.rows import WatchedRows
        from scriptorium.evals.suite import Suite

        if cassettes is not None:
            profile_repo = CassetteProfiles(profile_repo, cassettes, calls_out=self._calls_out)
        twin = self._twin(
            prompts=JudgePrompts(prompt_repo), profiles=profile_repo, validator=validator
        )

        def many(
            requests: list[RunRequest],
            concurrency: int,
            on_outcome: Callable[[int, RunResult | ScriptoriumError], None],
        ) -> list[RunResult | ScriptoriumError]:
            work = WatchedRows(twin.row_work(), requests, on_outcome)
            return run_many(work, requests, executor=LocalExecutor(), concurrency=concurrency)

        def batch(requests: list[RunRequest]) -> list[RunResult | ScriptoriumError]:
            return twin.submit_batch(requests).wait(poll_s).results()

        suite = Suite(
            tests=TestFiles(self.root / "prompts"),
            artifacts=lambda tests, case: case_artifacts(tests, case, self.root),
            prompts=twin.prompts,
            profiles=twin.profiles,
            run_many=many,
            run_batch=batch if provider_batch else None,
            prepare=twin.prepare,
            default_profile=self.default_profile,
        )
        return suite.run(
            prompts,
            profiles,
            repeat,
            cases=cases,
            concurrency=concurrency,
            on_progress=on_progress,
        ).model_copy(update={"cassettes": cassettes})

    def optimize(
        self,
        prompt: str,
        *,
        profile: str | None = None,
        optimizer_profile: str | None = None,
        budget_micro: int | None = None,
        max_candidates: int = 3,
        holdout: float = 0.3,
        repeat: int | None = None,
        seed: int = 0,
        out: str | os.PathLike[str] | None = None,
        concurrency: int = 8,
        cassettes: CassetteMode | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> OptimizeReport:
        """Improve the marked regions (``{# optimize #} ... {# /optimize #}``) of ``prompt``
        against its tests file: split the cases by ``seed`` (``holdout`` of them held out), let
        the bundled optimiser prompt (run on ``optimizer_profile``, else the cases' profile)
        propose up to ``max_candidates`` new texts, and accept one only when it beats the seed on
        held-out by a one-sided exact paired test at 0.05 with no ``must_pass`` case failing.
        Every run counts against ``budget_micro``. The prompt file is never written: an accepted
        candidate goes to ``out`` (default ``prompts/<id>.optimized.md``), created new, never
        replacing a file. ``InvalidRequestError`` (before anything is spent) for a prompt without
        a marked region, too few cases to hold out three, or an ``out`` that exists."""
        from scriptorium._files import ConfinedDir
        from scriptorium.evals.cassettes import CassetteProfiles
        from scriptorium.evals.files import TestFiles
        from scriptorium.evals.optimize import (
            OPTIMIZER_PROMPT_ID,
            Optimization,
            VersionPrompts,
            split_cases,
            write_new_file,
        )
        from scriptorium.evals.regions import find_regions
        from scriptorium.promptdef.files import MAX_PROMPT_BYTES, SUFFIX, read_text
        from scriptorium.promptdef.parse import parse_prompt
        from scriptorium.usecase.model import RunRequest

        if max_candidates < 1:
            raise InvalidRequestError("max_candidates must be at least 1", field="max_candidates")
        if budget_micro is not None and budget_micro < 0:
            raise InvalidRequestError("budget_micro must not be negative", field="budget_micro")
        if repeat is not None and repeat < 1:
            raise InvalidRequestError("repeat must be at least 1", field="repeat")
        definition = self.prompts.get(prompt)
        relative = prompt + SUFFIX
        prompts_dir = self.root / "prompts"
        raw, _ = read_text(
            ConfinedDir(prompts_dir),
            relative,
            prompt_id=prompt,
            max_bytes=MAX_PROMPT_BYTES,
            subject=f"prompt {prompt!r}",
            invalid=f"prompt {prompt!r}: {relative}",
        )
        text = raw.removeprefix("\ufeff").replace("\r\n", "\n")
        regions = find_regions(text, prompt_id=prompt)
        tests = TestFiles(prompts_dir).get(prompt)
        split_cases([c.name for c in tests.cases], holdout, seed)  # refused before any spend
        target = prompts_dir / (prompt + ".optimized.md") if out is None else Path(out)
        if target.is_symlink() or target.exists():
            raise InvalidRequestError(
                f"{target} already exists; optimize never replaces a file (choose another --out)",
                field="out",
            )
        profile_repo: ProfileRepository = self.profiles
        if cassettes is not None:
            profile_repo = CassetteProfiles(self.profiles, cassettes, calls_out=self._calls_out)
        chosen = (
            optimizer_profile
            or profile
            or tests.profile
            or definition.profile
            or self.default_profile
        )
        proposer = self._twin(
            prompts=VersionPrompts(self.prompts, prompt, None), profiles=profile_repo
        )

        def evaluate(version_text: str, cases: Sequence[str]) -> TestReport:
            version = parse_prompt(version_text, prompt_id=prompt, source=relative)
            twin = self._twin(
                prompts=VersionPrompts(self.prompts, prompt, version), profiles=self.profiles
            )
            return twin.test(
                [prompt],
                None if profile is None else [profile],
                repeat,
                cases=cases,
                concurrency=concurrency,
                cassettes=cassettes,
            )

        def propose(inputs: dict[str, Any]) -> RunResult | ScriptoriumError:
            request = RunRequest(prompt_id=OPTIMIZER_PROMPT_ID, inputs=inputs, profile=chosen)
            try:
                return proposer.run(request)
            except ScriptoriumError as err:
                return err

        report, accepted = Optimization(
            prompt_id=prompt,
            text=text,
            regions=regions,
            tests=tests,
            evaluate=evaluate,
            propose=propose,
            seed=seed,
            holdout=holdout,
            repeat=repeat or tests.repeat,
            max_candidates=max_candidates,
            budget_micro=budget_micro,
            profile=profile,
            optimizer_profile=chosen,
            prompt_path=_shown_path(prompts_dir / relative, self.root),
            out_path=_shown_path(target, self.root),
            on_step=on_step or (lambda _: None),
        ).run()
        if accepted is not None:
            write_new_file(target, accepted)
        return report

    def _twin(
        self, *, prompts: PromptRepository, profiles: ProfileRepository, validator: Any = None
    ) -> Engine:
        """This engine over other prompt and profile repositories (a test run's: the judge
        prompt beside the project's, cassette profiles in one mode, another version's prompts
        with the ``validator`` of their folder); everything else shared."""
        from scriptorium.usecase.runner import Runner

        twin = copy.copy(self)
        twin.prompts = prompts  # type: ignore[assignment]  # any repository, not only the files one
        twin.profiles = profiles  # type: ignore[assignment]  # the same
        parts = dict(self._runner_parts)
        if validator is not None:
            twin.validator = validator
            parts["validator"] = validator
        twin.runner = Runner(prompts=prompts, profiles=profiles, **parts)
        return twin

    def _calls_out(self, provider: str) -> bool:
        """Whether a profile of ``provider`` calls a model over the network: a provider that
        names its models (whatever route and credential a profile picks) does."""
        spec = self.providers.find(provider)
        return spec is not None and spec.needs_model

    def project_view(self) -> ProjectView:
        """The read-only view of this project that ``check`` works over: the repositories, the
        validator, the template helpers, the providers, and which provider names a profile may
        use (every one the router serves; not restricted when a client was injected)."""
        from scriptorium.check.view import ProjectView, TemplateHelpers
        from scriptorium.evals.files import TestFiles
        from scriptorium.prompt.jinja import (
            check_syntax,
            template_artifact_fields,
            template_artifacts,
            template_variables,
        )

        router = self._router()
        return ProjectView(
            root=self.root,
            prompts_dir=Path(self.prompts.root),
            profiles_dir=Path(self.profiles.root),
            prompts=self.prompts,
            profiles=self.profiles,
            validator=self.validator,
            templates=TemplateHelpers(
                syntax=check_syntax,
                variables=template_variables,
                artifacts=template_artifacts,
                artifact_fields=template_artifact_fields,
            ),
            providers=self.providers,
            known_providers=None if router is None else router.providers,
            tests=TestFiles(self.prompts.root),
        )

    def _router(self) -> Router | None:
        """The client when it is the provider router (it routes by provider name, and another
        process can build it again), None for an injected client."""
        from scriptorium.llm.router import Router

        return self.client if isinstance(self.client, Router) else None


class _EngineRows:
    """An engine as a batch executor sees it: the :class:`~scriptorium.batch.work.RowWork` port."""

    __slots__ = ("_engine", "_travels")

    def __init__(self, engine: Engine, *, travels: bool) -> None:
        self._engine = engine
        self._travels = travels

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        return self._engine.prepare(request)

    def plan(self, request: RunRequest, /) -> Plan:
        return self._engine.runner.plan(request)

    def run(self, request: RunRequest, /) -> RunResult:
        return self._engine.run(request)

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        return self._engine.runner.run_plan(request, plan)

    def limits(self, profile: str, /) -> RateLimits | None:
        return self._engine.profiles.get(profile).limits

    def recipe(self) -> Recipe:
        """The engine's project (absolute paths, ``repair``, ``default_profile``; no client, no
        key), to be built again by :func:`rows_for_project`. Refused for an engine that cannot
        travel: a custom client, or keys given as an ``env`` mapping."""
        from scriptorium.batch.work import Recipe

        engine = self._engine
        if not self._travels:
            raise InvalidRequestError(
                "the Ray executor builds the engine again on every worker from the project "
                "directory; an engine with a custom client cannot run there",
                field="executor",
            )
        if engine.env is not None:
            raise InvalidRequestError(
                "the Ray executor reads keys from the workers' environment; an engine given an "
                "env mapping cannot run there (keys are never sent through Ray)",
                field="executor",
            )
        artifact_root = (
            None if engine.artifact_root is None else str(engine.artifact_root.resolve())
        )
        _check_travels(engine.given_providers)
        return Recipe(
            rows_for_project,
            (
                ("root", str(engine.root.resolve())),
                ("artifact_root", artifact_root),
                ("repair", engine.repair),
                ("default_profile", engine.default_profile),
                ("providers", engine.given_providers),
            ),
        )


def _check_travels(providers: tuple[ProviderSpec, ...]) -> None:
    """Refuse providers given in code that a worker could not rebuild: a spec travels by
    reference (its functions importable by name), never as a closure."""
    import pickle

    for spec in providers:
        try:
            pickle.dumps(spec)
        except Exception as err:
            raise InvalidRequestError(
                f"the Ray executor rebuilds the engine on every worker; provider {spec.name!r} "
                "was given in code with functions a worker cannot import (define its spec and "
                "its functions at module level, or install it as an entry point)",
                field="executor",
            ) from err


def rows_for_project(
    *,
    root: str,
    artifact_root: str | None,
    repair: bool,
    default_profile: str | None,
    providers: tuple[ProviderSpec, ...] = (),
) -> RowWork:
    """The row work of an engine over ``root``, built in a worker process from a recipe (see
    ``Engine.row_work``): keys from this process's environment, the observer its environment
    names."""
    from scriptorium.observe import observer_from_env

    engine = Engine(
        root,
        repair=repair,
        artifact_root=artifact_root,
        default_profile=default_profile,
        observer=observer_from_env(),
        providers=providers,
    )
    return engine.row_work()


def _registry(given: tuple[ProviderSpec, ...]) -> Registry:
    from scriptorium.llm.registry import Registry, default_registry

    return Registry(given) if given else default_registry()


def as_request(request: RunRequest | str, fields: Mapping[str, Any]) -> RunRequest:
    """A ``RunRequest`` from either a request or a prompt id plus request fields."""
    from scriptorium.usecase.model import RunRequest  # here: importing the engine builds no model

    if isinstance(request, RunRequest):
        if fields:
            raise InvalidRequestError("pass either a RunRequest or a prompt id with fields")
        return request
    with translate(InvalidRequestError, "invalid request"):
        return RunRequest(prompt_id=request, **fields)


def _shown_path(path: Path, root: Path) -> str:
    """``path`` relative to the project root when it is inside it (as a diff names files)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _directory(value: object, name: str) -> Path:
    """A directory argument as a Path; anything that cannot name one is ``InvalidRequestError``
    here, not a ``TypeError`` or ``ValueError`` from deep inside the first file read."""
    if not isinstance(value, str | os.PathLike):
        raise InvalidRequestError(
            f"{name} must be a path (str or os.PathLike), not {type(value).__name__}", field=name
        )
    try:
        text = os.fspath(value)
    except TypeError as err:  # a PathLike whose __fspath__ returns something else
        raise InvalidRequestError(f"{name} is not a usable path", field=name) from err
    if not isinstance(text, str):
        raise InvalidRequestError(f"{name} must be a text path, not bytes", field=name)
    if "\x00" in text:
        raise InvalidRequestError(f"{name} holds a NUL character", field=name)
    return Path(text)
