"""Local model servers and their keys, met through the real SDK: loopback stand-ins of Ollama,
vLLM, llama.cpp's server and LM Studio, each answering as its documentation says about keys.

- Ollama and LM Studio ignore the key (their docs use ``ollama`` / ``lm-studio`` as placeholders).
- vLLM and llama.cpp's server take none unless started with ``--api-key``; then every request must
  carry exactly that key as a bearer token (401 otherwise). vLLM's docs use ``EMPTY``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest, errors
from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium._testing.openai_server import FakeOpenAIServer


class LocalServer(FakeOpenAIServer):
    """A Chat Completions server that, like vLLM or llama.cpp started with ``--api-key``, refuses
    any request without that bearer key; ``required_key=None`` ignores keys like Ollama."""

    def __init__(self, required_key: str | None = None) -> None:
        super().__init__()
        self.required_key = required_key

    def default_answer(self, request: RecordedRequest) -> Answer:
        sent = request.headers.get("authorization")
        if self.required_key is not None and sent != f"Bearer {self.required_key}":
            return Answer.json({"error": {"message": "Unauthorized"}}, status=401)
        return super().default_answer(request)


# (server, the key its docs use as a placeholder, the key it was started with or None)
SERVERS = [
    ("ollama", "ollama", None),
    ("vllm", "EMPTY", None),
    ("vllm-with-key", "EMPTY", "EMPTY"),
    ("llamacpp", "none", None),
    ("llamacpp-with-key", "sk-no-key-required", "sk-no-key-required"),
    ("lmstudio", "lm-studio", None),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, LocalServer]]:
    made = {name: LocalServer(required) for name, _, required in SERVERS}
    for server in made.values():
        server.__enter__()
    try:
        yield made
    finally:
        for server in made.values():
            server.__exit__(None, None, None)


def _project(root: Path, url: str, key_env: str | None) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("---\nprofile: local\n---\nHello!\n")
    named = f"api_key_env: {key_env}\n" if key_env else ""
    (root / "profiles" / "local.yaml").write_text(
        f"provider: openai\nmodel: llama3.2\nendpoint: {url}\n{named}"
    )
    return root


@pytest.mark.parametrize(("name", "placeholder", "required"), SERVERS, ids=[s[0] for s in SERVERS])
def test_a_placeholder_key_works_against_each_local_server(
    servers: dict[str, LocalServer],
    tmp_path: Path,
    name: str,
    placeholder: str,
    required: str | None,
) -> None:
    """The placeholder each server documents is a key like any other: sent as given."""
    server = servers[name]
    root = _project(tmp_path, server.url, "LOCAL_LLM_API_KEY")
    result = Engine(root, env={"LOCAL_LLM_API_KEY": placeholder}).run(RunRequest(prompt_id="hi"))
    assert result.output.text == "ok"
    assert server.requests[-1].headers["authorization"] == f"Bearer {placeholder}"


@pytest.mark.parametrize("name", ["ollama", "vllm", "llamacpp", "lmstudio"])
def test_a_local_profile_naming_no_key_sends_none(
    servers: dict[str, LocalServer], tmp_path: Path, name: str
) -> None:
    """No ``api_key_env`` on a loopback endpoint: no key is sent (no ``Authorization`` at all),
    even with ``OPENAI_API_KEY`` set: a profile with its own endpoint names its variable."""
    server = servers[name]
    root = _project(tmp_path, server.url, None)
    engine = Engine(root, env={"OPENAI_API_KEY": "sk-real-openai-key-must-stay-home"})
    assert engine.run(RunRequest(prompt_id="hi")).output.text == "ok"
    assert "authorization" not in server.requests[-1].headers
    prepared = engine.prepare(RunRequest(prompt_id="hi"))
    assert prepared.target.api_key_source is None


def test_a_server_started_with_a_key_refuses_a_profile_naming_none(
    servers: dict[str, LocalServer], tmp_path: Path
) -> None:
    """vLLM with ``--api-key``: sending nothing is the server's 401, an auth failure, not ours."""
    server = servers["vllm-with-key"]
    root = _project(tmp_path, server.url, None)
    with pytest.raises(errors.LLMGenerateError) as caught:
        Engine(root, env={}).run(RunRequest(prompt_id="hi"))
    assert caught.value.reason == "auth"


def test_a_public_endpoint_naming_no_key_is_refused_before_any_call(tmp_path: Path) -> None:
    root = _project(tmp_path, "https://gateway.example.com/v1", None)
    with pytest.raises(errors.APIKeyRequiredError) as caught:
        Engine(root, env={"OPENAI_API_KEY": "sk-real-openai-key-must-stay-home"}).prepare(
            RunRequest(prompt_id="hi")
        )
    assert "api_key_env" in caught.value.message
