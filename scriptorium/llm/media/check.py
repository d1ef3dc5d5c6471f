"""What a provider accepts in the way of media, checked in ``prepare`` before any call.

A request with media is refused here, with ``InvalidRequestError``, when the provider cannot take
it: a kind of media it does not read (an OpenAI-compatible server takes only what its profile's
``options.media`` declares), too many images, too many PDF pages, an image larger than the
provider's side limit (read from the file header), or an encoded request over the provider's
size limit. The provider would refuse each of these with a 400 after the upload; saying so here
costs nothing and names the artifact.

The limits are each provider's own (its spec's ``media`` rule, :class:`~.limits.MediaLimits`);
``internal_docs/media.md`` lists them and where scriptorium is stricter or can only estimate (PDF
pages are counted without a PDF library).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from scriptorium.artifact.media import image_size, media_kind, pdf_page_count
from scriptorium.artifact.model import Artifact
from scriptorium.errors import InvalidRequestError
from scriptorium.llm.media.limits import MediaLimits, base64_length
from scriptorium.llm.model import LLMRequest
from scriptorium.prompt.model import MediaPart, Message, TextPart

__all__ = ["check_media", "encoded_size", "media_bytes"]


def media_bytes(messages: Sequence[Message], artifacts: Mapping[str, Artifact]) -> dict[str, bytes]:
    """The bytes of every media part in ``messages``, by sha256 (``LLMRequest.media``)."""
    wanted = {part.sha256 for message in messages for part in message.media}
    if not wanted:
        return {}
    return {a.sha256: a.data for a in artifacts.values() if a.sha256 in wanted}


def encoded_size(request: LLMRequest) -> int:
    """About how many bytes the request body takes: media as base64 plus the text (the JSON
    around them is small next to any image)."""
    total = len((request.system or "").encode("utf-8"))
    for message in request.messages:
        content = message.content
        if isinstance(content, str):
            total += len(content.encode("utf-8"))
            continue
        for part in content:
            if isinstance(part, TextPart):
                total += len(part.text.encode("utf-8"))
            else:
                total += base64_length(part.size) + len(part.media_type) + 64
    return total


_pages: dict[str, int | None] = {}
_pages_lock = threading.Lock()


def _page_count(part: MediaPart, data: bytes) -> int | None:
    # Counting scans the whole file; the same PDF is counted once per process.
    if part.sha256 in _pages:
        return _pages[part.sha256]
    pages = pdf_page_count(data)
    with _pages_lock:
        if len(_pages) > 256:
            _pages.clear()
        _pages[part.sha256] = pages
    return pages


def check_media(
    request: LLMRequest,
    limits: MediaLimits | None,
    *,
    prompt_id: str | None = None,
    profile: str | None = None,
) -> None:
    """``InvalidRequestError`` when the request's media break ``limits`` (its provider's rules,
    ``ProviderSpec.media_limits``; None: any media)."""
    parts = [(m, part) for m in request.messages for part in m.media]
    if not parts:
        return
    if limits is None:
        return
    images = pdf_pages = pdf_bytes = 0
    for _, part in parts:
        kind = media_kind(part.media_type)
        where = f"artifact {part.name!r} ({part.media_type})"
        if kind is None or kind not in limits.kinds:
            raise _refuse(
                f"{where}: {_who(limits)} does not take "
                f"{'this media type' if kind is None else kind + 's'}"
                + (f"; {limits.hint}" if limits.hint else ""),
                prompt_id,
            )
        data = request.media.get(part.sha256)
        if kind == "image":
            images += 1
            size = None if data is None else image_size(data, part.media_type)
            side = limits.max_image_side
            if size is not None and side is not None and max(size) > side:
                raise _refuse(
                    f"{where} is {size[0]}x{size[1]} pixels; {_who(limits)} takes at most "
                    f"{side}x{side}",
                    prompt_id,
                )
        else:
            pdf_bytes += part.size
            pages = None if data is None else _page_count(part, data)
            pdf_pages += pages or 0
    if limits.max_images is not None and images > limits.max_images:
        raise _refuse(
            f"the request holds {images} images; {_who(limits)} takes at most {limits.max_images}",
            prompt_id,
        )
    if limits.max_pdf_pages is not None and pdf_pages > limits.max_pdf_pages:
        raise _refuse(
            f"the request's PDFs have {pdf_pages} pages; {_who(limits)} takes at most "
            f"{limits.max_pdf_pages}",
            prompt_id,
        )
    if limits.max_pdf_bytes is not None and pdf_bytes > limits.max_pdf_bytes:
        raise _refuse(
            f"the request's PDFs hold {pdf_bytes:,} bytes; {_who(limits)} takes at most "
            f"{limits.max_pdf_bytes:,}",
            prompt_id,
        )
    encoded = encoded_size(request)
    if limits.max_request_bytes is not None and encoded > limits.max_request_bytes:
        raise _refuse(
            f"the request would be about {encoded:,} bytes with its media encoded; "
            f"{_who(limits)} takes at most {limits.max_request_bytes:,}",
            prompt_id,
        )


def _who(limits: MediaLimits) -> str:
    return limits.who or f"the {limits.provider} API"


def _refuse(message: str, prompt_id: str | None) -> InvalidRequestError:
    return InvalidRequestError(message, prompt_id=prompt_id, field="artifacts")
