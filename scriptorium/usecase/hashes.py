"""``rendered_prompt_hash`` and ``request_hash`` from one serialisation.

Both hash forms hold the rendered messages, and the request's also holds the structured-output
spec with its whole schema: serialising each from scratch on every run showed in the profile. The
canonical JSON of a dict with sorted keys is its members' canonical JSON joined in key order, so
the forms are assembled from parts — the messages serialised once, the spec's, settings' and
target's bytes remembered per (frozen) object. The first assembly in a process is checked against the plain ``hash_json`` of the hash
forms; should they ever differ (a field added to a hash form), the plain way is used from then on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scriptorium.hashing import canonical_json, hash_bytes, hash_json
from scriptorium.llm.model import LLMRequest
from scriptorium.prompt.model import RenderedPrompt

__all__ = ["prompt_and_request_hashes"]

_SPEC_LIMIT = 256
_lock = threading.Lock()
_state = {"checked": False, "assemble": True}


def _spec_bytes(request: LLMRequest) -> bytes:
    spec = request.structured_output
    if spec is None:
        return b"null"
    # Remembered by the spec object itself (the runner hands out the same frozen spec for an
    # unchanged prompt). Not by an equal-looking schema: == holds between 1, 1.0 and True, whose
    # JSON differs.
    return _frozen_bytes(spec, _spec_json)


def _spec_json(spec: Any) -> bytes:
    return canonical_json(spec.model_dump(mode="json", by_alias=True))


# id(frozen settings or target) -> (the object, its canonical JSON). The runner hands out the same
# objects while the profile and overrides are unchanged, so this is a hit on almost every run.
_frozen: dict[int, tuple[object, bytes]] = {}


def _settings_json(settings: Any) -> bytes:
    return canonical_json(settings.hash_form())


def _target_json(target: Any) -> bytes:
    return canonical_json(target.hash_form())


def _frozen_bytes(obj: object, make: Callable[[Any], bytes]) -> bytes:
    found = _frozen.get(id(obj))
    if found is not None and found[0] is obj:
        return found[1]
    data = make(obj)
    with _lock:
        if len(_frozen) >= _SPEC_LIMIT:
            _frozen.clear()
        _frozen[id(obj)] = (obj, data)
    return data


def _plain(
    rendered: RenderedPrompt, request: LLMRequest, shown_system: str | None
) -> tuple[str, str]:
    prompt_form = {**rendered.hash_form(), "system": shown_system}
    return hash_json(prompt_form), hash_json(request.hash_form())


def prompt_and_request_hashes(
    rendered: RenderedPrompt,
    request: LLMRequest,
    schema_hash: str | None,
    *,
    shown_system: str | None,
) -> tuple[str, str]:
    """``(rendered_prompt_hash, request_hash)``. ``schema_hash`` (the output contract's) is
    accepted for callers that know it; the serialised spec is remembered per spec object. The prompt hash covers the
    system text as sent (``shown_system``, with any strategy instructions) and the messages: the
    prompt ``PreparedRun`` shows; the request hash covers the request as the runner built it."""
    if not _state["assemble"]:
        return _plain(rendered, request, shown_system)
    messages = canonical_json([m.hash_form() for m in request.messages])
    system = canonical_json(request.system)
    shown = system if shown_system == request.system else canonical_json(shown_system)
    prompt = b'{"messages":' + messages + b',"system":' + shown + b"}"
    settings = _frozen_bytes(request.settings, _settings_json)
    target = _frozen_bytes(request.target, _target_json)
    whole = b"".join(
        (
            b'{"messages":',
            messages,
            b',"settings":',
            settings,
            b',"structured_output":',
            _spec_bytes(request),
            b',"system":',
            system,
            b',"target":',
            target,
            b"}",
        )
    )
    hashes = hash_bytes(prompt), hash_bytes(whole)
    if not _state["checked"]:
        plain = _plain(rendered, request, shown_system)
        with _lock:
            _state["checked"] = True
            _state["assemble"] = plain == hashes
        return plain
    return hashes
