"""The Ray executor: rows run on a Ray cluster, every worker drawing from one rate-limiter actor per
job (extra ``ray``; ``ray`` is imported only when this executor runs).

What runs where:

- the driver (this process) prepares the rows, starts the job's limiter actor, submits at most
  ``concurrency`` rows at a time to the least busy worker, and delivers each outcome as it comes
  back; only the driver writes files;
- a worker (:class:`RowRunner`, a threaded Ray actor; one per CPU by default) runs its rows on
  threads: it builds the engine over the same project directory once per process, waits for room
  in the budget, takes its grant just before the request, runs the row and settles the grant with
  the real usage (:func:`scriptorium.batch.local.run_row`, the local executor's own code). Keys
  come from the worker's environment: a ``RunRequest``'s key is never pickled;
- the limiter actor (:class:`LimiterActor`) wraps one
  :class:`~scriptorium.batch.limits.RateBudget` per profile. It never sleeps: it answers how long
  to wait, and the worker sleeps.

A worker process that dies is restarted by Ray and the rows it had in flight are run again
(``max_retries``). The driver delivers a row only when its call returns, once, so a row is never
written twice (a row whose worker died after the provider answered is paid for twice: nothing can
tell whether the call was made).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scriptorium.batch.executor import Deliver, Row, profile_limits
from scriptorium.batch.limits import DEFAULT_WINDOW_S, Estimate, RateBudget, Stopped
from scriptorium.batch.local import run_row
from scriptorium.errors import InvalidRequestError, LLMGenerateError, ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

__all__ = ["LimiterActor", "RayExecutor", "RowRunner", "run_on_worker"]

#: How long the driver waits for a finished row before looking again (Ctrl-C is seen between).
_POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class Project:
    """What a worker needs to build the driver's engine again (no client, no key)."""

    root: str
    artifact_root: str | None
    repair: bool
    default_profile: str | None


def project_of(engine: Engine) -> Project:
    """The engine's project, to rebuild on workers; ``InvalidRequestError`` for an engine that
    cannot travel (a custom client, or keys given as an ``env`` mapping)."""
    from scriptorium.llm.router import Router

    if not isinstance(engine.client, Router):
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
    artifact_root = None if engine.artifact_root is None else str(engine.artifact_root.resolve())
    return Project(
        root=str(engine.root.resolve()),
        artifact_root=artifact_root,
        repair=engine.repair,
        default_profile=engine.default_profile,
    )


class LimiterActor:
    """The job's budgets, one :class:`RateBudget` per profile, as a Ray actor. Methods answer at
    once (Ray runs them one at a time, so each is atomic)."""

    def __init__(
        self, limits: dict[str, dict[str, int]], window_s: float, margin_s: float | None
    ) -> None:
        from scriptorium.profile.model import RateLimits

        self._budgets = {
            name: RateBudget(RateLimits(**given), window_s=window_s, margin_s=margin_s)
            for name, given in limits.items()
        }
        self._closed = False

    def acquire(self, profile: str, need: Estimate, delay_s: float) -> tuple[float, int]:
        """``(0, ticket)`` granted; ``(wait, -1)`` ask again after ``wait``; ``(-1, -1)`` the
        job is stopping."""
        if self._closed:
            return -1.0, -1
        budget = self._budgets.get(profile)
        if budget is None:
            return 0.0, -1
        return budget.acquire(time.monotonic(), need, delay_s=delay_s)

    def peek(self, profile: str, need: Estimate) -> float:
        """Seconds until ``need`` would be granted (0: now; -1: the job is stopping)."""
        if self._closed:
            return -1.0
        budget = self._budgets.get(profile)
        return 0.0 if budget is None else budget.peek(time.monotonic(), need)

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        """Record real usage of a grant."""
        budget = self._budgets.get(profile)
        if budget is not None and ticket >= 0:
            budget.settle(ticket, used)

    def pause(self, profile: str, seconds: float) -> None:
        """Grant nothing for the profile for ``seconds`` (a 429)."""
        budget = self._budgets.get(profile)
        if budget is not None:
            budget.pause(time.monotonic(), seconds)

    def close(self) -> None:
        """Stop granting (the driver is stopping)."""
        self._closed = True


