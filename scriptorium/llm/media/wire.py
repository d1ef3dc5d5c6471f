"""Media bytes on the wire: the base64 text a provider's content block carries for a media part
(:data:`Encoder`; :func:`b64_text` is the plain one), and the bytes spliced into the request body
as it is sent, so a large file is never held as a base64 string, nor again inside a JSON string,
nor again as the encoded body.

Building a request the plain way holds, at the peak, the file, its base64 text, the JSON text
around it and that text's UTF-8 bytes: five times the file. Instead, each media block gets a
placeholder (``encode``) where its base64 goes; the SDK serialises that small body as usual; and a
request hook on the SDK's HTTP client replaces the body's stream with one that yields the JSON
around the placeholders and, in their place, the file's base64 produced a slice at a time, with
``Content-Length`` set to the final size. What reaches the server is byte for byte the body the
plain way would send.

Placeholders carry a nonce drawn per request and are only honoured while that request is being
sent (a context variable scopes them to the sending thread or task), so no text in a prompt can
make the hook splice anything. A client the hook cannot be installed on (an injected test
double) gets the placeholders replaced by real base64 in the parameters instead: slower and
bigger, never wrong.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from scriptorium.artifact.media import base_type
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.media.limits import base64_length
from scriptorium.prompt.model import MediaPart, TextPart

__all__ = [
    "Encoder",
    "MediaBlock",
    "MediaWire",
    "b64_text",
    "content_blocks",
    "data_url",
    "install_hook",
    "part_bytes",
]

#: ``encode(part, data)`` -> the base64 text the block carries for ``data``.
Encoder = Callable[[MediaPart, bytes], str]


def b64_text(part: MediaPart, data: bytes) -> str:
    """The standard base64 of ``data``, as text."""
    return base64.b64encode(data).decode("ascii")


def part_bytes(part: MediaPart, media: Mapping[str, bytes], provider: str) -> bytes:
    """The bytes of ``part`` from a request's ``media``; ``invalid_request`` when they are not
    there (a request built by hand, or read back from JSON, where bytes are never written)."""
    data = media.get(part.sha256)
    if data is None:
        raise LLMGenerateError(
            f"{provider}: the bytes of media part {part.name!r} are not in the request",
            reason="invalid_request",
            retryable=False,
            provider=provider,
        )
    return data


#: ``(part, media type, base64 text) -> block``: a provider's content block for one media part
#: (the media type without its parameters).
MediaBlock = Callable[[MediaPart, str, str], dict[str, Any]]


def content_blocks(
    content: str | Sequence[TextPart | MediaPart],
    media: Mapping[str, bytes],
    provider: str,
    encode: Encoder,
    *,
    text_type: str,
    medium: MediaBlock,
) -> str | list[dict[str, Any]]:
    """A message's content as a provider's content blocks, in order (plain text stays text):
    each text part as ``{"type": text_type, "text": ...}``, each media part as ``medium`` builds
    it from its base64 text (``encode``d from the request's ``media``)."""
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            blocks.append({"type": text_type, "text": part.text})
            continue
        data = encode(part, part_bytes(part, media, provider))
        blocks.append(medium(part, base_type(part.media_type), data))
    return blocks


def data_url(media_type: str, data: str) -> str:
    """The ``data:`` URL of base64 text ``data``."""
    return f"data:{media_type};base64,{data}"


_PREFIX = "scriptorium-media-"
# Raw bytes per base64 piece: a multiple of 3, so pieces concatenate into one valid encoding.
_SLICE = 3 * 256 * 1024

_sending: ContextVar[MediaWire | None] = ContextVar("scriptorium_media_wire", default=None)
_HOOKED = "_scriptorium_media_hook"


class MediaWire:
    """One request's media: the placeholders handed out by :meth:`encode` and their bytes."""

    # Built on every call, media or not: the nonce and pattern wait for the first placeholder.
    __slots__ = ("_items", "_nonce", "_pattern")

    def __init__(self) -> None:
        self._items: list[bytes] = []
        self._nonce = ""
        self._pattern: re.Pattern[bytes] | None = None

    def __bool__(self) -> bool:
        return bool(self._items)

    def encode(self, part: MediaPart, data: bytes) -> str:
        """The placeholder to put where ``data``'s base64 goes (an ``Encoder``)."""
        if self._pattern is None:
            self._nonce = secrets.token_hex(12)
            self._pattern = re.compile(
                re.escape(f"{_PREFIX}{self._nonce}-".encode()) + rb"(\d{1,6})"
            )
        self._items.append(data)
        return f"{_PREFIX}{self._nonce}-{len(self._items) - 1}"

    def sending(
        self, sdk_client: Any, params: dict[str, Any]
    ) -> contextlib.AbstractContextManager[dict[str, Any]]:
        """Around one SDK call: gives the parameters to send, and splices while inside."""
        if not self._items:
            return contextlib.nullcontext(params)
        if not install_hook(sdk_client):
            return contextlib.nullcontext(self.inline(params))
        return self._active(params)

    @contextlib.contextmanager
    def _active(self, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        token = _sending.set(self)
        try:
            yield params
        finally:
            _sending.reset(token)

    def inline(self, value: Any) -> Any:
        """``value`` with every placeholder replaced by its real base64 (the fallback)."""
        if isinstance(value, str):
            if _PREFIX not in value:
                return value
            assert self._pattern is not None  # placeholders exist, so encode ran
            return self._pattern.sub(
                lambda m: self._encoded(int(m.group(1))), value.encode("ascii")
            ).decode("ascii")
        if isinstance(value, dict):
            return {k: self.inline(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.inline(v) for v in value]
        return value

    def _encoded(self, index: int) -> bytes:
        return binascii.b2a_base64(self._items[index], newline=False)

    def splice(self, body: bytes) -> tuple[list[bytes | int], int] | None:
        """The body cut at its placeholders (bytes, and item indexes where media go) and its
        final length; None when the body holds none of this request's placeholders."""
        if self._pattern is None:
            return None
        pieces: list[bytes | int] = []
        length = start = 0
        for match in self._pattern.finditer(body):
            index = int(match.group(1))
            if index >= len(self._items):
                continue
            pieces.append(body[start : match.start()])
            pieces.append(index)
            length += match.start() - start + base64_length(len(self._items[index]))
            start = match.end()
        if not pieces:
            return None
        pieces.append(body[start:])
        return pieces, length + len(body) - start

    def chunks(self, pieces: list[bytes | int]) -> Iterator[bytes]:
        """The spliced body, a JSON piece or a base64 slice at a time."""
        for piece in pieces:
            if isinstance(piece, bytes):
                if piece:
                    yield piece
                continue
            view = memoryview(self._items[piece])
            for start in range(0, len(view), _SLICE):
                yield binascii.b2a_base64(view[start : start + _SLICE], newline=False)


def _spliced_stream(wire: MediaWire, pieces: list[bytes | int]) -> Any:
    import httpx2

    class SplicedStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
        """Re-iterable, so a redirect can send it again."""

        def __iter__(self) -> Iterator[bytes]:
            yield from wire.chunks(pieces)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in wire.chunks(pieces):
                yield chunk

    return SplicedStream()


def _splice_request(request: Any) -> None:
    wire = _sending.get()
    if wire is None:
        return
    body = getattr(request, "_content", None)  # None for a streamed body: not ours to splice
    if not isinstance(body, bytes):
        return
    found = wire.splice(body)
    if found is None:
        return
    pieces, length = found
    request.stream = _spliced_stream(wire, pieces)
    request.headers["Content-Length"] = str(length)
    # The placeholder body must not be mistaken for what was sent.
    with contextlib.suppress(AttributeError):
        del request._content


async def _asplice_request(request: Any) -> None:
    _splice_request(request)


def install_hook(sdk_client: Any) -> bool:
    """Add the splicing hook to an SDK client's HTTP client (once); False when it has none."""
    if getattr(sdk_client, _HOOKED, False):
        return True
    http: Any = getattr(sdk_client, "_client", None)
    hooks = getattr(http, "event_hooks", None)
    if not isinstance(hooks, dict) or not isinstance(hooks.get("request"), list):
        return False
    import httpx2

    hook = _asplice_request if isinstance(http, httpx2.AsyncClient) else _splice_request
    http.event_hooks = {**hooks, "request": [*hooks["request"], hook]}
    try:
        setattr(sdk_client, _HOOKED, True)
    except AttributeError:
        return False
    return True
