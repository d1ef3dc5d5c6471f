"""A connection that fails names the endpoint it tried (scheme, host, port), through each real
SDK, never the key, the path or a query string."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest, errors
from scriptorium.profile.model import endpoint_origin

KEY = "sk-connection-test-key-0001"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("provider", "path"), [("anthropic", ""), ("openai", "/v1"), ("gemini", "")]
)
def test_a_refused_connection_names_the_endpoint(tmp_path: Path, provider: str, path: str) -> None:
    port = _closed_port()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hi.prompt.md").write_text("---\nprofile: p\n---\nHello\n")
    (tmp_path / "profiles" / "p.yaml").write_text(
        f"provider: {provider}\nmodel: m-1\nendpoint: http://127.0.0.1:{port}{path}\n"
        "api_key_env: K\nsettings: {max_retries: 0, timeout_s: 5}\n"
    )
    with pytest.raises(errors.LLMGenerateError) as caught:
        Engine(tmp_path, env={"K": KEY}).run(RunRequest(prompt_id="hi"))
    assert caught.value.reason == "connection"
    assert f"http://127.0.0.1:{port}" in caught.value.message
    assert KEY not in str(caught.value.to_dict())


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://api.example.com/v1?key=sk-secret-in-query", "https://api.example.com:443"),
        ("http://localhost:11434/v1", "http://localhost:11434"),
        ("http://[::1]:8000/v1#frag", "http://[::1]:8000"),
        ("https://user:pass@host.example/x", "https://host.example:443"),
    ],
)
def test_the_origin_shown_has_no_path_query_or_user(url: str, origin: str) -> None:
    assert endpoint_origin(url) == origin
