"""``FakeVertexServer``: a loopback server speaking Google Vertex AI's routes for Claude, so the
real ``AnthropicVertex`` client can be tested end to end with a fake access token.

    with FakeVertexServer() as server:
        server.reply("hello")
        client = anthropic.AnthropicVertex(region="us-east5", project_id="p",
                                           access_token="fake-token", base_url=server.url + "/v1")
        server.requests[-1].path   # /v1/projects/p/locations/us-east5/publishers/anthropic/models/<m>:rawPredict

``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
answers a Messages API body, ``:streamRawPredict`` (with ``"stream": true`` in the body, as the SDK
sends it) the same reply as server-sent events; ``.../models/count-tokens:rawPredict`` counts, as
``FakeAnthropicServer``'s counting route does (``count_tokens``, ``count_tokens_status``). The
scripting is ``FakeAnthropicServer``'s; ``fail_google(status)`` sends an error in Google's own
shape (``{"error": {"code", "message", "status"}}``), which Vertex answers for what it refuses
itself (a quota, a permission), while ``fail`` keeps Anthropic's (what the model's service says
through Vertex). A request without an ``Authorization: Bearer`` header is refused with a 401.
``url`` is the root: a profile's ``endpoint`` (the adapter adds ``/v1`` for the SDK class).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from scriptorium._testing.anthropic_server import FakeAnthropicServer

# Vertex AI answers errors as every Google API does, Claude's routes included.
from scriptorium._testing.gemini_server import error_body
from scriptorium._testing.http import Answer, RecordedRequest

__all__ = ["FakeVertexServer", "RecordedRequest"]

_MODEL_PATH = (
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)"
    r"/publishers/anthropic/models/(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)$"
)
_PREDICT = re.compile(_MODEL_PATH)


class FakeVertexServer(FakeAnthropicServer):
    """A scripted Vertex AI for Claude on ``127.0.0.1`` (see the module)."""

    def scripted(self, path: str) -> bool:
        """The models' ``:rawPredict`` and ``:streamRawPredict`` (not the counting model)."""
        found = _PREDICT.match(path)
        return found is not None and found.group("model") != "count-tokens"

    def deliver(self, request: RecordedRequest, answer: Answer) -> Answer:
        """Refuses a request without a bearer token, as Google does."""
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return Answer.json(
                error_body(401, "Request is missing required authentication credential."), 401
            )
        return answer

    def not_found(self, request: RecordedRequest) -> Answer:
        """The counting model's ``:rawPredict``; a Google-shaped 404 for any other path."""
        found = _PREDICT.match(request.path.split("?")[0])
        if found is not None and found.group("model") == "count-tokens":
            with self._lock:
                self.count_requests.append(request)
            return self.count_tokens_answer(request)
        return Answer.json(error_body(404, f"no route {request.path}"), 404)

    def fail_google(
        self,
        status: int,
        *,
        message: str = "scripted failure",
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error in Google's shape (Vertex's own refusals: quota, permission, ...)."""
        self.reply_json(
            error_body(status, message), status=status, headers=headers, delay_s=delay_s
        )
