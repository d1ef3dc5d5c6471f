"""The Ray executor: rows run on a Ray cluster, every worker drawing from one rate-limiter actor per
job (extra ``ray``; ``ray`` is imported only when this executor runs).

What runs where:

- the driver (this process) prepares the rows, starts the job's limiter actor, submits at most
  ``concurrency`` rows at a time to the least busy worker, and delivers each outcome as it comes
  back; only the driver writes files;
- a worker (:class:`RowRunner`, a threaded Ray actor; one per CPU by default) runs its rows on
  threads: it builds the row work from the job's :class:`~scriptorium.batch.work.Recipe` once per
  process, waits for room in the budget, takes its grant just before the request, runs the row and
  settles the grant with the real usage (:func:`scriptorium.batch.local.run_row`, the local
  executor's own code). Keys come from the worker's environment: a ``RunRequest``'s key is never
  pickled, and a recipe carries none;
- the limiter actor (:class:`~scriptorium.limits.ray.LimiterActor`) wraps one
  :class:`~scriptorium.limits.budget.RateBudget` per profile. It never sleeps: it answers how long
  to wait, and the worker sleeps.

A worker process that dies is restarted by Ray and the rows it had in flight are run again
(``max_retries``). The driver delivers a row only when its call returns, once, so a row is never
written twice (a row whose worker died after the provider answered is paid for twice: nothing can
tell whether the call was made).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scriptorium._version import install_hint
from scriptorium.batch.local import run_row
from scriptorium.batch.work import Deliver, ProfileLimits, Recipe, Row, RowWork
from scriptorium.errors import InvalidRequestError, LLMGenerateError, ScriptoriumError
from scriptorium.limits.budget import DEFAULT_WINDOW_S
from scriptorium.limits.limiter import Stopped

# Re-exported: the actor was always importable from here.
from scriptorium.limits.ray import ActorLimiter, start_limiter
from scriptorium.limits.ray import LimiterActor as LimiterActor

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

__all__ = ["LimiterActor", "RayExecutor", "RowRunner", "run_on_worker", "start_local_cluster"]

#: How long the driver waits for a finished row before looking again (Ctrl-C is seen between).
_POLL_S = 0.2


# One row work per worker process and recipe: building it loads nothing yet, but its caches
# (compiled templates and schemas, SDK clients) are what make the next row cheap.
_works: dict[Recipe, RowWork] = {}
_works_lock = threading.Lock()


def _work_for(recipe: Recipe) -> RowWork:
    with _works_lock:
        work = _works.get(recipe)
        if work is None:
            work = _works[recipe] = recipe.rebuild()
        return work


def run_on_worker(
    recipe: Recipe,
    request: RunRequest,
    prepared: PreparedRun,
    limiter: Any,
    limited: frozenset[str] = frozenset(),
) -> RunResult | ScriptoriumError | None:
    """One row, on a Ray worker, exactly as the local executor runs it (wait for room, take the
    grant just before the first request, settle after). None when the job stopped before the
    row was sent."""
    work = _work_for(recipe)
    row = Row(0, request, prepared)
    try:
        return run_row(work, row, ActorLimiter(limiter, limited))
    except Stopped:
        return None


class RowRunner:
    """A worker: one Ray actor process running rows on its own threads (a row mostly waits on
    the network, so one process keeps many in flight). Kept across jobs of the same driver; it
    builds the row work once per recipe it is given."""

    def run(
        self,
        recipe: Recipe,
        request: RunRequest,
        prepared: PreparedRun,
        limiter: Any,
        limited: frozenset[str] = frozenset(),
    ) -> RunResult | ScriptoriumError | None:
        """One row (see :func:`run_on_worker`)."""
        return run_on_worker(recipe, request, prepared, limiter, limited)


#: The variable by which Ray runs a cluster on one machine only (what it does on macOS and
#: Windows): every address it picks and every port it opens is then loopback.
_ONE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def start_local_cluster(num_cpus: int | None = None, **init_options: Any) -> None:
    """Start a Ray cluster on this machine for this process, reachable from this machine only:
    every process of it (GCS, raylet, workers, agents) listens on 127.0.0.1, and there is no
    dashboard.

    ``ray.init`` alone is not enough: given ``_node_ip_address="127.0.0.1"`` Ray (2.x) replaces it
    with the machine's interface address, and its gRPC servers then listen on every interface.
    It keeps loopback only in its one-machine mode (the one it uses on macOS and Windows), which
    its constant ``ENABLE_RAY_CLUSTER`` and the variable :data:`_ONE_MACHINE_ENV` turn on: both
    are set for the start (the cluster's processes inherit the variable) and put back after.
    """
    import ray
    import ray._private.ray_constants as ray_constants  # Ray's own switch; no public one exists

    saved_constant = ray_constants.ENABLE_RAY_CLUSTER
    saved_env = os.environ.get(_ONE_MACHINE_ENV)
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ[_ONE_MACHINE_ENV] = "0"
    try:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            **init_options,
        )
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_constant
        if saved_env is None:
            os.environ.pop(_ONE_MACHINE_ENV, None)
        else:
            os.environ[_ONE_MACHINE_ENV] = saved_env


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
                f"--executor ray needs Ray: {install_hint('ray')}", field="executor"
            ) from err
        if not ray.is_initialized():
            if self.address is None and not os.environ.get("RAY_ADDRESS"):
                start_local_cluster(self.num_cpus)
            else:
                ray.init(
                    address=self.address,
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
        self, work: RowWork, rows: Iterable[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row; see :class:`~scriptorium.batch.work.BatchExecutor`. The workers build
        the work from ``work.recipe()`` (``InvalidRequestError`` when it cannot travel). A row
        goes to a worker without its plan (the plan holds the key, which never travels): the
        worker prepares it again from its request."""
        recipe = work.recipe()
        ray = self._ray()
        actor = start_limiter(ray, {}, self.window_s, self.margin_s)

        def allow(profile: str, limits: RateLimits) -> None:
            # Answered before the profile's first row is sent, so no worker asks too early.
            ray.get(actor.allow.remote(profile, limits.given()))

        limits = ProfileLimits(work, allow)
        pool = self._pool(ray, concurrency)
        recipe_ref = ray.put(recipe)
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
                    limits.first_seen(row)
                    limited = (
                        frozenset({row.prepared.profile})
                        if limits.limited(row.prepared.profile)
                        else frozenset()
                    )
                    slot = load.index(min(load))  # the least busy worker
                    ref = pool[slot].run.remote(
                        recipe_ref, row.request, row.prepared, actor, limited
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
