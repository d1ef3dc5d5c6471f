"""The wire side of the kernel: reading the init line and writing protocol lines.

Every line, in and out, is one JSON object with an ``"op"`` field. Lines written here are compact
ASCII JSON (non-ASCII escaped), so any supervisor can decode them whatever its locale, and each is
flushed on its own so a supervisor reading line by line sees it at once.

Standard library only: ``ready`` is written before anything heavier (pydantic, the Engine) is
imported, so a supervisor sees the process come up in tens of milliseconds.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from scriptorium._journal import load_json
from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.redaction import redact

__all__ = [
    "MAX_INIT_BYTES",
    "SUMMARY_CHARS",
    "Emitter",
    "read_init",
    "summarize",
]

#: ``exit.summary`` carries at most this many characters of the output text.
SUMMARY_CHARS = 200
#: The longest init line accepted (inputs, and artifacts given by value, travel inline).
MAX_INIT_BYTES = 16 * 1024 * 1024


def summarize(text: str) -> str:
    """``text`` cut to :data:`SUMMARY_CHARS` characters (code points, no ellipsis added)."""
    return text[:SUMMARY_CHARS]


def read_init(stream: IO[bytes]) -> dict[str, Any]:
    """The payload of the first non-blank line, which must be ``{"op": "init", "payload": {...}}``.

    Raises ``InvalidRequestError`` for EOF before init, a line that is not a JSON object, a
    missing or unknown ``op``, or a payload that is not an object. Keys of the init message other
    than ``op`` and ``payload`` are ignored (the envelope may grow; the payload may not).
    """
    while True:
        raw = stream.readline(MAX_INIT_BYTES + 1)
        if not raw:
            raise InvalidRequestError("stdin closed before the init line", field="init")
        if len(raw) > MAX_INIT_BYTES:
            raise InvalidRequestError(f"init line longer than {MAX_INIT_BYTES} bytes", field="init")
        if raw.strip():
            break
    try:
        message = load_json(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as err:
        raise InvalidRequestError(
            f"malformed init line: not JSON ({type(err).__name__})", field="init"
        ) from err
    if not isinstance(message, dict):
        raise InvalidRequestError("malformed init line: not a JSON object", field="init")
    op = message.get("op")
    if op is None:
        raise InvalidRequestError("malformed init line: no 'op' field", field="op")
    if op != "init":
        shown = op if isinstance(op, str) else type(op).__name__
        raise InvalidRequestError(f"unknown op {shown[:40]!r}: expected 'init'", field="op")
    payload = message.get("payload")
    if not isinstance(payload, dict):
        raise InvalidRequestError("init 'payload' must be a JSON object", field="payload")
    return payload


class Emitter:
    """Writes protocol lines to the supervisor; thread-safe; scrubs ``secrets`` from every line.

    A supervisor that stops reading (a broken pipe) is not an error of ours: further lines are
    dropped and :attr:`broken` is set, so the kernel still finishes and exits with its own code.
    """

    def __init__(self, stream: IO[bytes], *, secrets: Iterable[str] = ()) -> None:
        self._stream = stream
        self._secrets = {s for s in secrets if s}
        # Re-entrant: an ending holds it across its lines (see closing) and writes through send.
        self._lock = threading.RLock()
        self.broken = False
        #: Set once the last line (the ending) was written: later lines are dropped.
        self.sealed = False

    @contextmanager
    def closing(self) -> Iterator[None]:
        """Hold the stream for the ending: its lines go out together, nothing another thread
        writes lands between them, and nothing at all after them."""
        with self._lock:
            try:
                yield
            finally:
                self.sealed = True

    def add_secret(self, value: str | None) -> None:
        """Never let ``value`` appear on stdout from now on."""
        if value:
            with self._lock:
                self._secrets.add(value)

    def send(self, op: str, **fields: Any) -> None:
        """One line: ``{"op": op, **fields}``."""
        line = json.dumps({"op": op, **fields}, separators=(",", ":"), ensure_ascii=True)
        with self._lock:
            if self._secrets:
                # Lines are ASCII JSON, so a key may also appear in its escaped form.
                escaped = [json.dumps(s, ensure_ascii=True)[1:-1] for s in self._secrets]
                line = redact(line, [*self._secrets, *escaped])
            if self.broken or self.sealed:
                return
            try:
                self._stream.write(line.encode("ascii") + b"\n")
                self._stream.flush()
            except (OSError, ValueError):  # broken pipe, or the stream already closed
                self.broken = True

    # -- the messages ---------------------------------------------------------------------------

    def ready(self, pid: int) -> None:
        """The process is up and reads its init line next."""
        self.send("ready", pid=pid)

    def iteration_start(self, number: int) -> None:
        """Work on iteration ``number`` begins."""
        self.send("iteration_start", iter=number)

    def log(self, level: str, msg: str, **extra: Any) -> None:
        """A diagnostic for the supervisor's log (``info``, ``warning`` or ``error``)."""
        self.send("log", level=level, msg=msg, **extra)

    def error(self, err: ScriptoriumError) -> None:
        """An ``error`` log line naming the error's code (and reason) with its structured form."""
        self.log("error", describe_error(err), error=error_object(err))

    def charge(self, dim: str, amount: int) -> None:
        """Charge ``amount`` of ``dim`` (``tokens`` or ``cost_micro``) to the ledger."""
        self.send("charge", dim=dim, amount=amount)

    def iteration_done(self, number: int) -> None:
        """Iteration ``number`` finished. Its ``tokens``/``cost_micro`` are 0 on purpose: the
        ``charge`` lines already carried the spend, so a supervisor that also charges from
        ``iteration_done`` cannot count it twice."""
        self.send("iteration_done", iter=number, tokens=0, cost_micro=0)

    def exit(self, kind: str, summary: str, **extra: Any) -> None:
        """The last line: how the run ended (``completed`` or ``failed``)."""
        self.send("exit", exit_kind=kind, summary=summarize(summary), **extra)


def describe_error(err: ScriptoriumError) -> str:
    """``code (reason): message`` for a log line or a failed exit's summary."""
    reason = getattr(err, "reason", None)
    head = f"{err.code} ({reason})" if reason else err.code
    return f"{head}: {err.message}"


def error_object(err: ScriptoriumError) -> Mapping[str, Any]:
    """The error's wire form (``code``, ``message`` and its set fields, such as ``reason``)."""
    return {k: v for k, v in err.to_dict().items() if _jsonable(v)}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | tuple | dict)
