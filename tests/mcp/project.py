"""A small project for the MCP server's tests: prompts that use every argument kind the server
maps (typed inputs, an enum, a boolean, text and media artifacts, JSON outputs of both shapes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from scriptorium import Engine

GREET = """\
---
title: Greeting
description: Greet someone
profile: fake
inputs:
  type: object
  required: [name]
  additionalProperties: false
  properties:
    name: {type: string, description: "who to greet"}
    times: {type: integer, minimum: 1, maximum: 3}
    tone: {enum: [warm, formal, wry], description: "how it sounds"}
    shout: {type: boolean}
---
## system
You greet people{% if tone is defined %} in a {{ tone }} tone{% endif %}.

## user
Greet {{ name }}{% if times is defined %} {{ times }} times{% endif %}{% if shout is defined and shout %}, loudly{% endif %}.
"""

SUMMARY = """\
---
description: Summarize a text
profile: fake
artifacts:
  document: {required: true, media_type: "text/*", description: "the text to summarize"}
  scan: {required: false, media_type: "image/*"}
output:
  format: json_schema
  schema:
    type: object
    required: [summary]
    additionalProperties: false
    properties:
      summary: {type: string}
  repair_attempts: 0
---
## user
Summarize: {{ artifacts.document.text }}
"""

TAGS = """\
---
description: List tags
profile: fake
inputs:
  type: object
  properties:
    topic: {type: string}
output:
  format: json_schema
  schema:
    type: array
    items: {type: string}
---
## user
Tags for {{ topic }}.
"""

PROFILE = "provider: fake\nmodel: fake-model\n"


def write_project(root: Path, *, extra: dict[str, str] | None = None) -> Path:
    """The test project under ``root`` (``extra``: more prompt files, by relative path)."""
    prompts = root / "prompts"
    (prompts / "text").mkdir(parents=True)
    (root / "profiles").mkdir()
    (prompts / "greet.prompt.md").write_text(GREET)
    (prompts / "text" / "summary.prompt.md").write_text(SUMMARY)
    (prompts / "tags.prompt.md").write_text(TAGS)
    for name, text in (extra or {}).items():
        path = prompts / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "profiles" / "fake.yaml").write_text(PROFILE)
    (root / "profiles" / "other.yaml").write_text(PROFILE)
    return root


def engine_for(root: Path, client: Any, **options: Any) -> Engine:
    """An engine over the project whose every call goes to ``client``."""
    return Engine(root, client=client, **options)


def run_async(work: Any) -> Any:
    """``work()`` (a coroutine function) run to completion on a fresh loop."""
    return anyio.run(work)
