"""Reasoning on Claude: the capability table's mapping per model and level, the body on the wire,
the thinking text and tokens read back (redacted blocks counted, not kept), the cost priced once,
the stream's reasoning events, and the conflicts refused before any call. End to end through the
real ``anthropic`` SDK against FakeAnthropicServer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, Overrides, errors
from scriptorium.hashing import hash_text
from scriptorium.llm.anthropic.call import REDACTED_KEY
from scriptorium.llm.anthropic.reasoning import LEVEL_BUDGETS, reasoning_plan
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import REASONING_LEVELS, ExecutionSettings, ReasoningLevel
from scriptorium.testing import FakeAnthropicServer, FixedClock, SequentialIds
from scriptorium.usecase import Done, PartialValue, ReasoningDelta, TextDelta

KEY = "sk-ant-reasoning-canary-5d1e2f"
SCHEMA = '{"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}'
LEVELS: tuple[ReasoningLevel, ...] = REASONING_LEVELS
THINKING: tuple[ReasoningLevel, ...] = tuple(level for level in LEVELS if level != "off")

# What each level is sent as, per kind of model (from the capability table).
ADAPTIVE_ALL = {  # claude-opus-4-7: adaptive thinking, every effort
    "off": {"output_config": {"effort": "low"}},
    **{
        level: {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}
        for level in ("low", "medium", "high", "xhigh", "max")
    },
}
ADAPTIVE_46 = {  # claude-sonnet-4-6: adaptive, no xhigh (sent as high, the nearest below)
    **ADAPTIVE_ALL,
    "xhigh": {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
}
BUDGET = {  # claude-sonnet-4-5: a thinking budget derived from the level
    "off": {},
    **{
        level: {"thinking": {"type": "enabled", "budget_tokens": LEVEL_BUDGETS[level]}}
        for level in ("low", "medium", "high", "xhigh", "max")
    },
}


# -- the mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-opus-4-7", ADAPTIVE_ALL),
        ("claude-opus-4-7-20260301", ADAPTIVE_ALL),
        ("claude-sonnet-4-6", ADAPTIVE_46),
        ("us.anthropic.claude-sonnet-4-6-v1:0", ADAPTIVE_46),
        ("claude-sonnet-4-5-20250929", BUDGET),
    ],
)
def test_each_level_maps_to_what_the_model_takes(
    model: str, expected: dict[str, Any], level: ReasoningLevel
) -> None:
    plan = reasoning_plan(model, ExecutionSettings(max_tokens=40_000, reasoning=level))
    assert plan.sent == expected[level]
    assert plan.thinking is (level != "off")
    assert plan.level == level
    assert plan.matched is not None
    assert plan.ignored == {}


def test_a_level_the_model_lacks_goes_to_the_nearest_below_and_says_so() -> None:
    plan = reasoning_plan("claude-sonnet-4-6", ExecutionSettings(reasoning="xhigh"))
    assert plan.sent["output_config"] == {"effort": "high"}
    assert len(plan.notes) == 1
    assert "'xhigh'" in plan.notes[0]
    assert "'high'" in plan.notes[0]


def test_a_budget_model_takes_the_budget_given_over_the_level() -> None:
    settings = ExecutionSettings(max_tokens=8000, reasoning="max", reasoning_budget_tokens=2048)
    plan = reasoning_plan("claude-sonnet-4-5", settings)
    assert plan.sent == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert plan.notes == ()


def test_an_adaptive_model_ignores_a_budget_and_says_why() -> None:
    settings = ExecutionSettings(reasoning="high", reasoning_budget_tokens=2048)
    plan = reasoning_plan("claude-opus-4-7", settings)
    assert plan.sent["thinking"] == {"type": "adaptive"}
    assert "token budget" in plan.ignored["reasoning_budget_tokens"]
    assert plan.ignored_settings == ("reasoning_budget_tokens",)


@pytest.mark.parametrize("level", LEVELS)
def test_a_model_that_does_not_think_ignores_every_level(level: ReasoningLevel) -> None:
    plan = reasoning_plan("claude-3-5-haiku-20241022", ExecutionSettings(reasoning=level))
    assert plan.sent == {}
    assert not plan.thinking
    assert "does not think" in plan.ignored["reasoning"]


def test_an_unknown_model_gets_the_level_as_asked() -> None:
    plan = reasoning_plan("claude-future-9", ExecutionSettings(reasoning="xhigh"))
    assert plan.matched is None
    assert plan.sent == {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}}


def test_no_setting_sends_nothing() -> None:
    plan = reasoning_plan("claude-opus-4-7", ExecutionSettings())
    assert (plan.sent, plan.ignored, plan.thinking) == ({}, {}, False)


def test_another_version_is_not_the_table_entry() -> None:
    # claude-opus-4-9 is not claude-opus-4 (a budget model): it is unknown, sent as asked.
    plan = reasoning_plan("claude-opus-4-9", ExecutionSettings(reasoning="high"))
    assert plan.matched is None


# -- end to end -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeAnthropicServer) -> Iterator[FakeAnthropicServer]:
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def root(tmp_path: Path, server: FakeAnthropicServer) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: claude\n---\nSay hello to {{ name }}.\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "n.schema.json").write_text(SCHEMA, encoding="utf-8")
    for strategy in ("auto", "tool"):
        (tmp_path / "prompts" / f"count_{strategy}.prompt.md").write_text(
            "---\nprofile: claude\noutput:\n  format: json_schema\n  schema: n.schema.json\n"
            f"  strategy: {strategy}\n---\nCount.\n",
            encoding="utf-8",
        )
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-opus-4-7\nendpoint: {server.url}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_tokens: 40000, max_retries: 0}\n",
        encoding="utf-8",
    )
    return tmp_path


def _engine(root: Path) -> Engine:
    return Engine(
        root,
        env={"ANTHROPIC_API_KEY": KEY},
        clock=FixedClock(),
        new_id=SequentialIds(),
        retry_hooks=RetryHooks(sleep=lambda _s: None),
    )


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in ("thinking", "output_config") if k in body}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-opus-4-7", ADAPTIVE_ALL),
        ("claude-sonnet-4-6", ADAPTIVE_46),
        ("claude-sonnet-4-5", BUDGET),
    ],
)
def test_each_level_on_the_wire_is_what_prepare_shows(
    root: Path,
    fake: FakeAnthropicServer,
    model: str,
    expected: dict[str, Any],
    level: ReasoningLevel,
) -> None:
    engine = _engine(root)
    overrides = Overrides(model=model, reasoning=level)
    prepared = engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert prepared.settings.reasoning == level
    assert prepared.settings_sources["reasoning"] == "override"
    assert prepared.reasoning is not None
    assert prepared.reasoning.sent == expected[level]
    fake.reply("Hello, Ada.")
    engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert _sent(fake.requests[0].body) == expected[level]


def test_a_model_that_does_not_think_gets_nothing_and_prepare_says_it_is_ignored(
    root: Path, fake: FakeAnthropicServer
) -> None:
    engine = _engine(root)
    overrides = Overrides(model="claude-3-5-haiku-20241022", reasoning="high")
    prepared = engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert "reasoning" in prepared.ignored_settings
    fake.reply("Hello.")
    result = engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert _sent(fake.requests[0].body) == {}
    assert "reasoning" in result.metadata["ignored_settings"]


@pytest.mark.parametrize("level", THINKING)
def test_thinking_text_and_tokens_are_read_and_priced_once(
    root: Path, fake: FakeAnthropicServer, level: ReasoningLevel
) -> None:
    fake.reply(
        "Hello, Ada.",
        thinking=["First, greet.", "Then stop."],
        redacted=2,
        thinking_tokens=300,
        usage={"input_tokens": 1000, "output_tokens": 400},
    )
    result = _engine(root).run(
        "hello", inputs={"name": "Ada"}, overrides=Overrides(reasoning=level)
    )
    assert result.output.text == "Hello, Ada."
    assert result.output.sha256 == hash_text("Hello, Ada.")
    assert result.output.reasoning == "First, greet.\n\nThen stop."
    assert result.attempts[0].reasoning == result.output.reasoning
    assert result.validation.valid
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (400, 300)
    assert result.attempts[0].usage.reasoning_tokens == 300
    # Opus 4.7: $5 in, $25 out per million; the thinking tokens are inside the 400 output ones.
    assert result.usage.cost_micro == 1000 * 5 + 400 * 25
    assert result.metadata[REDACTED_KEY] == 2
    assert "encrypted-fake" not in result.model_dump_json()


def test_an_answer_without_thinking_has_no_reasoning(root: Path, fake: FakeAnthropicServer) -> None:
    fake.reply("Hello.")
    result = _engine(root).run("hello", inputs={"name": "Ada"})
    assert result.output.reasoning is None
    assert result.usage.reasoning_tokens == 0
    dumped = result.model_dump(mode="json")
    assert "reasoning" not in dumped["output"]
    assert "reasoning_tokens" not in dumped["usage"]
    assert "thinking" not in fake.requests[0].body


@pytest.mark.parametrize("level", THINKING)
def test_the_stream_hands_out_reasoning_before_the_text(
    root: Path, fake: FakeAnthropicServer, level: ReasoningLevel
) -> None:
    fake.reply(
        '{"n": 3}',
        thinking="Counting one, two, three.",
        redacted=1,
        thinking_tokens=12,
        usage={"input_tokens": 10, "output_tokens": 20},
        chunks=3,
    )
    with _engine(root).stream("count_auto", overrides=Overrides(reasoning=level)) as stream:
        events = list(stream)
    kinds = [type(e).__name__ for e in events]
    first_text = kinds.index("TextDelta")
    assert "ReasoningDelta" in kinds[:first_text]
    assert "ReasoningDelta" not in kinds[first_text:]
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    done = events[-1]
    assert isinstance(done, Done)
    assert thought == done.result.output.reasoning == "Counting one, two, three."
    assert text == done.result.output.text == '{"n": 3}'
    assert partials[-1] == {"n": 3}
    assert done.result.usage.reasoning_tokens == 12
    assert done.result.metadata[REDACTED_KEY] == 1
    assert done.result.usage.cost_micro == 10 * 5 + 20 * 25
    body = fake.requests[0].body
    assert body["stream"] is True
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"]["effort"] == level


def test_run_and_stream_read_thinking_alike(root: Path, fake: FakeAnthropicServer) -> None:
    for _ in range(2):
        fake.reply(
            "Hi.", thinking="Hmm.", thinking_tokens=3, usage={"input_tokens": 4, "output_tokens": 9}
        )
    engine = _engine(root)
    ran = engine.run("hello", inputs={"name": "A"}, overrides=Overrides(reasoning="low"))
    streamed = engine.stream("hello", inputs={"name": "A"}, overrides=Overrides(reasoning="low"))
    result = streamed.result()
    assert (result.output, result.usage) == (ran.output, ran.usage)


# -- conflicts --------------------------------------------------------------------------------


def test_a_budget_not_below_max_tokens_is_refused_before_any_call(
    root: Path, fake: FakeAnthropicServer
) -> None:
    engine = _engine(root)
    overrides = Overrides(model="claude-sonnet-4-5", reasoning_budget_tokens=4096, max_tokens=4096)
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    message = str(caught.value)
    assert "reasoning_budget_tokens" in message
    assert "max_tokens" in message
    with pytest.raises(errors.InvalidRequestError):
        engine.run("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert fake.requests == []


def test_a_level_whose_budget_is_not_below_max_tokens_is_refused(root: Path) -> None:
    overrides = Overrides(model="claude-sonnet-4-5", reasoning="max", max_tokens=8000)
    with pytest.raises(errors.InvalidRequestError) as caught:
        _engine(root).prepare("hello", inputs={"name": "Ada"}, overrides=overrides)
    assert "'max'" in str(caught.value)
    assert "max_tokens" in str(caught.value)


def test_a_budget_under_the_minimum_is_refused(root: Path) -> None:
    overrides = Overrides(model="claude-sonnet-4-5", reasoning_budget_tokens=500)
    with pytest.raises(errors.InvalidRequestError, match="1024"):
        _engine(root).prepare("hello", inputs={"name": "Ada"}, overrides=overrides)


def test_a_forced_tool_while_thinking_is_refused_before_any_call(
    root: Path, fake: FakeAnthropicServer
) -> None:
    engine = _engine(root)
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.run("count_tool", overrides=Overrides(reasoning="high"))
    message = str(caught.value)
    assert "strategy 'tool'" in message
    assert "settings.reasoning" in message
    assert fake.requests == []
    # Reasoning off: the tool can be forced again.
    prepared = engine.prepare("count_tool", overrides=Overrides(reasoning="off"))
    assert prepared.output.strategy == "tool"


def test_auto_avoids_a_forced_tool_while_thinking(root: Path) -> None:
    # Sonnet 3.7 has no native structured output: auto takes `tool` there, or `prompt` when the
    # model thinks (no tool can be forced then); a thinking request never gets `tool`.
    engine = _engine(root)
    for model in ("claude-opus-4-7", "claude-sonnet-4-5", "claude-3-7-sonnet-20250219"):
        thinking = engine.prepare(
            "count_auto", overrides=Overrides(model=model, reasoning="low", max_tokens=40000)
        )
        assert thinking.output.strategy in ("native", "prompt")
    plain = engine.prepare("count_auto", overrides=Overrides(model="claude-3-7-sonnet-20250219"))
    assert plain.output.strategy == "tool"
    thinking = engine.prepare(
        "count_auto", overrides=Overrides(model="claude-3-7-sonnet-20250219", reasoning="low")
    )
    assert thinking.output.strategy == "prompt"


def test_the_settings_come_from_the_profile_too(root: Path, fake: FakeAnthropicServer) -> None:
    (root / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-opus-4-7\nendpoint: {fake.url}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_tokens: 4000, reasoning: off}\n",
        encoding="utf-8",
    )
    engine = _engine(root)
    prepared = engine.prepare("hello", inputs={"name": "Ada"})
    assert (prepared.settings.reasoning, prepared.settings_sources["reasoning"]) == (
        "off",
        "profile",
    )
    override = engine.prepare("hello", inputs={"name": "Ada"}, overrides=Overrides(reasoning="max"))
    assert override.settings_sources["reasoning"] == "override"
    assert override.request_hash != prepared.request_hash


def test_the_async_stream_hands_out_the_same_reasoning(
    root: Path, fake: FakeAnthropicServer
) -> None:
    fake.reply("Hello.", thinking="Think first.", thinking_tokens=2, chunks=2)

    async def events() -> list[object]:
        stream = _engine(root).astream(
            "hello", inputs={"name": "A"}, overrides=Overrides(reasoning="low")
        )
        async with stream:
            return [event async for event in stream]

    got = asyncio.run(events())
    thought = "".join(e.text for e in got if isinstance(e, ReasoningDelta))
    done = got[-1]
    assert isinstance(done, Done)
    assert thought == done.result.output.reasoning == "Think first."
    assert done.result.output.text == "Hello."
