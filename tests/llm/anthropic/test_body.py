"""build_body: the Messages API body from an LLMRequest, pure and without the SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.anthropic.body import build_body, encode_body, message_params, output_blocks
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

MODEL = "claude-haiku-4-5"
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def request(**fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="anthropic", model=fields.pop("model", MODEL)),
        "messages": (Message(role="user", content="Hello"),),
    }
    base.update(fields)
    return LLMRequest(**base)


def test_a_plain_request_sends_only_model_max_tokens_and_messages() -> None:
    built = build_body(request(settings=ExecutionSettings(max_tokens=64)))
    assert built.body == {
        "model": MODEL,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    assert (built.output, built.ignored) == (None, ())


def test_system_stop_sequences_and_ignored_sampling_settings() -> None:
    built = build_body(
        request(
            system="Be brief.",
            settings=ExecutionSettings(stop_sequences=("END",), temperature=0.1, top_p=0.9),
        )
    )
    assert built.body["system"] == "Be brief."
    assert built.body["stop_sequences"] == ["END"]
    assert not {"temperature", "top_p", "top_k"} & set(built.body)
    assert built.ignored == ("temperature", "top_p")


def test_native_strategy_adds_the_reduced_schema_as_output_config() -> None:
    spec = StructuredOutput(schema_=PERSON, strategy="native")
    built = build_body(request(structured_output=spec))
    schema = built.body["output_config"]["format"]["schema"]
    assert built.body["output_config"]["format"]["type"] == "json_schema"
    assert schema["additionalProperties"] is False
    assert "minLength" not in schema["properties"]["name"]
    assert built.output is not None
    assert (built.output.strategy, built.output.dropped) == ("native", ("minLength",))
    assert "system" not in built.body


def test_prompt_strategy_appends_the_schema_to_the_system_text() -> None:
    spec = StructuredOutput(schema_=PERSON, strategy="prompt")
    built = build_body(request(system="Be brief.", structured_output=spec))
    system = built.body["system"]
    assert system.startswith("Be brief.\n\n")
    assert json.dumps(PERSON, sort_keys=True) in system
    assert not {"output_config", "tools", "tool_choice"} & set(built.body)


def test_tool_strategy_forces_one_tool_and_wraps_a_non_object_root() -> None:
    spec = StructuredOutput(schema_={"type": "array"}, name="my list", strategy="tool")
    built = build_body(request(structured_output=spec))
    assert built.body["tool_choice"] == {"type": "tool", "name": "my_list"}
    (tool,) = built.body["tools"]
    assert tool["input_schema"]["properties"]["value"] == {"type": "array"}
    assert built.output is not None
    assert (built.output.tool, built.output.wrapped) == ("my_list", True)


def test_output_blocks_are_computed_once_per_spec_object_and_model() -> None:
    spec = StructuredOutput(schema_=PERSON)
    first = output_blocks(spec, MODEL)
    assert output_blocks(spec, MODEL) is first
    # Another model may get another strategy (auto: native only where the model has it).
    older = output_blocks(spec, "claude-3-haiku-20240307")
    assert (first.strategy, older.strategy) == ("native", "tool")
    # An equal spec that is another object is computed again, to the same blocks.
    assert output_blocks(StructuredOutput(schema_=PERSON), MODEL) == first


def test_requests_do_not_share_their_top_level_body() -> None:
    spec = StructuredOutput(schema_=PERSON)
    one, two = (
        build_body(request(structured_output=spec)),
        build_body(request(structured_output=spec)),
    )
    assert one.body == two.body
    assert one.body is not two.body
    assert one.body["messages"] is not two.body["messages"]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=40)),
        min_size=1,
        max_size=5,
    )
)
def test_messages_keep_role_content_and_order(pairs: list[tuple[str, str]]) -> None:
    messages = tuple(Message(role=role, content=text) for role, text in pairs)
    assert message_params(messages) == [{"role": r, "content": c} for r, c in pairs]
    assert build_body(request(messages=messages)).body["messages"] == message_params(messages)


def test_encoded_body_is_compact_ascii_json_even_with_a_lone_surrogate() -> None:
    body = build_body(request(messages=(Message(role="user", content="naïve \ud800 ☃"),))).body
    encoded = encode_body(body)
    assert encoded.isascii()
    assert json.loads(encoded) == body
    assert b", " not in encoded
    assert b": " not in encoded


def test_encoding_refuses_nan_as_the_api_would() -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        encode_body({"model": MODEL, "x": float("nan")})
