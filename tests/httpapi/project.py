"""A project on disk that provokes every row of the HTTP status table for real, and a way to
call an app in-process (``httpx.ASGITransport``) that checks no answer ever holds the key."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from scriptorium.engine import Engine

#: The server's provider key: it must never appear in any answer, header or log line.
CANARY = "sk-ant-canary-9c1e5b7d3f"
KEY_ENV = "SCRIPTORIUM_HTTP_TEST_KEY"
MODEL = "claude-sonnet-4-6"

PROMPTS: dict[str, str] = {
    "greet": """---
description: Greets someone
version: 3
profile: offline
inputs:
  type: object
  required: [name]
  additionalProperties: false
  properties: {name: {type: string, minLength: 1}}
---
## system
You greet people.

## user
Hello {{ name }}!
""",
    "extract/contact": """---
description: Contact details as JSON
profile: offline-json
artifacts:
  document: {required: true, media_type: "text/*", max_bytes: 64}
output:
  format: json_schema
  schema: contact.schema.json
---
## user
{{ artifacts.document.text }}
""",
    "chatty": """---
profile: offline-prose
output: {format: json}
---
## user
Answer in JSON.
""",
    "undefined": """---
profile: offline
---
## user
Hello {{ who_is_never_given }}!
""",
    "unprofiled": """---
---
## user
Hello.
""",
    "no-schema": """---
profile: offline
output: {format: json_schema, schema: missing.schema.json}
---
## user
Hello.
""",
    "describe": """---
profile: claude
artifacts:
  scan: {required: true, media_type: image/png, max_bytes: 100000}
---
## user
Describe this image: {{ artifacts.scan.block }}
""",
    "hello": """---
profile: claude
inputs:
  type: object
  required: [name]
  properties: {name: {type: string}}
---
## user
Say hello to {{ name }}.
""",
}

CONTACT_SCHEMA = """{"type": "object", "required": ["name", "email"],
 "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
 "additionalProperties": false}"""

BROKEN_PROMPT = """---
profile: [this list never closes
---
## user
x
"""


def profiles(endpoint: str) -> dict[str, str]:
    """Every profile the tests use; ``endpoint`` is the loopback Anthropic server."""
    return {
        "offline": "provider: fake\nmodel: fake-1\noptions: {responses: ['Hello!']}\n",
        "offline-json": (
            "provider: fake\nmodel: fake-1\n"
            """options: {responses: ['{"name": "Ada", "email": "ada@example.com"}']}\n"""
        ),
        "offline-prose": "provider: fake\nmodel: fake-1\noptions: {responses: ['no JSON here']}\n",
        "claude": (
            f"provider: anthropic\nmodel: {MODEL}\nendpoint: {endpoint}\napi_key_env: {KEY_ENV}\n"
            "settings: {max_tokens: 64, max_retries: 0, timeout_s: 20}\n"
        ),
        "nokey": (
            f"provider: anthropic\nmodel: {MODEL}\nendpoint: {endpoint}\n"
            "api_key_env: SCRIPTORIUM_HTTP_TEST_UNSET_KEY\n"
        ),
        "keyless": f"provider: anthropic\nmodel: {MODEL}\nendpoint: {endpoint}\n",
        "tapeless": "provider: replay\nmodel: m\n",
        "broken": "provider: [never closed\n",
    }


def write_project(root: Path, endpoint: str) -> Path:
    """The prompts and profiles above under ``root`` (plus a broken prompt and profile)."""
    (root / "prompts" / "extract").mkdir(parents=True)
    (root / "profiles").mkdir()
    for prompt_id, text in PROMPTS.items():
        (root / "prompts" / f"{prompt_id}.prompt.md").write_text(text, encoding="utf-8")
    (root / "prompts" / "extract" / "contact.schema.json").write_text(CONTACT_SCHEMA, "utf-8")
    (root / "prompts" / "broken.prompt.md").write_text(BROKEN_PROMPT, encoding="utf-8")
    for name, text in profiles(endpoint).items():
        (root / "profiles" / f"{name}.yaml").write_text(text, encoding="utf-8")
    files = root / "files"
    files.mkdir()
    (files / "card.txt").write_text("Ada Lovelace, ada@example.com", encoding="utf-8")
    (files / "long.txt").write_text("x" * 200, encoding="utf-8")
    return root


def engine_for(root: Path, **kwargs: Any) -> Engine:
    """An Engine over the project whose key variable holds the canary."""
    return Engine(root, env={KEY_ENV: CANARY}, **kwargs)


def assert_no_canary(response: httpx.Response, *secrets: str) -> None:
    """Neither the server's key nor any given secret is in the body or a header."""
    for secret in (CANARY, *secrets):
        assert secret not in response.text
        for name, value in response.headers.items():
            assert secret not in f"{name}: {value}"


def call(
    app: Any,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """One request to ``app`` in-process, on a fresh event loop; the answer holds no key."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.request(method, url, headers=headers, **kwargs)

    response = asyncio.run(go())
    assert_no_canary(response)
    assert response.headers["x-request-id"]
    return response


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The ``error`` object of an error answer, checked for the fields every error has."""
    body = response.json()
    error: dict[str, Any] = body["error"]
    assert isinstance(error["code"], str)
    assert isinstance(error["message"], str)
    assert error["request_id"] == response.headers["x-request-id"]
    assert isinstance(error["retryable"], bool)
    assert "Traceback" not in response.text
    return error
