"""Cooldown across the workers of a Ray job, on a real local cluster: the job's limiter actor holds
the table, so a profile one worker found busy is skipped by every worker's later rows, not only by
the worker that was told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.batch.ray import RayExecutor
from scriptorium.limits.ray import ActorLimiter, start_limiter
from scriptorium.testing import FakeAnthropicServer
from scriptorium.usecase.model import RunResult
from tests.conftest import RAY_KEY_ENV
from tests.executor_support import MODEL, EchoServer

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.usefixtures("ray_cluster"), pytest.mark.slow]

PROMPT = "---\nprofile: primary\n---\nSay hello to {{ name }}.\n"


def test_the_limiter_actor_is_one_cooldown_table_for_every_handle() -> None:
    actor = start_limiter(ray, {}, 60.0, None)
    one, other = ActorLimiter(actor, frozenset()), ActorLimiter(actor, frozenset())
    assert other.remaining("primary") == 0.0
    one.cool("primary", 30.0)
    assert 29.0 < other.remaining("primary") <= 30.0
    assert other.remaining("backup") == 0.0


def _profile(endpoint: str, **extra: object) -> str:
    settings = {"max_tokens": 64, "max_retries": 0}
    profile = {"provider": "anthropic", "model": MODEL, "endpoint": endpoint, **extra}
    return json.dumps({**profile, "api_key_env": RAY_KEY_ENV, "settings": settings})


def test_a_busy_profile_is_skipped_by_every_worker_of_the_job(tmp_path: Path) -> None:
    rows = 10
    with FakeAnthropicServer(default_text="from the primary") as primary, EchoServer() as backup:
        primary.fail(529, headers={"retry-after": "60"})  # the first request to arrive only
        (tmp_path / "prompts").mkdir()
        (tmp_path / "profiles").mkdir()
        (tmp_path / "prompts" / "hello.prompt.md").write_text(PROMPT, "utf-8")
        (tmp_path / "profiles" / "primary.yaml").write_text(
            _profile(primary.url, fallback=["backup"]), "utf-8"
        )
        (tmp_path / "profiles" / "backup.yaml").write_text(_profile(backup.url), "utf-8")
        requests = [RunRequest(prompt_id="hello", inputs={"name": f"n{i}"}) for i in range(rows)]
        executor = RayExecutor(workers=2)
        results = Engine(tmp_path).run_many(requests, concurrency=2, executor=executor)
        asked_primary = len(primary.requests)
    assert all(isinstance(r, RunResult) for r in results)
    done = [r for r in results if isinstance(r, RunResult)]
    [busy] = [r for r in done if r.fallbacks and r.fallbacks[0].reason == "overloaded"]
    # The busy run told the job's table before it ended, so every run that started after it
    # ended, on whichever worker, skipped the profile without asking it. (Runs that overlapped
    # it may have asked the profile: how many depends on how the two workers were scheduled.)
    later = [r for r in done if r.started_at > busy.finished_at]
    assert later, "no run started after the busy one ended"
    assert all([f.reason for f in r.fallbacks] == ["cooldown"] for r in later)
    assert all(r.prepared.profile == "backup" for r in later)
    assert all(r.output.text.startswith("echo: ") for r in later)
    by_primary = [r for r in done if r.prepared.profile == "primary"]
    assert asked_primary == len(by_primary) + 1
