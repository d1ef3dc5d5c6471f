"""``scriptorium optimize`` offline, end to end: marked regions only, a deterministic split, the
optimiser's proposals evaluated on train and held-out, acceptance only by the paired test with
no ``must_pass`` regression, the budget, the prompt file never written, reproducibility."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium.cli import main
from scriptorium.errors import InvalidRequestError
from scriptorium.evals.optimize import OptimizeReport, split_cases
from scriptorium.evals.regions import find_regions, replace_regions
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.testing import FakeClient

SHOUT = """---
profile: fast
inputs:
  type: object
  required: [word]
  properties: {word: {type: string}}
---
## system
You repeat a word.
{# optimize #}
Repeat it as it is.
{# /optimize #}

## user
{{ word }}
"""

WORDS = ["apple", "brick", "cloud", "delta", "ember", "frost", "grape", "haven", "ivory", "jolly"]


def _project(tmp_path: Path, prompt: str = SHOUT, *, repeat: int = 2, must: str = "") -> Path:
    (tmp_path / "prompts").mkdir(parents=True)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "fast.yaml").write_text("provider: fake\nmodel: offline\n")
    (tmp_path / "prompts" / "shout.prompt.md").write_text(prompt)
    cases = "".join(
        f"  - name: {w}\n    inputs: {{word: {w}}}\n    expect: {{contains: {w.upper()}}}\n"
        + ("    must_pass: true\n" if w == must else "")
        for w in WORDS
    )
    (tmp_path / "prompts" / "shout.tests.yaml").write_text(f"repeat: {repeat}\ncases:\n{cases}")
    return tmp_path


def _system(request: LLMRequest) -> str:
    return request.system or ""


def _model(proposals: list[str], *, cost: int = 0) -> FakeClient:
    """A scripted model: the optimiser's request gets the next proposal; a case's request
    answers its word in capitals when the system text asks for capitals, else as it is."""
    queue = list(proposals)

    def answer(request: LLMRequest) -> LLMResponse:
        user = str(request.messages[-1].content)
        if "You improve a prompt template" in _system(request):
            text = json.dumps(
                {"regions": [queue.pop(0) if queue else "\nSame.\n"], "rationale": "x"}
            )
        elif "CAPITALS" in _system(request):
            text = user.strip().upper()
        else:
            text = user.strip()
        usage = Usage(input_tokens=10, output_tokens=5, cost_micro=cost)
        return LLMResponse(text=text, model="offline", finish_reason="stop", usage=usage)

    return FakeClient([answer])


def test_a_better_candidate_is_accepted_and_written_beside_the_prompt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before = (root / "prompts" / "shout.prompt.md").read_text()
    report = Engine(root, client=_model(["\nRepeat it in CAPITALS.\n"])).optimize("shout", seed=1)
    assert report.ok
    assert report.accepted == 1
    (candidate,) = [c for c in report.candidates if c.number == 1]
    assert candidate.accepted
    assert candidate.p_value is not None
    assert candidate.p_value < 0.05
    assert candidate.gained == 2 * len(report.holdout_cases)
    assert candidate.lost == 0
    assert (root / "prompts" / "shout.prompt.md").read_text() == before  # never overwritten
    written = (root / "prompts" / "shout.optimized.md").read_text()
    assert "Repeat it in CAPITALS." in written
    assert written.replace("Repeat it in CAPITALS.", "Repeat it as it is.") == before
    assert report.out == "prompts/shout.optimized.md"
    assert report.diff is not None
    assert "+Repeat it in CAPITALS." in report.diff
    assert "-Repeat it as it is." in report.diff


def test_an_optimiser_that_proposes_nothing_better_is_honestly_rejected(tmp_path: Path) -> None:
    root = _project(tmp_path)
    engine = Engine(root, client=_model(["\nRepeat it carefully.\n", "\nRepeat it as it is.\n"]))
    report = engine.optimize("shout", max_candidates=2)
    assert not report.ok
    assert report.accepted is None
    assert report.out is None
    assert [c.note for c in report.candidates] == [
        "not better on train than the seed",
        "the same text as the prompt: nothing to try",
    ]
    assert "no candidate beat the seed" in report.message
    assert not (root / "prompts" / "shout.optimized.md").exists()


def test_too_few_pairs_on_held_out_cannot_be_significant(tmp_path: Path) -> None:
    """Three held-out cases run once give three pairs at most: p = 1/8, never accepted."""
    root = _project(tmp_path, repeat=1)
    report = Engine(root, client=_model(["\nRepeat it in CAPITALS.\n"])).optimize(
        "shout", max_candidates=1
    )
    (candidate,) = report.candidates
    assert (candidate.gained, candidate.lost) == (3, 0)
    assert candidate.p_value == pytest.approx(0.125)
    assert not report.ok


def test_a_must_pass_case_that_fails_blocks_acceptance(tmp_path: Path) -> None:
    """``brick`` must pass; a candidate that capitalises everything but ``brick`` is refused."""
    root = _project(tmp_path, must="brick")
    (root / "prompts" / "shout.tests.yaml").write_text(
        (root / "prompts" / "shout.tests.yaml")
        .read_text()
        .replace("expect: {contains: BRICK}", "expect: {contains: brick}")
    )
    report = Engine(root, client=_model(["\nRepeat it in CAPITALS.\n"])).optimize(
        "shout", max_candidates=1
    )
    (candidate,) = report.candidates
    assert candidate.must_pass_failed == ("brick",)
    assert not candidate.accepted
    assert not report.ok


def test_the_budget_stops_the_loop_before_a_step_that_would_pass_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    client = _model(["\nRepeat it loudly.\n"] * 5, cost=100)
    report = Engine(root, client=client).optimize("shout", max_candidates=5, budget_micro=2_500)
    assert report.stopped == "budget"
    assert report.cost_micro <= 2_500
    assert report.cost_micro == client.calls * 100  # every run counted, the optimiser's too


def test_the_same_seed_gives_the_same_report(tmp_path: Path) -> None:
    first = Engine(_project(tmp_path / "a"), client=_model(["\nRepeat it loudly.\n"])).optimize(
        "shout", seed=7
    )
    second = Engine(_project(tmp_path / "b"), client=_model(["\nRepeat it loudly.\n"])).optimize(
        "shout", seed=7
    )
    assert first.model_dump_json() == second.model_dump_json()


def test_refusals_cost_nothing(tmp_path: Path) -> None:
    """No marked region, too few cases to hold out three, an --out that exists: refused before
    any call (the empty FakeClient raises on a call)."""
    root = _project(
        tmp_path, prompt=SHOUT.replace("{# optimize #}", "").replace("{# /optimize #}", "")
    )
    with pytest.raises(InvalidRequestError, match="no marked region"):
        Engine(root, client=FakeClient()).optimize("shout")
    (root / "prompts" / "shout.prompt.md").write_text(SHOUT)
    with pytest.raises(InvalidRequestError, match="hold"):
        Engine(root, client=FakeClient()).optimize("shout", holdout=0.2)
    taken = root / "mine.md"
    taken.write_text("my notes")
    with pytest.raises(InvalidRequestError, match="already exists"):
        Engine(root, client=FakeClient()).optimize("shout", out=taken)
    assert taken.read_text() == "my notes"


def test_a_symbolic_link_at_out_is_never_followed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (root / "prompts" / "shout.optimized.md").symlink_to(victim)
    with pytest.raises(InvalidRequestError, match="already exists"):
        Engine(root, client=FakeClient()).optimize("shout")
    assert victim.read_text() == "keep me"


def test_the_command_prints_the_diff_and_exits_by_acceptance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    (root / "profiles" / "opt.yaml").write_text(
        "provider: fake\nmodel: offline\noptions:\n  responses:\n    - "
        + json.dumps(json.dumps({"regions": ["\nRepeat it loudly.\n"], "rationale": "r"}))
        + "\n"
    )
    code = main(["optimize", "shout", "--root", str(root), "--optimizer-profile", "opt"])
    out = capsys.readouterr()
    assert code == 1
    assert "optimize_rejected" in out.err
    assert "candidate 1" in out.out
    code = main(["optimize", "shout", "--root", str(root), "--json", "--max-candidates", "1"])
    report = OptimizeReport.model_validate_json(capsys.readouterr().out)
    assert code == 1
    assert report.prompt == "shout"
    assert main(["optimize", "nope", "--root", str(root)]) == 4


def test_regions_replace_only_their_inside() -> None:
    text = "---\nprofile: p\n---\n## user\nA {# optimize #}one{# /optimize #} B {#- optimize -#}two{# /optimize #}\n"
    regions = find_regions(text, prompt_id="x")
    assert [r.text for r in regions] == ["one", "two"]
    assert replace_regions(text, regions, ["1", "2"]) == text.replace("one", "1").replace(
        "two", "2"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{# optimize #}a", "never closed"),
        ("a{# /optimize #}", "closes no open region"),
        ("{# optimize #}{# optimize #}a{# /optimize #}", "inside another"),
    ],
)
def test_unbalanced_markers_are_refused(body: str, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        find_regions(f"## user\n{body}\n", prompt_id="x")


def test_a_marker_in_the_front_matter_is_refused() -> None:
    text = "---\ndescription: '{# optimize #}x{# /optimize #}'\n---\n## user\nhi\n"
    with pytest.raises(InvalidRequestError, match="front matter"):
        find_regions(text, prompt_id="x")


@settings(max_examples=50, deadline=None)
@given(n=st.integers(min_value=4, max_value=40), seed=st.integers(), holdout=st.floats(0.1, 0.9))
def test_the_split_is_deterministic_disjoint_and_whole(n: int, seed: int, holdout: float) -> None:
    names = [f"case {i}" for i in range(n)]
    try:
        train, held = split_cases(names, holdout, seed)
    except InvalidRequestError:
        return
    assert (train, held) == split_cases(names, holdout, seed)
    assert sorted(train + held) == sorted(names)
    assert not set(train) & set(held)
    assert len(held) >= 3
    assert train


def test_the_bundled_optimiser_prompt_loads_and_renders(tmp_path: Path) -> None:
    root = _project(tmp_path)
    client = _model(["\nRepeat it in CAPITALS.\n"])
    Engine(root, client=client).optimize("shout", max_candidates=1)
    (request,) = [r for r in client.requests if "You improve a prompt template" in _system(r)]
    user = str(request.messages[-1].content)
    assert "Repeat it as it is." in user
    assert 'case "' in user
    assert textwrap.dedent("{# optimize #}") in user


def test_the_worked_example_of_the_readme_holds(tmp_path: Path) -> None:
    """``examples/optimize`` checks clean and, on a scripted model that follows a clearer
    instruction, gets a candidate accepted (ten cases, three repeats: enough pairs)."""
    import shutil

    root = tmp_path / "example"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "optimize", root)
    assert Engine(root).check() == []
    clear = "\nnow: people cannot work or lose money or data; today: one user or one bill; later: ideas.\n"

    def answer(request: LLMRequest) -> str:
        if "You improve a prompt template" in _system(request):
            return json.dumps({"regions": [clear], "rationale": "name the levels"})
        ticket = str(request.messages[-1].content).lower()
        if "people cannot work" not in _system(request):
            return json.dumps({"urgency": "today"})
        if any(w in ticket for w in ("log in", "declined", "disappeared")):
            return json.dumps({"urgency": "now"})
        if any(w in ticket for w in ("invoice", "locked", "export")):
            return json.dumps({"urgency": "today"})
        return json.dumps({"urgency": "later"})

    env = {"ANTHROPIC_API_KEY": "sk-ant-scripted-0000"}
    report = Engine(root, client=FakeClient([answer]), env=env).optimize("urgency", seed=3)
    assert report.ok
    assert (root / "prompts" / "urgency.optimized.md").exists()