class _ActorLimiter:
    """The :class:`~scriptorium.batch.limits.Limiter` a worker uses: asks the actor, sleeps
    here. ``limited`` names the profiles with limits: for the others the actor would answer
    "go" to every question but the grant's, whose "stop" is what keeps a row from being sent
    once the job stops, so only the grant is asked for them (one actor call a row, not two)."""

    def __init__(self, actor: Any, limited: frozenset[str]) -> None:
        self._actor = actor
        self._limited = limited

    def ready(self, profile: str, need: Estimate) -> None:
        if profile not in self._limited:
            return
        import ray

        while True:
            wait = ray.get(self._actor.peek.remote(profile, need))
            if wait < 0:
                raise Stopped
            if wait == 0:
                return
            time.sleep(min(wait, 1.0))

    def acquire(self, profile: str, need: Estimate, *, delay_s: float = 0.0) -> int:
        import ray

        while True:
            wait, ticket = ray.get(self._actor.acquire.remote(profile, need, delay_s))
            if wait < 0:
                raise Stopped
            if wait == 0:
                return int(ticket)
            time.sleep(min(wait, 1.0))

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        if ticket >= 0:
            self._actor.settle.remote(profile, ticket, used)

    def pause(self, profile: str, seconds: float) -> None:
        if profile in self._limited:  # the actor pauses budgets only; others have none
            self._actor.pause.remote(profile, seconds)


# One engine per worker process and project: building it loads nothing yet, but its caches
# (compiled templates and schemas, SDK clients) are what make the next row cheap.
_engines: dict[Project, Engine] = {}
_engines_lock = threading.Lock()


def _engine_for(project: Project) -> Engine:
    with _engines_lock:
        engine = _engines.get(project)
        if engine is None:
            from scriptorium.engine import Engine
            from scriptorium.observe import observer_from_env

            engine = Engine(
                project.root,
                repair=project.repair,
                artifact_root=project.artifact_root,
                default_profile=project.default_profile,
                observer=observer_from_env(),
            )
            _engines[project] = engine
        return engine


def run_on_worker(
    project: Project,
    request: RunRequest,
    prepared: PreparedRun,
    limiter: Any,
    limited: frozenset[str] = frozenset(),
) -> RunResult | ScriptoriumError | None:
    """One row, on a Ray worker, exactly as the local executor runs it (wait for room, take the
    grant just before the first request, settle after). None when the job stopped before the
    row was sent."""
    engine = _engine_for(project)
    row = Row(0, request, prepared)
    try:
        return run_row(engine, row, _ActorLimiter(limiter, limited))
    except Stopped:
        return None


class RowRunner:
    """A worker: one Ray actor process running rows on its own threads (a row mostly waits on
    the network, so one process keeps many in flight). Kept across jobs of the same driver; it
    builds one engine per project it is given."""

    def run(
        self,
        project: Project,
        request: RunRequest,
        prepared: PreparedRun,
        limiter: Any,
        limited: frozenset[str] = frozenset(),
    ) -> RunResult | ScriptoriumError | None:
        """One row (see :func:`run_on_worker`)."""
        return run_on_worker(project, request, prepared, limiter, limited)


# The driver's workers, by what they were made for: starting a Ray worker process takes
# seconds, so the next job of the same driver and shape reuses them.
_pools: dict[tuple[int, int, float, int], list[Any]] = {}


