"""A project whose profile points at a loopback fake provider, for the provider-batch tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROMPT = """---
profile: {profile}
inputs: {{type: object, required: [text], properties: {{text: {{type: string}}}}}}
output:
  format: json_schema
  schema: {{type: object, required: [label], properties: {{label: {{type: string}}}}}}
---
Label this text: {{{{ text }}}}
"""

MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}
KEY_ENV = "BATCH_TEST_KEY"
KEY = "sk-batch-test-secret-value"


def make_project(root: Path, provider: str, url: str) -> Path:
    """``prompts/label`` (JSON-schema output) and ``profiles/p`` on ``provider`` at ``url``."""
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "label.prompt.md").write_text(PROMPT.format(profile="p"), "utf-8")
    (root / "profiles" / "p.yaml").write_text(
        f"provider: {provider}\nmodel: {MODELS[provider]}\nendpoint: {url}\n"
        f"api_key_env: {KEY_ENV}\nsettings: {{max_tokens: 64}}\n",
        "utf-8",
    )
    return root


def label_text(custom_id: str, body: Any) -> str:
    """What the fake answers each row: a label derived from the row's text (valid output),
    or a broken value for texts containing ``INVALID``."""
    if "INVALID" in json.dumps(body):
        return "not json"
    return json.dumps({"label": f"label-{custom_id[:8]}"})


def flagged(word: str) -> Any:
    """A row matcher: rows whose body mentions ``word``."""
    return lambda custom_id, body: word in json.dumps(body)
