"""The ``replay`` provider: responses served from a JSONL cassette keyed by ``request_hash``.

This is how users run prompt tests in CI without a key: record once against a real provider
(``mode: record``), commit the cassette, then replay (``mode: replay``, the default).

Cassette format: one JSON object per line, ``{"hash_version", "request_hash", "request",
"response"}`` where ``request`` is the request's hash form (never the key), ``response`` an
``LLMResponse`` and ``hash_version`` the form of ``request_hash``
(:data:`~scriptorium.hashing.REQUEST_HASH_VERSION`). Lines are only ever appended; when a hash
appears more than once, the last line wins (re-recording).

A line without ``hash_version`` was recorded when the hash still covered the endpoint (form 1).
It is not missed: its key is recomputed from the request form it stores, without the endpoint.
A line of a newer form than this code knows is refused (``reason="config"``), naming the line.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat as stat_module
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import scriptorium.hashing as hashing
from scriptorium._files import ConfinedDir, FileProblem, read_named_file
from scriptorium._journal import jsonl_lines, load_json
from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.hashing import REQUEST_HASH_VERSION
from scriptorium.llm.client import Client, Verifier, agenerate_with, supports
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, Route
from scriptorium.llm.streaming import StreamItem, astream_of, response_pieces, stream_of

if TYPE_CHECKING:
    from pydantic import SecretStr

try:  # Cross-process append lock where the platform has one; the thread lock covers the rest.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MAX_CASSETTE_BYTES",
    "PROVIDER",
    "SPEC",
    "ReplayClient",
    "ReplayMode",
    "cassette_location",
    "cassette_problems",
    "request_hash",
]

PROVIDER = "replay"

ReplayMode = Literal["replay", "record"]

#: A cassette larger than this is refused (it is read whole into memory).
MAX_CASSETTE_BYTES = 256 * 2**20

_APPEND_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)  # the cassette itself is never a link to elsewhere
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO put in its place cannot block the write
    | getattr(os, "O_CLOEXEC", 0)
)


def _config(message: str) -> LLMGenerateError:
    return LLMGenerateError(f"replay provider: {message}", reason="config", provider=PROVIDER)


def cassette_location(cassette: object, profile_source: str | None) -> tuple[Path, str]:
    """Where a profile's ``options.cassette`` lives: ``(project root, path relative to it)``.

    The path is relative to the profile file and must stay inside the project (the directory
    holding the profiles directory; without a profile file, the working directory): an absolute
    path, a NUL or a ``..`` that climbs out of the project is ``LLMGenerateError(reason="config")``
    here, before any file is touched; a symlink that leads out is refused when the file is read or
    written. ``check`` reports the same problems.
    """
    if not isinstance(cassette, str) or not cassette:
        raise _config("options.cassette must name the cassette file")
    if "\x00" in cassette:
        raise _config("options.cassette is not a usable path (NUL)")
    text = cassette.replace("\\", "/")
    if text.startswith("/") or os.path.isabs(cassette) or (len(text) > 1 and text[1] == ":"):
        raise _config("options.cassette must be a path relative to the profile, not absolute")
    if profile_source is None:
        project, profile_dir = Path.cwd(), ""
    else:
        directory = Path(profile_source).parent
        project, profile_dir = directory.parent, directory.name
    relative = posixpath.normpath(posixpath.join(profile_dir, text)) if profile_dir else text
    relative = posixpath.normpath(relative)
    if relative in ("", ".") or relative == ".." or relative.startswith("../"):
        raise _config("options.cassette leads outside the project")
    return project, relative


def request_hash(request: LLMRequest) -> str:
    """The cassette key of ``request``: the runner's ``request_hash`` (the key never counts)."""
    return hashing.hash_json(request.hash_form())


