"""The kernel's flow: ``ready``, read init, configure, one iteration, ``exit``.

Exit codes: 0 completed; 1 the run failed once the model was being called (an ``exit`` line with
``exit_kind: "failed"`` and an ``error`` object); 2 nothing could be run (malformed or unknown init,
bad payload, provider misconfigured, prompt or profile unusable: an ``error`` log line and no
``exit`` line). Nothing but protocol lines ever reaches stdout, tracebacks included.

This module imports only the standard library and the stdlib-only protocol module at import time:
pydantic, the Engine and provider SDKs are imported after ``ready`` is written.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Mapping
from types import FrameType
from typing import IO, TYPE_CHECKING

from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.kernel.protocol import Emitter, describe_error, error_object, read_init

if TYPE_CHECKING:
    from scriptorium.kernel.jobs import Job
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


def serve(
    stdin: IO[bytes],
    stdout: IO[bytes],
    env: Mapping[str, str],
    *,
    pid: int | None = None,
    client: Client | None = None,
) -> int:
    """Speak the kernel protocol over ``stdin``/``stdout`` for one run; return the exit code.

    ``env`` is where ``CC_LLM_PROVIDER`` and the keys are read (the process environment for
    ``python -m scriptorium.kernel``). ``client`` replaces the provider ``CC_LLM_PROVIDER`` would
    choose, for both payload kinds (embedding the kernel in-process, tests).
    """
    out = Emitter(stdout, secrets=_secret_values(env))
    session = _Session(out, env, client)
    _Ending.writing = False  # set for good once an ending starts: the process then only closes
    try:
        out.ready(os.getpid() if pid is None else pid)
        return session.run(stdin)
    except KeyboardInterrupt:
        cancelled = LLMGenerateError("interrupted by a signal", reason="cancelled")
        return session.give_up(cancelled)
    except Exception as err:  # a bug of ours: reported as a protocol line, traceback on stderr
        traceback.print_exc(file=sys.stderr)
        # Reported with the base class's code ("scriptorium"): it is no sentinel's failure.
        return session.give_up(ScriptoriumError(f"internal error: {type(err).__name__}"))


class _Session:
    def __init__(self, out: Emitter, env: Mapping[str, str], client: Client | None) -> None:
        self.out = out
        self.env = env
        self.client = client
        self.started = False
        self.metered: MeteredClient | None = None
        #: The exit code, once the ending has been written.
        self.code: int | None = None

    def run(self, stdin: IO[bytes]) -> int:
        try:
            job = self._configure(stdin)
        except ScriptoriumError as err:
            return self._refuse(err)
        self.started = True
        self.out.iteration_start(1)
        try:
            outcome = job()
        except ScriptoriumError as err:
            return self._failed(err)
        _Ending.writing = True
        self._charge()
        for warning in outcome.warnings:
            self.out.log("warning", warning)
        self.out.iteration_done(1)
        if outcome.result is not None:
            # The whole result (output, parsed value, hashes, usage) just before the exit line,
            # for supervisors that want more than the summary; others ignore an op they do not know.
            self.out.send("result", result=outcome.result)
        self.out.exit("completed", outcome.text)
        self.code = EXIT_COMPLETED
        return self.code

    def _configure(self, stdin: IO[bytes]) -> Job:
        payload_data = read_init(stdin)
        # The heavier imports, now that the supervisor has its ``ready``.
        from scriptorium.kernel.jobs import prompt_job, raw_job
        from scriptorium.kernel.payload import PromptPayload, parse_payload
        from scriptorium.kernel.providers import MeteredClient, Provider, choose_provider
        from scriptorium.llm.retry import RetryHooks

        payload = parse_payload(payload_data)
        if self.client is not None:
            provider = Provider("custom", self.client)
        else:
            provider = choose_provider(
                self.env,
                prompt_run=isinstance(payload, PromptPayload),
                hooks=RetryHooks(on_retry=(self._retrying,)),
            )
        if provider.api_key is not None:
            self.out.add_secret(provider.api_key.get_secret_value())
        # The mock is the ledger's test double: it charges what its JSON says, whatever that is.
        self.metered = MeteredClient(
            provider.client, self._calling, free_replays=provider.name != "mock"
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

    # -- endings --------------------------------------------------------------------------------

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

    def _failed(self, err: ScriptoriumError) -> int:
        called = self.metered is not None and self.metered.calls > 0
        misconfigured = isinstance(err, LLMGenerateError) and err.reason in _CONFIG_REASONS
        if not self._spent() and (not called or misconfigured):
            # Nothing was run (or could be): the request or the set-up is wrong, not the call.
            return self._refuse(err)
        return self._fail(err)

    def give_up(self, err: ScriptoriumError) -> int:
        """End after an interruption or a bug: a failed exit once the iteration has started."""
        if self.code is not None:  # the ending was already written; a late signal changes nothing
            return self.code
        return self._fail(err) if self.started else self._refuse(err)

    def _refuse(self, err: ScriptoriumError) -> int:
        _Ending.writing = True
        self.out.error(err)
        self.code = EXIT_CONFIG
        return self.code

    def _fail(self, err: ScriptoriumError) -> int:
        _Ending.writing = True
        if self._spent():
            self._charge()  # tokens spent before the failure are still owed
        self.out.error(err)
        self.out.exit("failed", describe_error(err), error=error_object(err))
        self.code = EXIT_FAILED
        return self.code


def _secret_values(env: Mapping[str, str]) -> list[str]:
    # Short values are left alone: scrubbing "1" from every line would mangle numbers.
    return [
        value
        for name, value in env.items()
        if name.upper().endswith(_SECRET_SUFFIXES) and len(value) >= 8
    ]


class _Ending:
    """Whether the run's ending (charges, ``exit``) is being written. A signal then is not acted
    on: the ending is what the signal would produce, and interrupting it halfway (a second
    SIGTERM from an impatient supervisor) would leave a torn or missing ``exit`` line."""

    writing = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if _Ending.writing:
        return
    # The first signal ends the run; any later one (while the failed ending is on its way) is
    # redundant and must not interrupt the handler that writes it.
    _Ending.writing = True
    raise KeyboardInterrupt


def _claim_stdout() -> IO[bytes]:
    """A private handle on the real stdout for protocol lines; fd 1 itself is pointed at stderr,
    so a stray ``print`` or a C library's write cannot corrupt the protocol."""
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
    """``python -m scriptorium.kernel``: serve one run over the process's stdin and stdout."""
    protocol = _claim_stdout()
    # A supervisor stops a worker with SIGTERM: end with a "failed" exit line, not silently.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return serve(sys.stdin.buffer, protocol, os.environ)
    finally:
        try:
            protocol.close()
        except OSError:
            pass  # the supervisor closed its end
