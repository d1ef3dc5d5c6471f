"""The provider-batch job tells an injected step hook each step it reaches (the crash tests kill the
process there); it reads no environment, and without a hook it calls nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.batch.job import CRASH_ENV
from scriptorium.llm.retry import RetryHooks
from tests.batch_project import KEY, KEY_ENV, label_text, make_project


def _requests(*texts: str) -> list[RunRequest]:
    return [RunRequest(prompt_id="label", inputs={"text": t}) for t in texts]


def test_the_job_reports_each_step_to_its_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The variable names a step, but only the command reads it: the job must not.
    monkeypatch.setenv(CRASH_ENV, "before-submit")
    with FakeAnthropicServer() as server:
        server.batches.text = label_text
        root = make_project(tmp_path, "anthropic", server.url)
        engine = Engine(root, env={KEY_ENV: KEY}, retry_hooks=RetryHooks(sleep=lambda s: None))
        steps: list[str] = []
        job = engine.submit_batch(_requests("a", "b"), on_step=steps.append)
        # Submitting also polls once: the fake keeps a new batch running for one poll.
        assert steps == ["before-submit", "after-submit", "in-progress"]
        job.wait(poll_s=0.01)
        resumed = engine.resume_batch(job.state, on_step=steps.append)
        assert len(resumed.results()) == 2


def test_without_a_hook_the_job_runs_as_before(tmp_path: Path) -> None:
    with FakeAnthropicServer() as server:
        server.batches.text = label_text
        root = make_project(tmp_path, "anthropic", server.url)
        engine = Engine(root, env={KEY_ENV: KEY}, retry_hooks=RetryHooks(sleep=lambda s: None))
        job = engine.submit_batch(_requests("a"))
        assert len(job.wait(poll_s=0.01).results()) == 1
