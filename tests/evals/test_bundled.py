"""Every bundled prompt has a tests file, and the bundled suite passes offline."""

from __future__ import annotations

from pathlib import Path

from scriptorium import Engine

REPO = Path(__file__).resolve().parents[2]


def test_every_bundled_prompt_has_tests_that_pass_offline() -> None:
    engine = Engine(REPO, env={})
    assert engine.project_view().tests is not None
    prompts = engine.list_prompts()
    assert prompts
    for prompt_id in prompts:
        assert (REPO / "prompts" / f"{prompt_id}.tests.yaml").is_file(), prompt_id
    report = engine.test()
    assert report.ok, [c.outcomes for c in report.all_cases() if c.status != "passed"]
    assert {g.prompt for g in report.groups} == set(prompts)
    assert report.cost_micro == 0
    kinds: set[str] = set()
    for prompt_id in prompts:
        for case in engine.project_view().tests.get(prompt_id).cases:  # type: ignore[union-attr]
            kinds |= case.expect.model_fields_set
    assert kinds >= {"valid", "value", "pointer", "contains", "not_contains", "regex", "judge"}


def test_the_bundled_project_checks_clean_with_its_tests() -> None:
    problems = Engine(REPO, env={}).check()
    assert [p for p in problems if p.severity == "error"] == []