class RayExecutor:
    """Runs rows on a Ray cluster.

    ``address``: the cluster to join (``"auto"``, ``"ray://host:10001"``, ...; None: the
    ``RAY_ADDRESS`` variable, else a local cluster started here). ``num_cpus`` is given to a
    local cluster started here. ``workers`` worker processes (default: one per CPU of the
    cluster) each claim ``cpus_per_worker`` CPUs and run their share of ``concurrency`` rows on
    threads. ``max_retries`` is how often a worker that died is restarted and its rows run again.
    ``window_s``/``margin_s`` shape the rate windows (tests shorten them).
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        workers: int | None = None,
        cpus_per_worker: float | None = None,
        max_retries: int = 3,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise InvalidRequestError("workers must be at least 1", field="workers")
        if cpus_per_worker is not None and cpus_per_worker <= 0:
            raise InvalidRequestError("cpus_per_worker must be positive", field="cpus_per_worker")
        self.address = address
        self.num_cpus = num_cpus
        self.workers = workers
        self.cpus_per_worker = cpus_per_worker
        self.max_retries = max_retries
        self.window_s = window_s
        self.margin_s = margin_s

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as err:
            raise InvalidRequestError(
                "--executor ray needs Ray: pip install 'scriptorium[ray]'", field="executor"
            ) from err
        if not ray.is_initialized():
            ray.init(
                address=self.address,
                num_cpus=self.num_cpus if self.address is None else None,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        return ray

    def _pool(self, ray: Any, concurrency: int) -> list[Any]:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        workers = self.workers or cpus
        per_worker = self.cpus_per_worker or cpus / workers
        threads = max(1, -(-concurrency // workers))
        key = (workers, threads, per_worker, self.max_retries)
        pool = _pools.get(key)
        if pool is None:
            # One pool at a time: workers hold their CPUs, and a pool of another shape would
            # wait forever for CPUs the old one keeps.
            for old in _pools.values():
                for worker in old:
                    ray.kill(worker)
            _pools.clear()
            runner = ray.remote(RowRunner).options(
                num_cpus=per_worker,
                max_concurrency=threads,
                max_restarts=self.max_retries,
                max_task_retries=self.max_retries,
            )
            pool = _pools[key] = [runner.remote() for _ in range(workers)]
        return pool

    def execute(
        self, engine: Engine, rows: Sequence[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row; see :class:`~scriptorium.batch.executor.BatchExecutor`."""
        project = project_of(engine)
        ray = self._ray()
        limits = profile_limits(engine, rows)
        actor = (
            ray.remote(LimiterActor)
            .options(name=f"scriptorium-limiter-{uuid.uuid4().hex}", num_cpus=0)
            .remote(_plain(limits), self.window_s, self.margin_s)
        )
        limited = frozenset(limits)
        pool = self._pool(ray, concurrency)
        project_ref = ray.put(project)
        load = [0] * len(pool)
        pending: dict[Any, tuple[Row, int]] = {}
        queue: Iterator[Row] = iter(rows)
        try:
            exhausted = False
            while True:
                while not exhausted and len(pending) < concurrency:
                    row = next(queue, None)
                    if row is None:
                        exhausted = True
                        break
                    slot = load.index(min(load))  # the least busy worker
                    ref = pool[slot].run.remote(
                        project_ref, row.request, row.prepared, actor, limited
                    )
                    pending[ref] = (row, slot)
                    load[slot] += 1
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                for ref in ready:
                    row, slot = pending.pop(ref)
                    load[slot] -= 1
                    _deliver(ray, ref, row, deliver)
        except BaseException:
            # Ctrl-C or a bug: nothing new starts; rows still waiting for a grant give up,
            # rows in flight finish and are delivered.
            actor.close.remote()
            for ref, (row, _) in list(pending.items()):
                _deliver(ray, ref, row, deliver)
            raise
        finally:
            ray.kill(actor)


def _deliver(ray: Any, ref: Any, row: Row, deliver: Deliver) -> None:
    try:
        outcome = ray.get(ref)
    except Exception as err:  # failed past its retries (its worker kept dying)
        outcome = LLMGenerateError(
            f"row {row.index}: the Ray worker failed ({type(err).__name__})",
            reason="server_error",
            retryable=True,
            prompt_id=row.request.prompt_id,
            profile=row.prepared.profile,
        )
        outcome.__cause__ = err
    if outcome is not None:
        deliver(row, outcome)


def _plain(limits: dict[str, RateLimits]) -> dict[str, dict[str, int]]:
    return {name: given.given() for name, given in limits.items()}
