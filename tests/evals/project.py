"""A small project for the evals tests: prompts of each output format, offline profiles whose
answers pass, fail or alternate, judges that say yes, no or nothing, and a tests-file writer."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

CONTACT = """---
profile: good
artifacts:
  document: {required: true, media_type: "text/*"}
output:
  format: json_schema
  schema:
    type: object
    required: [name, email]
    additionalProperties: false
    properties:
      name: {type: string}
      email: {type: [string, "null"]}
      tags: {type: array, items: {type: string}}
---
## system
Extract the contact.

## user
{{ artifacts.document.text }}
"""

NOTE = """---
profile: note
inputs:
  type: object
  required: [topic]
  additionalProperties: false
  properties: {topic: {type: string}}
---
Write a note about {{ topic }}.
"""

GOOD: dict[str, Any] = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "tags": ["math", "engines"],
}
BAD: dict[str, Any] = {"name": "Charles", "email": None, "tags": []}


def fake(*responses: str, model: str = "offline") -> str:
    """A fake profile answering ``responses`` in turn (the last one repeating)."""
    quoted = "\n".join(f"    - {json.dumps(r)}" for r in responses)
    return f"provider: fake\nmodel: {model}\noptions:\n  responses:\n{quoted}\n"


def verdict(passed: bool, reason: str = "because") -> str:
    return json.dumps({"pass": passed, "reason": reason})


def make_project(root: Path, **extra_profiles: str) -> Path:
    """``prompts/contact`` (json_schema), ``prompts/note`` (text) and the profiles: ``good``,
    ``bad`` and ``flaky`` (good, bad, good, bad, ...) for contact; ``note``; judges ``judge-yes``,
    ``judge-no`` and ``judge-mute`` (no verdict)."""
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "ada.txt").write_text("Ada Lovelace, ada@example.com", "utf-8")
    (root / "prompts" / "contact.prompt.md").write_text(CONTACT, "utf-8")
    (root / "prompts" / "note.prompt.md").write_text(NOTE, "utf-8")
    profiles = {
        "good": fake(json.dumps(GOOD)),
        "bad": fake(json.dumps(BAD)),
        "flaky": fake(*[json.dumps(GOOD), json.dumps(BAD)] * 50),
        "note": fake("Deploys move to Tuesdays; the on-call rota has six people."),
        "judge-yes": fake(verdict(True, "it meets the rubric"), model="judge"),
        "judge-no": fake(verdict(False, "it names the wrong person"), model="judge"),
        "judge-mute": fake("I would rather not say.", model="judge"),
        **extra_profiles,
    }
    for name, text in profiles.items():
        (root / "profiles" / f"{name}.yaml").write_text(text, "utf-8")
    return root


def write_tests(root: Path, prompt_id: str, text: str) -> Path:
    """Write ``prompts/<prompt_id>.tests.yaml``."""
    path = root / "prompts" / f"{prompt_id}.tests.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), "utf-8")
    return path


def as_yaml(data: Any) -> str:
    """``data`` as YAML text (JSON is YAML)."""
    return json.dumps(data)
