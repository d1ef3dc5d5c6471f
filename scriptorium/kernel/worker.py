"""The kernel's flow: ``ready``, read init, configure, one iteration, the ending.

Exit codes: 0 completed; 1 the run failed once the model was being called (an ``exit`` line with
``exit_kind: "failed"`` and an ``error`` object); 2 nothing could be run (malformed or unknown init,
bad payload, provider misconfigured, prompt or profile unusable: an ``error`` log line and no
``exit`` line). Nothing but protocol lines ever reaches stdout, tracebacks included.

Two threads. The work (read init, configure, the iteration, its ending) runs in a worker thread;
the calling thread only waits, and when a stop is recorded (:mod:`scriptorium.kernel.signals`)
writes the ending the table says for the moment the stop came, unless the work's own ending has
begun, which then stands. Every ending, and the start of the iteration, is decided under one lock,
so there is exactly one ending and it matches the lines before it. A stop or a supervisor that is
gone (stdout closed) is also checked before every model call and every retry: no call is paid for
once nobody can be told about it.

This module imports only the standard library and the stdlib-only protocol and signal modules at
import time: pydantic, the Engine and provider SDKs are imported after ``ready`` is written.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.kernel.protocol import Emitter, describe_error, error_object, read_init
from scriptorium.kernel.signals import Stop, install
from scriptorium.redaction import SECRET_MIN_CHARS

if TYPE_CHECKING:
    from scriptorium.kernel.jobs import Job, Outcome
    from scriptorium.kernel.providers import MeteredClient
    from scriptorium.llm.client import Client
    from scriptorium.llm.model import LLMRequest
    from scriptorium.llm.retry import RetryInfo

__all__ = ["EXIT_COMPLETED", "EXIT_CONFIG", "EXIT_FAILED", "main", "serve"]

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2

#: ``LLMGenerateError`` reasons that mean "misconfigured", not "the call failed".
_CONFIG_REASONS = frozenset({"config", "provider_unavailable"})
#: Environment variables whose values are scrubbed from every line written.
_SECRET_SUFFIXES = ("API_KEY", "_TOKEN", "_SECRET")
#: How often the waiting thread looks at the stop record (a signal is handled between waits).
_POLL_S = 0.05


def serve(
    stdin: IO[bytes],
    stdout: IO[bytes],
    env: Mapping[str, str],
    *,
    pid: int | None = None,
    client: Client | None = None,
    stop: Stop | None = None,
) -> int:
    """Speak the kernel protocol over ``stdin``/``stdout`` for one run; return the exit code.

    ``env`` is where ``CC_LLM_PROVIDER`` and the keys are read (the process environment for
    ``python -m scriptorium.kernel``). ``client`` replaces the provider ``CC_LLM_PROVIDER`` would
    choose, for both payload kinds (embedding the kernel in-process, tests). ``stop`` is where
    stop requests are recorded (``python -m scriptorium.kernel``: the signal handlers'); when it
    asks to stop, the ending is written and the code returned at once, the work possibly still
    running in its (daemon) thread, with every further line and model call refused.
    """
    stop = stop or Stop()
    out = Emitter(stdout, secrets=_secret_values(env))
    session = _Session(out, env, client, stop)
    out.ready(os.getpid() if pid is None else pid)
    if out.broken:
        return EXIT_CONFIG  # nobody reads what we would say: nothing is run, nothing is paid
    worker = threading.Thread(
        target=session.work, args=(stdin,), name="scriptorium-kernel", daemon=True
    )
    if not stop.requested:  # a stop while starting up ends the run before it begins
        worker.start()
    while not stop.requested and not session.done.wait(_POLL_S):
        pass
    if stop.requested and session.give_up(_cancelled(stop)):
        stop.abandoned = worker.is_alive()
    else:
        session.done.wait()  # the work's own ending was written, or under way: it stands
    return session.code_or(EXIT_FAILED)


def _cancelled(stop: Stop) -> LLMGenerateError:
    return LLMGenerateError(f"interrupted by {stop.name()}", reason="cancelled")


class _Session:
    def __init__(
        self, out: Emitter, env: Mapping[str, str], client: Client | None, stop: Stop
    ) -> None:
        self.out = out
        self.env = env
        self.client = client
        self.stop = stop
        self.started = False
        self.metered: MeteredClient | None = None
        #: The exit code, once the ending has been written.
        self.code: int | None = None
        #: Set when the work is over (its ending written, or refused because one was).
        self.done = threading.Event()
        # Who writes the ending, and the start of the iteration, is decided under this lock.
        self._lock = threading.Lock()
        self._ended = False

    def code_or(self, default: int) -> int:
        return default if self.code is None else self.code

    def allowed(self) -> bool:
        """Whether a model call may still be made (no stop, someone reading)."""
        return not self.stop.requested and not self.out.broken and not self._ended

    def work(self, stdin: IO[bytes]) -> None:
        """The whole run, in the worker thread; its ending unless another was written first."""
        try:
            self._run(stdin)
        except KeyboardInterrupt:  # raised by an in-process client: the caller interrupted it
            self.give_up(LLMGenerateError("interrupted", reason="cancelled"))
        except Exception as err:  # a bug of ours: reported as a protocol line, traceback on stderr
            traceback.print_exc(file=sys.stderr)
            # Reported with the base class's code ("scriptorium"): it is no sentinel's failure.
            self.give_up(ScriptoriumError(f"internal error: {type(err).__name__}"))
        finally:
            self.done.set()

    def _run(self, stdin: IO[bytes]) -> None:
        try:
            job = self._configure(stdin)
        except ScriptoriumError as err:
            self._refuse(err)
            return
        if not self._begin():
            return
        try:
            outcome = job()
        except ScriptoriumError as err:
            self._failed(err)
            return
        self._complete(outcome)

    def _configure(self, stdin: IO[bytes]) -> Job:
        payload_data = read_init(stdin)
        # The heavier imports, now that the supervisor has its ``ready``.
        from scriptorium.kernel.jobs import prompt_job, raw_job
        from scriptorium.kernel.payload import PromptPayload, parse_payload
        from scriptorium.kernel.providers import MeteredClient, Provider, choose_provider
        from scriptorium.llm.registry import default_registry
        from scriptorium.llm.retry import RetryHooks

        payload = parse_payload(payload_data)
        if self.client is not None:
            provider = Provider("custom", self.client)
        else:
            hooks = RetryHooks(on_retry=(self._retrying,), stop_requested=self._stopped)
            # The worker process is a composition root: its one registry (the built-ins and
            # installed plugins) is chosen here and handed down.
            provider = choose_provider(
                self.env,
                prompt_run=isinstance(payload, PromptPayload),
                hooks=hooks,
                registry=default_registry(),
            )
        if provider.api_key is not None:
            self.out.add_secret(provider.api_key.get_secret_value())
        # The mock is the ledger's test double: it charges what its JSON says, whatever that is.
        self.metered = MeteredClient(
            provider.client,
            self._calling,
            free_replays=provider.name != "mock",
            allowed=self.allowed,
        )
        if isinstance(payload, PromptPayload):
            return prompt_job(payload, provider, self.metered, self.env)
        return raw_job(payload, provider, self.metered)

    # -- observers ------------------------------------------------------------------------------

    def _calling(self, request: LLMRequest) -> None:
        self.out.log("info", f"calling {request.target.model}")

    def _retrying(self, info: RetryInfo) -> None:
        failure = info.failure
        self.out.log(
            "warning",
            f"attempt {info.attempt} failed ({failure.reason}); retrying in {info.delay_s:.1f} s",
        )

    def _stopped(self) -> bool:
        return not self.allowed()

    # -- the start and the endings, each decided once -------------------------------------------

    def _begin(self) -> bool:
        """Start the iteration, unless an ending was written first."""
        with self._lock:
            if self._ended:
                return False
            self.started = True
            self.out.iteration_start(1)
            return True

    @contextmanager
    def _ending(self) -> Iterator[bool]:
        """Whether this thread writes the ending (the first to ask does); its lines go out
        together, and nothing after them."""
        with self._lock:
            if self._ended:
                yield False
                return
            self._ended = True
            with self.out.closing():
                yield True

    def _charge(self) -> None:
        usage = self.metered.usage if self.metered is not None else None
        if usage is None:
            return
        # Cache writes and reads are input tokens too (Anthropic only reports them apart); the
        # price differences live in cost_micro.
        tokens = (
            usage.input_tokens
            + usage.cache_creation_input_tokens
            + usage.cache_read_input_tokens
            + usage.output_tokens
        )
        self.out.charge("tokens", tokens)
        self.out.charge("cost_micro", usage.cost_micro)

    def _spent(self) -> bool:
        return self.metered is not None and self.metered.responses > 0

    def _complete(self, outcome: Outcome) -> None:
        with self._ending() as mine:
            if not mine:
                return
            self._charge()
            for warning in outcome.warnings:
                self.out.log("warning", warning)
            self.out.iteration_done(1)
            if outcome.result is not None:
                # The whole result (output, parsed value, hashes, usage) just before the exit
                # line, for supervisors that want more than the summary; others ignore the op.
                self.out.send("result", result=outcome.result)
            self.out.exit("completed", outcome.text)
            self.code = EXIT_COMPLETED

    def _failed(self, err: ScriptoriumError) -> None:
        with self._ending() as mine:
            if not mine:
                return
            called = self.metered is not None and self.metered.calls > 0
            misconfigured = isinstance(err, LLMGenerateError) and err.reason in _CONFIG_REASONS
            if self.stop.requested:
                # A stop once the iteration started, whichever thread saw it first (the call
                # refused to start, or the main thread): the table's failed exit.
                self._write_failure(err)
            elif not self._spent() and (not called or misconfigured):
                # Nothing was run (or could be): the request or the set-up is wrong, not the call.
                self._write_refusal(err)
            else:
                self._write_failure(err)

    def give_up(self, err: ScriptoriumError) -> bool:
        """End after an interruption or a bug: a failed exit once the iteration has started, a
        refusal before. False when an ending was already written (it stands)."""
        with self._ending() as mine:
            if mine:
                if self.started:
                    self._write_failure(err)
                else:
                    self._write_refusal(err)
            return mine

    def _refuse(self, err: ScriptoriumError) -> None:
        with self._ending() as mine:
            if mine:
                self._write_refusal(err)

    def _write_refusal(self, err: ScriptoriumError) -> None:
        self.out.error(err)
        self.code = EXIT_CONFIG

    def _write_failure(self, err: ScriptoriumError) -> None:
        if self._spent():
            self._charge()  # tokens spent before the failure are still owed
        self.out.error(err)
        self.out.exit("failed", describe_error(err), error=error_object(err))
        self.code = EXIT_FAILED


def _secret_values(env: Mapping[str, str]) -> list[str]:
    # Short values are left alone: scrubbing "1" from every line would mangle numbers.
    return [
        value
        for name, value in env.items()
        if name.upper().endswith(_SECRET_SUFFIXES) and len(value) >= SECRET_MIN_CHARS
    ]


def _claim_stdout() -> IO[bytes]:
    """A private handle on the real stdout for protocol lines; fd 1 itself is pointed at stderr,
    so a stray ``print`` or a C library's write cannot corrupt the protocol. A process started
    with no stdout at all gets a handle that is already broken (nothing is run, nothing paid)."""
    if sys.stdout is None:
        closed = io.BytesIO()
        closed.close()
        return closed
    sys.stdout.flush()
    try:
        fd = os.dup(sys.stdout.fileno())
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no real descriptors (embedded, captured)
        stream = sys.stdout.buffer
        sys.stdout = sys.stderr
        return stream
    return os.fdopen(fd, "wb")


def main() -> int:
    """``python -m scriptorium.kernel``: serve one run over the process's stdin and stdout.

    SIGTERM and SIGINT are recorded, never raised (``__main__`` installed the handlers first
    thing; installing them again here covers an embedding that calls ``main`` itself), and end
    the run with the ending of the kernel's table. The process then ends at once (``os._exit``),
    whether or not the work is still running (a call in flight, an import, a read of stdin): its
    connection is closed by the exit, and nothing it could still do would be reported. It does not
    go through the interpreter's shutdown, which puts the default handlers back early on: a
    supervisor's second signal arriving then would kill the process after its exit line, with
    -SIGTERM for the code the line announced.
    """
    stop = install()
    protocol = _claim_stdout()
    try:
        code = serve(sys.stdin.buffer, protocol, os.environ, stop=stop)
    finally:
        try:
            protocol.close()
        except (OSError, ValueError):
            pass  # the supervisor closed its end
    if stop.requested:
        sys.stderr.flush()
        os._exit(code)
    return code
