"""No raw ``RecursionError`` from what a user writes: fallback chains of any depth are walked
without recursion (past :data:`MAX_CHAIN` they are refused naming the limit, and ``check`` stays
linear), and a ``--baseline`` nested too deeply is a clear usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.cli import main
from scriptorium.errors import InvalidRequestError, ProfileLoadError
from scriptorium.evals.baseline import read_baseline
from scriptorium.profile.chain import MAX_CHAIN, fallback_chain
from scriptorium.profile.memory import MemoryRepository


def _line(length: int, *, back_to: int | None = None) -> MemoryRepository:
    """Profiles ``q0`` -> ``q1`` -> ... -> ``q<length>``; the last one falls back to
    ``q<back_to>`` when given."""
    profiles: dict[str, object] = {}
    for n in range(length + 1):
        after = [f"q{n + 1}"] if n < length else ([] if back_to is None else [f"q{back_to}"])
        profiles[f"q{n}"] = {"provider": "fake", "fallback": after}
    return MemoryRepository(profiles)  # type: ignore[arg-type]


def test_a_chain_at_the_limit_loads_in_order() -> None:
    repository = _line(MAX_CHAIN)
    chain = fallback_chain(repository.get("q0"), repository.get)
    assert [p.name for p in chain] == [f"q{n}" for n in range(1, MAX_CHAIN + 1)]


@pytest.mark.parametrize("length", [MAX_CHAIN + 1, 3 * MAX_CHAIN, 5000])
def test_a_chain_past_the_limit_is_refused_naming_it(length: int) -> None:
    repository = _line(length)
    with pytest.raises(ProfileLoadError, match=f"more than {MAX_CHAIN} profiles") as caught:
        fallback_chain(repository.get("q0"), repository.get)
    assert (caught.value.profile, caught.value.reason) == ("q0", "invalid")


def test_a_loop_deep_in_a_long_chain_is_named() -> None:
    repository = _line(MAX_CHAIN - 5, back_to=40)
    with pytest.raises(ProfileLoadError, match=r"loops \(q0 -> q1 -> .* -> q40\)"):
        fallback_chain(repository.get("q0"), repository.get)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([f"n{i}" for i in range(8)]),
        st.lists(st.sampled_from([f"n{i}" for i in range(8)]), max_size=3, unique=True),
        min_size=8,
        max_size=8,
    )
)
def test_the_walk_matches_a_recursive_reading_of_the_rule(graph: dict[str, list[str]]) -> None:
    """Depth first, each profile once where first reached, a loop on the current path refused."""
    repository = MemoryRepository(
        {name: {"provider": "fake", "fallback": after} for name, after in graph.items()}
    )
    order: list[str] = []
    seen = {"n0"}

    def visit(name: str, path: tuple[str, ...]) -> bool:
        for after in graph[name]:
            if after in path:
                return False
            if after in seen:
                continue
            seen.add(after)
            order.append(after)
            if not visit(after, (*path, after)):
                return False
        return True

    if visit("n0", ("n0",)):
        chain = fallback_chain(repository.get("n0"), repository.get)
        assert [p.name for p in chain] == order
    else:
        with pytest.raises(ProfileLoadError, match="loops"):
            fallback_chain(repository.get("n0"), repository.get)


def test_check_and_run_over_a_long_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "p.prompt.md").write_text("---\nprofile: c0\n---\nhi\n")
    count = 3 * MAX_CHAIN
    for n in range(count):
        after = f"fallback: [c{n + 1}]\n" if n < count - 1 else ""
        (tmp_path / "profiles" / f"c{n}.yaml").write_text(
            f"provider: fake\noptions: {{responses: [ok]}}\n{after}"
        )
    assert main(["check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err + capsys.readouterr().out
    assert "internal" not in err
    assert "RecursionError" not in err
    assert main(["run", "p", "--root", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert f"more than {MAX_CHAIN} profiles" in err
    assert "YAML" not in err


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_a_deeply_nested_baseline_is_a_usage_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "old.json"
    path.write_text('{"groups": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(InvalidRequestError, match="nested too deeply") as caught:
        read_baseline(path)
    assert caught.value.field == "baseline"


def test_a_deep_baseline_through_the_cli_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "p.prompt.md").write_text("---\nprofile: f\n---\nhi\n")
    (tmp_path / "prompts" / "p.tests.yaml").write_text("cases: [{name: one}]\n")
    (tmp_path / "profiles" / "f.yaml").write_text("provider: fake\noptions: {responses: [ok]}\n")
    deep = tmp_path / "old.json"
    deep.write_text(json.dumps({"x": 1})[:-1] + ', "y": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert main(["test", "--root", str(tmp_path), "--baseline", str(deep)]) == 2
    assert "nested too deeply" in capsys.readouterr().err
