"""``FakeAzureOpenAIServer``: a loopback server speaking Azure OpenAI's routes, so the real
``AzureOpenAI`` client can be tested end to end with a fake key or Entra token.

    with FakeAzureOpenAIServer(deployments={"chat": "gpt-4o-2024-08-06"}) as server:
        server.reply("hello")
        client = openai.AzureOpenAI(azure_endpoint=server.url, azure_deployment="chat",
                                    api_version="2024-10-21", api_key="fake-key")
        server.requests[-1].path    # /openai/deployments/chat/chat/completions?api-version=...

``POST /openai/deployments/{deployment}/chat/completions?api-version=V`` answers as
``FakeOpenAIServer`` answers ``/v1/chat/completions`` (the same scripting: ``reply``,
``reply_tool``, ``fail``, ``fail_midstream``, ...), reporting the model the deployment serves
(``deployments``; the deployment's own name when it is not listed), as Azure does.
``POST /openai/responses?api-version=V`` is the Responses API (plain and streamed, the body's
``model`` naming the deployment). The Files and Batch API are served under ``/openai`` (``/openai/files``, ``/openai/batches``),
for batches of ``/chat/completions`` or ``/responses``. Every request must name an ``api-version`` (else a 404, as Azure answers)
and carry an ``api-key`` header or an ``Authorization: Bearer`` token (else a 401).

A stream opens as Azure's do, with a chunk of the prompt's content-filter results that names no
model (``"model": ""``) and no choice; ``filter_prompt()`` queues the 400 (``code:
content_filter``) Azure answers a prompt its filter blocked. A recorded answer
(:meth:`~scriptorium._testing.http.ScriptedHTTPServer.replay`) is sent as recorded.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from urllib.parse import parse_qs, urlsplit

from scriptorium._testing.http import Answer, RecordedRequest, sse
from scriptorium._testing.openai_batches import OpenAIBatchRoutes
from scriptorium._testing.openai_server import FakeOpenAIServer

__all__ = ["BATCH_ENDPOINT", "RESPONSES_BATCH_ENDPOINT", "FakeAzureOpenAIServer", "RecordedRequest"]

#: The endpoint an Azure batch and its rows name (Chat Completions, or the Responses API).
BATCH_ENDPOINT = "/chat/completions"
RESPONSES_BATCH_ENDPOINT = "/responses"
_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
#: The Responses API of a resource: the model (a deployment's name) is in the body.
_RESPONSES = "/openai/responses"
_SAFE = {"filtered": False, "severity": "safe"}
#: The chunk Azure opens a stream with: the prompt's filter results, an empty ``model``.
_FILTER_CHUNK = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [
        {
            "prompt_index": 0,
            "content_filter_results": {
                "hate": _SAFE,
                "self_harm": _SAFE,
                "sexual": _SAFE,
                "violence": _SAFE,
            },
        }
    ],
}


def _azure_error(status: int, code: str, message: str) -> Answer:
    return Answer.json({"error": {"code": code, "message": message}}, status)


class FakeAzureOpenAIServer(FakeOpenAIServer):
    """A scripted Azure OpenAI resource on ``127.0.0.1`` (see the module); ``url`` is the
    resource's endpoint (``azure_endpoint``, a profile's ``endpoint``)."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default_text: str | None = "ok",
        record: bool = True,
        deployments: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(latency_s=latency_s, default_text=default_text, record=record)
        #: Deployment name -> the model it serves (what answers report as ``model``).
        self.deployments = dict(deployments or {})
        self._azure_routes = OpenAIBatchRoutes(
            self.batches,
            prefix="/openai",
            endpoint=BATCH_ENDPOINT,
            also=(RESPONSES_BATCH_ENDPOINT,),
        )

    @property
    def url(self) -> str:
        """The resource's endpoint, ``http://127.0.0.1:<port>`` (the SDK adds ``/openai``)."""
        return self.base_url

    def scripted(self, path: str) -> bool:
        """``/openai/deployments/{deployment}/chat/completions`` and ``/openai/responses``."""
        return _CHAT.match(path) is not None or path.rstrip("/") == _RESPONSES

    def _refusal(self, request: RecordedRequest) -> Answer | None:
        query = parse_qs(urlsplit(request.path).query)
        if not query.get("api-version"):
            return _azure_error(404, "404", "Resource not found")
        headers = request.headers
        if not headers.get("api-key") and not headers.get("authorization", "").startswith(
            "Bearer "
        ):
            return _azure_error(
                401, "401", "Access denied due to invalid subscription key or wrong API endpoint."
            )
        return None

    def deliver(self, request: RecordedRequest, answer: Answer) -> Answer:
        """Refuses what Azure refuses (no api-version, no credential); otherwise the answer,
        its ``model`` the one the deployment serves."""
        refused = self._refusal(request)
        if refused is not None:
            return refused
        if answer.recorded or answer.parts is None or answer.content_type != "text/event-stream":
            return answer
        # Azure's first chunk of every stream: the prompt's content-filter results, naming no
        # model and no choice (what an adapter must not take for the stream's model).
        return dataclasses.replace(answer, parts=((0.0, sse(None, _FILTER_CHUNK)), *answer.parts))

    def filter_prompt(self, *, delay_s: float = 0.0) -> None:
        """Queue Azure's refusal of a prompt its content filter blocked before generating: a
        400 whose error ``code`` is ``content_filter``, with the filter's results."""
        body = {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        "hate": {"filtered": False, "severity": "safe"},
                        "jailbreak": {"filtered": False, "detected": False},
                        "self_harm": {"filtered": False, "severity": "safe"},
                        "sexual": {"filtered": False, "severity": "safe"},
                        "violence": {"filtered": True, "severity": "high"},
                    },
                },
            }
        }
        self.reply_json(body, status=400, delay_s=delay_s)

    def reported_model(self, request: RecordedRequest) -> str:
        """What an answer reports as ``model``: the model the deployment serves (the one the
        path names, or for a batch row its body's ``model``), as Azure does."""
        found = _CHAT.match(urlsplit(request.path).path)
        name = found.group("deployment") if found is not None else super().reported_model(request)
        return self.deployments.get(name, name)

    def route(self, request: RecordedRequest) -> Answer | None:
        """The Files and Batch API under ``/openai`` (no input-token count: Azure has none)."""
        path = urlsplit(request.path).path
        if not path.startswith(("/openai/files", "/openai/batches")):
            return None
        return self._refusal(request) or self._azure_routes.answer(request)

    def clear(self) -> None:
        """Forget the script, the requests, every batch and file."""
        super().clear()
        self._azure_routes.clear()