class ReplayClient:
    """Serves (``replay``) or records (``record``) responses in the JSONL cassette ``cassette``.

    In replay mode a request whose hash is not in the cassette fails with
    ``LLMGenerateError(reason="replay_miss")`` naming the hash. A replayed response keeps the recorded
    text, finish reason and tokens, but reports ``attempts=0``, ``llm_calls=0`` and ``cost_micro=0``:
    no request was made and nothing was spent now. The recorded values are kept in
    ``metadata["replay"]``. In record mode every request goes to ``inner`` and is appended.
    """

    def __init__(
        self,
        cassette: Path,
        *,
        mode: ReplayMode = "replay",
        inner: Client | None = None,
        root: Path | None = None,
    ) -> None:
        if mode not in ("replay", "record"):
            raise LLMGenerateError(
                f"replay provider: mode must be 'replay' or 'record', not {mode!r}",
                reason="config",
                provider=PROVIDER,
            )
        if mode == "record" and inner is None:
            raise LLMGenerateError(
                "replay provider: record mode needs a client to record from",
                reason="config",
                provider=PROVIDER,
            )
        self.cassette = Path(cassette)
        # With ``root`` the cassette is confined to it: ``cassette`` is then relative to ``root``.
        self._dir = None if root is None else ConfinedDir(root)
        self._relative = self.cassette.as_posix()
        if root is not None:
            self.cassette = Path(root) / self.cassette
        self.mode: ReplayMode = mode
        self._inner = inner
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, dict[str, Any]] = {}

    # -- replay -------------------------------------------------------------------------------

    def _index(self) -> dict[str, dict[str, Any]]:
        """The cassette's entries by hash, reloaded only when the file changed."""
        with self._lock:
            try:
                st = os.stat(self.cassette)
            except FileNotFoundError:
                self._stamp, self._entries = None, {}
                return self._entries
            except (OSError, ValueError) as err:
                raise self._config_error(f"cannot read cassette: {type(err).__name__}") from err
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                self._entries = self._read()
                self._stamp = stamp
            return self._entries

    def _bytes(self) -> bytes:
        """The cassette read the bounded way (a regular file, confined when a root is set)."""
        if self._dir is not None:
            return self._dir.read(self._relative, max_bytes=MAX_CASSETTE_BYTES).data
        return read_named_file(self.cassette, max_bytes=MAX_CASSETTE_BYTES, label="cassette")

    def _read(self) -> dict[str, dict[str, Any]]:
        entries: dict[str, dict[str, Any]] = {}
        try:
            lines = jsonl_lines(self._bytes().decode("utf-8"))
        except FileProblem as err:
            raise self._config_error(f"cannot read cassette: {err}") from err
        except UnicodeDecodeError as err:
            raise self._config_error(f"cannot read cassette: {type(err).__name__}") from err
        for number, line in lines:
            if not line.strip():
                continue
            try:
                entry = load_json(line)
                key = entry["request_hash"]
                if not isinstance(key, str) or not isinstance(entry["response"], dict):
                    raise TypeError("wrong shape")
            except (ValueError, KeyError, TypeError) as err:
                raise self._config_error(f"cassette line {number} is not a valid entry") from err
            entries[self._current_key(entry, number)] = entry["response"]
        return entries

    def _current_key(self, entry: dict[str, Any], number: int) -> str:
        """The entry's key under the current hash form (a form-1 key is recomputed)."""
        version = entry.get("hash_version", 1)
        if version == REQUEST_HASH_VERSION:
            return str(entry["request_hash"])
        if version == 1:
            stored = entry.get("request")
            form: dict[str, Any] = stored if isinstance(stored, dict) else {}
            target = form.get("target")
            if not isinstance(target, dict):
                raise self._config_error(
                    f"cassette line {number} was recorded under request hash form 1 and stores "
                    "no request to recompute its key from; record it again"
                )
            target = {k: v for k, v in target.items() if k != "endpoint"}
            try:
                return hashing.hash_json({**form, "target": target})
            except ValueError as err:
                raise self._config_error(f"cassette line {number} is not a valid entry") from err
        raise self._config_error(
            f"cassette line {number} uses request hash form {version!r}; this scriptorium reads "
            f"forms 1 and {REQUEST_HASH_VERSION}: upgrade it or record the cassette again"
        )

    def _replay(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        key = request_hash(request)
        recorded = self._index().get(key)
        if recorded is None:
            raise LLMGenerateError(
                f"replay miss: no response recorded for {key} in {self.cassette.name}",
                reason="replay_miss",
                provider=PROVIDER,
                model=request.target.model,
                attempts=0,
            )
        try:
            response = LLMResponse.model_validate(recorded)
        except ValueError as err:
            raise self._config_error(f"recorded response for {key} is invalid") from err
        metadata = dict(response.metadata)
        # Nothing was sent and nothing spent now: the result says so, and charges nothing.
        metadata["replayed"] = True
        metadata["replay"] = {
            "request_hash": key,
            "recorded_attempts": response.attempts,
            "recorded_cost_micro": response.usage.cost_micro,
            "recorded_latency_ms": response.latency_ms,
        }
        return response.model_copy(
            update={
                "attempts": 0,
                "usage": response.usage.model_copy(update={"llm_calls": 0, "cost_micro": 0}),
                "latency_ms": (time.perf_counter() - started) * 1000.0,
                "metadata": metadata,
            }
        )

    # -- record -------------------------------------------------------------------------------

    def _append(self, request: LLMRequest, response: LLMResponse) -> None:
        key = request_hash(request)
        line = _cassette_line(
            {
                "hash_version": REQUEST_HASH_VERSION,
                "request_hash": key,
                "request": request.hash_form(),
                "response": response.model_dump(mode="json"),
            }
        )
        with self._lock:
            try:
                self._make_parent()
                fd = os.open(self.cassette, _APPEND_FLAGS, 0o644)
                try:
                    if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                        raise self._config_error("the cassette is not a regular file")
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_EX)
                    # One write of a whole line on an O_APPEND descriptor: readers never see half
                    # an entry interleaved with another writer's.
                    os.write(fd, line + b"\n")
                finally:
                    os.close(fd)  # closing releases the flock
            except (OSError, ValueError, FileProblem) as err:
                raise self._config_error(
                    f"cannot append to cassette: {type(err).__name__}"
                ) from err
            self._stamp = None  # the next replay re-reads the file, other writers' lines included

    def _make_parent(self) -> None:
        """Create the cassette's directory; with a root, only inside it: the nearest existing
        ancestor is checked before anything is created (a linked directory must not lead the
        new ones outside), and the result after."""
        parent = self.cassette.parent
        if self._dir is not None:
            existing = parent
            while not existing.exists() and existing != existing.parent:
                existing = existing.parent
            if not self._dir.contains(os.path.realpath(existing)):
                raise self._config_error("the cassette's directory leads outside the project")
        parent.mkdir(parents=True, exist_ok=True)
        if self._dir is not None and not self._dir.contains(os.path.realpath(parent)):
            raise self._config_error("the cassette's directory leads outside the project")

    # -- ports --------------------------------------------------------------------------------

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The recorded response (replay), or the inner client's response, recorded (record)."""
        if self.mode == "replay":
            return self._replay(request)
        assert self._inner is not None  # checked in __init__
        response = self._inner.generate(request)
        self._append(request, response)
        return response

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`."""
        if self.mode == "replay":
            return self._replay(request)
        inner = self._inner
        assert inner is not None  # checked in __init__
        response = await agenerate_with(inner, request)
        self._append(request, response)
        return response

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """Replay: the recorded text in several chunks, then the response. Record: the inner
        client's stream passed through, recorded once it is complete."""
        if self.mode == "replay":
            response = self._replay(request)
            yield from response_pieces(response, 4)
            yield response
            return
        for item in stream_of(self._inner, request):
            if isinstance(item, LLMResponse):
                self._append(request, item)
            yield item

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        if self.mode == "replay":
            for item in self.stream(request):
                yield item
            return
        async for item in astream_of(self._inner, request):
            if isinstance(item, LLMResponse):
                self._append(request, item)
            yield item

    def verify(self, target: Target, api_key: SecretStr | str | None = None) -> LLMResponse:
        """Record mode: the recorded provider's own ``verify`` (when it has one). Replay mode: the
        cassette can be read; ``metadata["entries"]`` says how many requests it answers."""
        if self.mode == "record" and supports(self._inner, Verifier):
            result = cast("Verifier", self._inner).verify(target, api_key)
            if isinstance(result, LLMResponse):
                return result
        entries = len(self._index())
        return LLMResponse(
            model=target.model,
            attempts=0,
            metadata={"verified": "cassette", "cassette": self.cassette.name, "entries": entries},
        )

    def _config_error(self, message: str) -> LLMGenerateError:
        return LLMGenerateError(
            f"replay provider: {message} ({self.cassette.name})", reason="config", provider=PROVIDER
        )


def _cassette_line(entry: dict[str, Any]) -> bytes:
    """One cassette line: canonical JSON (readable UTF-8), or, for an answer holding a lone
    surrogate (which UTF-8 cannot carry), the same JSON with non-ASCII escaped, so the recorded
    answer is kept exactly and the run's boundary cleans it on replay as it did when recorded."""
    try:
        return hashing.canonical_json(entry)
    except UnicodeEncodeError:
        return json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def cassette_problems(options: Mapping[str, Any], source: str | None) -> Iterator[str]:
    """A replay profile's cassette path: absolute, leading out of the project, or a link that
    leads out (a run refuses all three); for ``check``."""
    try:
        root, relative = cassette_location(options.get("cassette"), source)
    except ScriptoriumError as err:
        yield err.message
        return
    try:
        ConfinedDir(root).resolve(relative)
    except FileProblem as err:
        if err.kind == "outside":
            yield "options.cassette resolves outside the project (a link)"


def _client(config: ProviderConfig) -> Client:
    options = config.options
    root, relative = cassette_location(options.get("cassette"), config.source)
    mode = options.get("mode", "replay")
    inner: Client | None = None
    if mode == "record":
        record_provider = options.get("record_provider")
        if not isinstance(record_provider, str) or record_provider in ("", PROVIDER):
            raise LLMGenerateError(
                "replay provider: record mode needs options.record_provider (a provider other "
                "than replay)",
                reason="config",
                provider=PROVIDER,
            )
        assert config.resolve is not None  # the router always supplies it
        inner = config.resolve(record_provider)
    return ReplayClient(Path(relative), mode=mode, inner=inner, root=root)


def _route(options: Mapping[str, Any], profile: str | None) -> Route:
    """A replay reads no key; a recording needs the key its recorded provider needs."""
    record_provider = options.get("record_provider")
    recording = options.get("mode", "replay") == "record" and isinstance(record_provider, str)
    return Route(key_rule_of=str(record_provider)) if recording else Route()


#: The ``replay`` provider's registry entry: one client per profile (its cassette and mode).
SPEC = ProviderSpec(name=PROVIDER, client=_client, check_options=cassette_problems, route=_route)
