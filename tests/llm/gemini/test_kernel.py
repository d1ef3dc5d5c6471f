"""``CC_LLM_PROVIDER=gemini``: the kernel's raw payloads through the real SDK against
FakeGeminiServer, the key and base URL read from the supervisor's environment by the provider's
own variables (the Gemini API needs a key, so the kernel offers it)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from scriptorium.kernel import EXIT_CONFIG, serve
from scriptorium.kernel.providers import PROVIDER_ENV, choose_provider
from scriptorium.llm.registry import default_registry
from scriptorium.testing import FakeGeminiServer

KEY = "AIza-kernel-canary-0123456789abcd"


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(default_text=None) as fake:
        yield fake


def _serve(env: dict[str, str], payload: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    out = io.BytesIO()
    stdin = json.dumps({"op": "init", "payload": payload}).encode() + b"\n"
    code = serve(io.BytesIO(stdin), out, env, pid=1)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_raw_payload_goes_to_gemini_with_the_key_and_base_url_variables(
    server: FakeGeminiServer,
) -> None:
    server.reply("Hello from the kernel.", thoughts="Greet back.", thoughts_tokens=3)
    env = {"CC_LLM_PROVIDER": "gemini", "GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": server.url}
    payload = {"model": "gemini-2.5-flash", "user": "hi", "reasoning": "low", "max_tokens": 4000}
    code, messages = _serve(env, payload)
    assert code == 0, messages
    (sent,) = server.requests
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["generationConfig"]["thinkingConfig"]["thinkingBudget"] > 0
    assert messages[-1]["summary"] == "Hello from the kernel."
    assert KEY not in json.dumps(messages)


def test_gemini_is_a_kernel_choice_and_its_key_variable_must_be_set() -> None:
    assert (
        choose_provider(
            {PROVIDER_ENV: "gemini", "GEMINI_API_KEY": KEY},
            prompt_run=False,
            registry=default_registry(),
        ).name
        == "gemini"
    )
    code, messages = _serve(
        {"CC_LLM_PROVIDER": "gemini"}, {"model": "gemini-2.5-flash", "user": "hi"}
    )
    assert code == EXIT_CONFIG
    error = messages[-1]["error"]
    assert (error["code"], error["env_var"]) == ("api_key_env_missing", "GEMINI_API_KEY")
    code, messages = _serve({"CC_LLM_PROVIDER": "nope"}, {"model": "m", "user": "hi"})
    assert code == EXIT_CONFIG
    assert "gemini" in messages[-1]["error"]["message"]
