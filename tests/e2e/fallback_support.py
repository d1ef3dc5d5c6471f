"""A project on disk whose profiles fall back through three loopback servers (two Anthropic, one
OpenAI), reached through the real SDKs: what the fallback tests of every entry point share."""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scriptorium.testing import FakeAnthropicServer, FakeOpenAIServer

#: The key variables of the three profiles, and their (fake) values.
KEYS = {
    "FALLBACK_TEST_PRIMARY_KEY": "sk-ant-primary-key-0a1b2c3d",
    "FALLBACK_TEST_BACKUP_KEY": "sk-ant-backup-key-4e5f6a7b",
    "FALLBACK_TEST_GPT_KEY": "sk-openai-gpt-key-8c9d0e1f",
}
PRIMARY_MODEL = "claude-sonnet-4-5"
BACKUP_MODEL = "claude-haiku-4-5"
GPT_MODEL = "gpt-4.1-mini"
#: USD per million tokens, per profile: round numbers, so each cost is checked by hand.
PRICES = {"primary": (3, 15), "backup": (1, 5), "gpt": (2, 8)}

PROMPTS = {
    "hello": """---
profile: primary
inputs: {type: object, properties: {name: {type: string}}}
---
Say hello to {{ name | default("you") }}.
""",
    "contact": """---
profile: picky
output:
  format: json_schema
  schema: {type: object, required: [name], properties: {name: {type: string}}}
  repair_attempts: 1
---
Who is it?
""",
}


def cost(profile: str, input_tokens: int, output_tokens: int) -> int:
    """The micro-USD a generation of ``profile`` costs (its prices are whole USD per million)."""
    price_in, price_out = PRICES[profile]
    return input_tokens * price_in + output_tokens * price_out


def _anthropic(url: str, model: str, key_env: str, prices: tuple[int, int]) -> dict[str, Any]:
    return {
        "provider": "anthropic",
        "model": model,
        "endpoint": url,
        "api_key_env": key_env,
        "settings": {"max_tokens": 64, "max_retries": 0, "timeout_s": 20},
        "pricing": {"input": prices[0], "output": prices[1]},
    }


def profiles(primary: str, backup: str, gpt: str) -> dict[str, dict[str, Any]]:
    """The chain primary -> backup -> gpt, and picky (invalid_output) -> backup."""
    first = _anthropic(primary, PRIMARY_MODEL, "FALLBACK_TEST_PRIMARY_KEY", PRICES["primary"])
    return {
        "primary": {**first, "fallback": ["backup", "gpt"]},
        "backup": _anthropic(backup, BACKUP_MODEL, "FALLBACK_TEST_BACKUP_KEY", PRICES["backup"]),
        "gpt": {
            "provider": "openai",
            "model": GPT_MODEL,
            "endpoint": gpt,
            "api_key_env": "FALLBACK_TEST_GPT_KEY",
            "settings": {"max_tokens": 64, "max_retries": 0, "timeout_s": 20},
            "pricing": {"input": PRICES["gpt"][0], "output": PRICES["gpt"][1]},
        },
        "picky": {**first, "fallback": ["backup"], "fallback_on": ["invalid_output"]},
    }


def write_project(root: Path, primary: str, backup: str, gpt: str) -> Path:
    """The prompts and profiles under ``root``."""
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "profiles").mkdir(parents=True, exist_ok=True)
    for prompt_id, text in PROMPTS.items():
        (root / "prompts" / f"{prompt_id}.prompt.md").write_text(text, encoding="utf-8")
    for name, profile in profiles(primary, backup, gpt).items():
        (root / "profiles" / f"{name}.yaml").write_text(json.dumps(profile), encoding="utf-8")
    return root


@dataclass
class Servers:
    """The three loopback servers and the project pointing at them."""

    primary: FakeAnthropicServer
    backup: FakeAnthropicServer
    gpt: FakeOpenAIServer
    root: Path

    def reset(self) -> None:
        for server in (self.primary, self.backup, self.gpt):
            server.reset()

    def calls(self) -> tuple[int, int, int]:
        """How many generation requests each server was sent."""
        return (len(self.primary.requests), len(self.backup.requests), len(self.gpt.requests))


@contextmanager
def servers(root: Path, **primary: Any) -> Iterator[Servers]:
    """The servers running (``primary``: the first server's options) and the project written."""
    with ExitStack() as stack:
        first = stack.enter_context(FakeAnthropicServer(**primary))
        backup = stack.enter_context(FakeAnthropicServer())
        gpt = stack.enter_context(FakeOpenAIServer())
        yield Servers(first, backup, gpt, write_project(root, first.url, backup.url, gpt.url))


def keys(**extra: str) -> Mapping[str, str]:
    """The key variables, and ``extra``."""
    return {**KEYS, **extra}


def drop_engines() -> None:
    """Collect the engines a test dropped, quietly: each holds SDK clients whose pooled loopback
    connections are left to the garbage collector (which warns about every open socket), and a
    later test must not be failed by a collection that happens to run during it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
