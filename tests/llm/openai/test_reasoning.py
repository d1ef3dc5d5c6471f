"""Reasoning on OpenAI models: the capability table's ``reasoning_effort`` per model and level, the
body on the wire, the reasoning tokens read back and priced once, the reasoning text an
OpenAI-compatible server returns (in JSON and in streams). End to end through the real ``openai``
SDK against FakeOpenAIServer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, Overrides
from scriptorium.errors import InvalidRequestError
from scriptorium.hashing import hash_text
from scriptorium.llm.openai.reasoning import reasoning_plan
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import REASONING_LEVELS, ExecutionSettings, ReasoningLevel
from scriptorium.testing import FakeOpenAIServer, FixedClock, SequentialIds
from scriptorium.usecase import Done, PartialValue, ReasoningDelta, TextDelta

KEY = "sk-openai-reasoning-canary-0c4b9a"
LEVELS: tuple[ReasoningLevel, ...] = REASONING_LEVELS

# reasoning_effort sent for each level, per model (from the capability table).
EFFORTS: dict[str, dict[str, str]] = {
    # GPT-5: minimal .. high; off has no `none` there and goes to the lowest it takes.
    "gpt-5": {
        "off": "minimal",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "high",
        "max": "high",
    },
    # GPT-5.2: none .. xhigh.
    "gpt-5.2": {
        "off": "none",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "xhigh",
        "max": "xhigh",
    },
    # o3: low .. high.
    "o3": {
        "off": "low",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "high",
        "max": "high",
    },
    # A model the table does not know (any model of a compatible server): as asked.
    "qwen3-32b": {
        "off": "none",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "xhigh",
        "max": "max",
    },
}
LEVEL_NAMES = {"off": "none"}


# -- the mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("model", sorted(EFFORTS))
def test_each_level_maps_to_a_reasoning_effort_the_model_takes(
    model: str, level: ReasoningLevel
) -> None:
    plan = reasoning_plan(model, ExecutionSettings(reasoning=level))
    effort = EFFORTS[model][level]
    assert plan.sent == {"reasoning_effort": effort}
    assert plan.thinking is (effort != "none")
    moved = effort != LEVEL_NAMES.get(level, level)
    assert len(plan.notes) == (1 if moved else 0)
    if moved:
        assert repr(level) in plan.notes[0]
        assert repr(effort) in plan.notes[0]
    assert (plan.matched is None) is (model == "qwen3-32b")


def test_a_dated_snapshot_reads_as_its_model() -> None:
    plan = reasoning_plan("gpt-5-mini-2025-08-07", ExecutionSettings(reasoning="max"))
    assert (plan.matched, plan.sent) == ("gpt-5-mini", {"reasoning_effort": "high"})


@pytest.mark.parametrize("level", LEVELS)
def test_a_model_that_does_not_reason_ignores_the_level(level: ReasoningLevel) -> None:
    plan = reasoning_plan("gpt-4o-2024-08-06", ExecutionSettings(reasoning=level))
    assert plan.sent == {}
    assert "does not reason" in plan.ignored["reasoning"]


def test_a_budget_is_never_sent() -> None:
    plan = reasoning_plan("gpt-5", ExecutionSettings(reasoning_budget_tokens=4096))
    assert plan.sent == {}
    assert plan.ignored_settings == ("reasoning_budget_tokens",)


# -- end to end -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def root(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: gpt\n---\nSay hello to {{ name }}.\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "count.prompt.md").write_text(
        "---\nprofile: gpt\noutput:\n  format: json\n---\nCount.\n", encoding="utf-8"
    )
    (tmp_path / "profiles" / "gpt.yaml").write_text(
        f"provider: openai\nmodel: gpt-5\nendpoint: {server.url}\n"
        "api_key_env: OPENAI_API_KEY\nsettings: {max_tokens: 4000, max_retries: 0}\n",
        encoding="utf-8",
    )
    return tmp_path


def _engine(root: Path) -> Engine:
    return Engine(
        root,
        env={"OPENAI_API_KEY": KEY},
        clock=FixedClock(),
        new_id=SequentialIds(),
        retry_hooks=RetryHooks(sleep=lambda _s: None),
    )


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("model", ["gpt-5", "o3", "qwen3-32b"])
def test_each_level_on_the_wire_is_what_prepare_shows(
    root: Path, fake: FakeOpenAIServer, model: str, level: ReasoningLevel
) -> None:
    engine = _engine(root)
    overrides = Overrides(model=model, reasoning=level)
    prepared = engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert prepared.reasoning is not None
    assert prepared.reasoning.sent == {"reasoning_effort": EFFORTS[model][level]}
    assert prepared.settings_sources["reasoning"] == "override"
    fake.reply("Hello, Ada.")
    engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert fake.requests[0].body["reasoning_effort"] == EFFORTS[model][level]


def test_no_setting_sends_no_reasoning_effort(root: Path, fake: FakeOpenAIServer) -> None:
    fake.reply("Hello.")
    result = _engine(root).run("hello", inputs={"name": "Ada"})
    assert "reasoning_effort" not in fake.requests[0].body
    assert result.output.reasoning is None


def test_a_model_that_does_not_reason_is_sent_no_effort(root: Path, fake: FakeOpenAIServer) -> None:
    engine = _engine(root)
    overrides = Overrides(model="gpt-4o", reasoning="high", reasoning_budget_tokens=2000)
    prepared = engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert set(prepared.ignored_settings) >= {"reasoning", "reasoning_budget_tokens"}
    fake.reply("Hello.")
    result = engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert "reasoning_effort" not in fake.requests[0].body
    assert {"reasoning", "reasoning_budget_tokens"} <= set(result.metadata["ignored_settings"])


@pytest.mark.parametrize("level", LEVELS)
def test_reasoning_tokens_are_read_and_priced_once(
    root: Path, fake: FakeOpenAIServer, level: ReasoningLevel
) -> None:
    fake.reply("Hello, Ada.", prompt_tokens=1000, completion_tokens=500, reasoning_tokens=320)
    result = _engine(root).run(
        "hello", inputs={"name": "Ada"}, overrides=Overrides(reasoning=level)
    )
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (500, 320)
    assert result.attempts[0].usage.reasoning_tokens == 320
    # GPT-5: $1.25 in, $10 out per million; the reasoning tokens are inside the 500.
    assert result.usage.cost_micro == (1000 * 1_250_000 + 500 * 10_000_000 + 500_000) // 1_000_000
    # OpenAI's own API returns no reasoning text.
    assert result.output.reasoning is None
    assert fake.requests[0].body["reasoning_effort"] == EFFORTS["gpt-5"][level]


def test_a_compatible_servers_reasoning_text_is_kept_apart(
    root: Path, fake: FakeOpenAIServer
) -> None:
    fake.reply("Hello, Ada.", reasoning="The user wants a greeting.", reasoning_tokens=6)
    result = _engine(root).run(
        "hello", inputs={"name": "Ada"}, overrides=Overrides(model="qwen3-32b", reasoning="low")
    )
    assert result.output.text == "Hello, Ada."
    assert result.output.sha256 == hash_text("Hello, Ada.")
    assert result.output.reasoning == "The user wants a greeting."
    assert result.usage.reasoning_tokens == 5  # never more than completion_tokens (5)


@pytest.mark.parametrize("level", [level for level in LEVELS if level != "off"])
def test_the_stream_hands_out_reasoning_before_the_text(
    root: Path, fake: FakeOpenAIServer, level: ReasoningLevel
) -> None:
    fake.reply(
        '{"n": 3}',
        reasoning="One, two, three.",
        completion_tokens=30,
        reasoning_tokens=20,
        chunks=3,
    )
    overrides = Overrides(model="qwen3-32b", reasoning=level)
    with _engine(root).stream("count", overrides=overrides) as stream:
        events = list(stream)
    kinds = [type(e).__name__ for e in events]
    first_text = kinds.index("TextDelta")
    assert "ReasoningDelta" in kinds[:first_text]
    assert "ReasoningDelta" not in kinds[first_text:]
    done = events[-1]
    assert isinstance(done, Done)
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert thought == done.result.output.reasoning == "One, two, three."
    assert text == done.result.output.text == '{"n": 3}'
    assert [e.value for e in events if isinstance(e, PartialValue)][-1] == {"n": 3}
    assert done.result.usage.reasoning_tokens == 20
    body = fake.requests[0].body
    assert (body["stream"], body["reasoning_effort"]) == (True, level)


def test_run_and_stream_read_reasoning_alike(root: Path, fake: FakeOpenAIServer) -> None:
    for _ in range(2):
        fake.reply("Hi.", reasoning="Hmm.", completion_tokens=9, reasoning_tokens=4)
    engine = _engine(root)
    overrides = Overrides(model="qwen3-32b", reasoning="medium")
    ran = engine.run("hello", inputs={"name": "A"}, overrides=overrides)
    streamed = engine.stream("hello", inputs={"name": "A"}, overrides=overrides).result()
    assert (streamed.output, streamed.usage) == (ran.output, ran.usage)


def test_a_delta_with_reasoning_and_content_hands_out_both(
    root: Path, fake: FakeOpenAIServer
) -> None:
    """Some compatible servers send the last reasoning piece and the first text in one chunk."""

    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c1", "object": "chat.completion.chunk", "model": "qwen3-32b"}
        return "data: " + json.dumps({**body, "choices": [choice]}) + "\n\n"

    stream = (
        chunk({"role": "assistant", "reasoning_content": "Think"})
        + chunk({"reasoning_content": "ing.", "content": "Hel"})
        + chunk({"content": "lo."}, "stop")
        + "data: [DONE]\n\n"
    )
    fake.malformed(stream.encode(), content_type="text/event-stream")
    overrides = Overrides(model="qwen3-32b", reasoning="low")
    with _engine(root).stream("hello", inputs={"name": "A"}, overrides=overrides) as events:
        got = list(events)
    deltas = [(type(e).__name__, e.text) for e in got if isinstance(e, ReasoningDelta | TextDelta)]
    assert deltas == [
        ("ReasoningDelta", "Think"),
        ("ReasoningDelta", "ing."),
        ("TextDelta", "Hel"),
        ("TextDelta", "lo."),
    ]
    done = got[-1]
    assert isinstance(done, Done)
    assert (done.result.output.text, done.result.output.reasoning) == ("Hello.", "Thinking.")


@pytest.mark.parametrize("sampling", [{"temperature": 0.2}, {"top_p": 0.9}])
def test_a_reasoning_model_given_a_sampling_setting_it_refuses_fails_before_any_call(
    root: Path, fake: FakeOpenAIServer, sampling: dict[str, float]
) -> None:
    engine = _engine(root)
    overrides = Overrides(reasoning="high", **sampling)
    [field] = sampling
    with pytest.raises(InvalidRequestError) as caught:
        engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert caught.value.field == f"settings.{field}"
    assert "settings.reasoning 'high'" in caught.value.message
    with pytest.raises(InvalidRequestError):
        engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert fake.requests == []


@pytest.mark.parametrize(
    ("model", "reasoning"), [("qwen3-32b", "high"), ("gpt-5.1", "off"), ("gpt-4o", "high")]
)
def test_sampling_stays_where_the_model_takes_it(
    root: Path, fake: FakeOpenAIServer, model: str, reasoning: ReasoningLevel
) -> None:
    """An unknown model (a compatible server's), a model told not to reason, one that never
    does: the temperature is sent as given."""
    overrides = Overrides(model=model, reasoning=reasoning, temperature=0.2)
    fake.reply("Hello, Ada.")
    _engine(root).run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert fake.requests[0].body["temperature"] == 0.2
