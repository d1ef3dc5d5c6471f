"""The Ray executor: rows run as Ray tasks on a cluster, every worker drawing from one rate-limiter
actor per job (extra ``ray``; ``ray`` is imported only when this executor runs).

What runs where:

- the driver (this process) prepares the rows, starts the job's limiter actor, submits at most
  ``concurrency`` rows at a time, and delivers each outcome as it comes back; only the driver
  writes files;
- a task (:func:`run_on_worker`) builds the engine over the same project directory once per worker
  process, acquires from the actor before the call, runs the row and settles the grant with the
  real usage. Keys come from the worker's environment: a ``RunRequest``'s key is never pickled;
- the limiter actor (:class:`LimiterActor`) wraps one
  :class:`~scriptorium.batch.limits.RateBudget` per profile. It never sleeps: it answers how long
  to wait, and the worker sleeps.

A worker process that dies takes its task with it; Ray runs the task again elsewhere
(``max_retries``). The driver delivers a row only when its task returns, once, so a row is never
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

__all__ = ["LimiterActor", "RayExecutor", "run_on_worker"]

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
    here."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def ready(self, profile: str, need: Estimate) -> None:
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
    project: Project, request: RunRequest, prepared: PreparedRun, limiter: Any
) -> RunResult | ScriptoriumError | None:
    """One row, on a Ray worker, exactly as the local executor runs it (wait for room, take the
    grant just before the first request, settle after). None when the job stopped before the
    row was sent."""
    engine = _engine_for(project)
    row = Row(0, request, prepared)
    try:
        return run_row(engine, row, _ActorLimiter(limiter))
    except Stopped:
        return None


class RayExecutor:
    """Runs rows on a Ray cluster.

    ``address``: the cluster to join (``"auto"``, ``"ray://host:10001"``, ...; None: the
    ``RAY_ADDRESS`` variable, else a local cluster started here). ``num_cpus`` is given to a
    local cluster started here. Each row claims ``cpus_per_row`` CPUs (a row mostly waits on the
    network, so several share one CPU). ``max_retries`` is how often a row whose worker process
    died is run again. ``window_s``/``margin_s`` shape the rate windows (tests shorten them).
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        cpus_per_row: float = 0.25,
        max_retries: int = 3,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
    ) -> None:
        if cpus_per_row <= 0:
            raise InvalidRequestError("cpus_per_row must be positive", field="cpus_per_row")
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_row = cpus_per_row
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
        task = ray.remote(run_on_worker).options(
            num_cpus=self.cpus_per_row, max_retries=self.max_retries, retry_exceptions=False
        )
        project_ref = ray.put(project)
        pending: dict[Any, Row] = {}
        queue: Iterator[Row] = iter(rows)
        try:
            exhausted = False
            while True:
                while not exhausted and len(pending) < concurrency:
                    row = next(queue, None)
                    if row is None:
                        exhausted = True
                        break
                    ref = task.remote(project_ref, row.request, row.prepared, actor)
                    pending[ref] = row
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                for ref in ready:
                    _deliver(ray, ref, pending.pop(ref), deliver)
        except BaseException:
            # Ctrl-C or a bug: nothing new starts; rows still waiting for a grant give up,
            # rows in flight finish and are delivered.
            actor.close.remote()
            for ref, row in list(pending.items()):
                _deliver(ray, ref, row, deliver)
            raise
        finally:
            ray.kill(actor)


def _deliver(ray: Any, ref: Any, row: Row, deliver: Deliver) -> None:
    try:
        outcome = ray.get(ref)
    except Exception as err:  # the task failed past its retries (its workers kept dying)
        outcome = LLMGenerateError(
            f"row {row.index}: the Ray task failed ({type(err).__name__})",
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
