"""The tools: run_prompt, list_prompts, render_prompt and the per-prompt run_<id> tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client, MCPError, types

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMResponse, Usage
from scriptorium.mcp import create_server
from scriptorium.testing import FakeClient
from tests.mcp.project import engine_for, run_async, write_project
from tests.mcp.test_prompts import INVALID_PARAMS, refused

SUMMARY = '{"summary": "short"}'


def call(
    root: Path,
    client: FakeClient,
    name: str,
    arguments: dict[str, Any],
    **options: Any,
) -> types.CallToolResult:
    """One tool call on a server over ``root`` whose model is ``client``."""
    engine = engine_for(root, client, repair=options.pop("repair", False))

    async def session() -> types.CallToolResult:
        async with Client(create_server(engine, **options)) as mcp_client:
            return await mcp_client.call_tool(name, arguments)

    result: types.CallToolResult = run_async(session)
    return result


def _text(result: types.CallToolResult, index: int = 0) -> str:
    block = result.content[index]
    assert isinstance(block, types.TextContent)
    return block.text


def test_run_prompt_returns_the_text_and_the_validated_value(tmp_path: Path) -> None:
    reply = LLMResponse(
        text=SUMMARY, model="fake-model", usage=Usage(input_tokens=12, output_tokens=5)
    )
    result = call(
        write_project(tmp_path),
        FakeClient([reply]),
        "run_prompt",
        {"prompt": "text/summary", "artifacts": {"document": "A long text."}},
    )
    assert not result.is_error
    assert _text(result) == SUMMARY
    assert result.structured_content == {"summary": "short"}
    assert result.meta is not None
    assert result.meta["usage"]["input_tokens"] == 12
    assert result.meta["usage"]["output_tokens"] == 5
    assert result.meta["cost_micro"] == result.meta["usage"]["cost_micro"]
    assert result.meta["prompt_id"] == "text/summary"
    assert result.meta["valid"] is True


def test_a_text_prompt_has_no_structured_content(tmp_path: Path) -> None:
    result = call(
        write_project(tmp_path),
        FakeClient(["Hello, Ada!"]),
        "run_prompt",
        {"prompt": "greet", "inputs": {"name": "Ada"}},
    )
    assert not result.is_error
    assert _text(result) == "Hello, Ada!"
    assert result.structured_content is None


def test_a_value_that_is_not_an_object_travels_as_value(tmp_path: Path) -> None:
    result = call(
        write_project(tmp_path),
        FakeClient(['["a", "b"]']),
        "run_prompt",
        {"prompt": "tags", "inputs": {"topic": "x"}},
    )
    assert result.structured_content == {"value": ["a", "b"]}


def test_an_invalid_output_is_an_error_result_with_the_text(tmp_path: Path) -> None:
    result = call(
        write_project(tmp_path),
        FakeClient(['{"sumary": 1}']),
        "run_prompt",
        {"prompt": "text/summary", "artifacts": {"document": "x"}},
    )
    assert result.is_error
    assert _text(result).startswith("output_invalid: ")
    assert _text(result, 1) == '{"sumary": 1}'
    assert result.meta is not None
    assert result.meta["error"]["code"] == "output_invalid"
    assert result.meta["valid"] is False


def test_repair_makes_an_invalid_output_valid_when_the_server_repairs(tmp_path: Path) -> None:
    client = FakeClient(['{"sumary": 1}', SUMMARY])
    result = call(
        write_project(tmp_path),
        client,
        "run_prompt",
        {"prompt": "text/summary", "artifacts": {"document": "x"}},
        repair=True,
    )
    assert not result.is_error
    assert result.structured_content == {"summary": "short"}
    assert result.meta is not None
    assert result.meta["repaired"] is True
    assert client.calls == 2


def test_a_failed_run_is_an_error_result_with_code_and_message(tmp_path: Path) -> None:
    failure = LLMGenerateError("the provider is overloaded", reason="overloaded")
    result = call(
        write_project(tmp_path),
        FakeClient([failure]),
        "run_prompt",
        {"prompt": "greet", "inputs": {"name": "Ada"}},
    )
    assert result.is_error
    assert _text(result) == "llm_generate: the provider is overloaded"
    assert result.meta is not None
    assert result.meta["error"]["reason"] == "overloaded"
    assert result.structured_content == {"error": result.meta["error"]}


def test_a_key_in_a_failure_message_never_reaches_the_client(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "x" * 40
    failure = LLMGenerateError(f"rejected key {key}", reason="auth")
    result = call(
        write_project(tmp_path),
        FakeClient([failure]),
        "run_prompt",
        {"prompt": "greet", "inputs": {"name": "Ada"}},
    )
    assert result.is_error
    assert key not in result.model_dump_json(by_alias=True)


def test_bad_run_prompt_arguments_are_an_error_result_naming_them(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    wrong_inputs = call(root, FakeClient(), "run_prompt", {"prompt": "greet", "inputs": [1]})
    assert wrong_inputs.is_error
    assert "inputs: expected an object" in _text(wrong_inputs)
    typo = call(root, FakeClient(), "run_prompt", {"prompt": "gret"})
    assert typo.is_error
    assert "did you mean 'greet'" in _text(typo)
    invalid = call(root, FakeClient(), "run_prompt", {"prompt": "greet", "inputs": {"times": 1}})
    assert invalid.is_error
    assert _text(invalid).startswith("invalid_request: ")


def test_run_prompt_takes_a_profile(tmp_path: Path) -> None:
    result = call(
        write_project(tmp_path),
        FakeClient(["hi"]),
        "run_prompt",
        {"prompt": "greet", "inputs": {"name": "Ada"}, "profile": "other"},
    )
    assert result.meta is not None
    assert result.meta["profile"] == "other"


def _tools(root: Path, **options: Any) -> dict[str, types.Tool]:
    engine = engine_for(root, FakeClient())

    async def session() -> types.ListToolsResult:
        async with Client(create_server(engine, **options)) as client:
            return await client.list_tools()

    listed: types.ListToolsResult = run_async(session)
    return {tool.name: tool for tool in listed.tools}


def test_the_fixed_tools_are_listed_and_no_per_prompt_tool_by_default(tmp_path: Path) -> None:
    assert sorted(_tools(write_project(tmp_path))) == [
        "list_prompts",
        "render_prompt",
        "run_prompt",
    ]


def test_each_prompt_is_its_own_tool_typed_by_its_schemas(tmp_path: Path) -> None:
    tools = _tools(write_project(tmp_path), tools_per_prompt=True)
    assert {"run_greet", "run_text_summary", "run_tags"} <= set(tools)
    greet = tools["run_greet"]
    engine = engine_for(tmp_path, FakeClient())
    assert greet.input_schema == engine.prompts.get("greet").inputs
    assert greet.output_schema is None
    assert greet.title == "Greeting"
    summary = tools["run_text_summary"]
    assert summary.input_schema["properties"]["artifact.document"]["type"] == "string"
    assert summary.input_schema["required"] == ["artifact.document"]
    assert summary.output_schema == {
        "type": "object",
        "required": ["summary"],
        "additionalProperties": False,
        "properties": {"summary": {"type": "string"}},
    }
    tags = tools["run_tags"]
    assert tags.output_schema == {
        "type": "object",
        "properties": {"value": {"type": "array", "items": {"type": "string"}}},
        "required": ["value"],
    }


def test_a_per_prompt_tool_runs_its_prompt(tmp_path: Path) -> None:
    result = call(
        write_project(tmp_path),
        FakeClient([SUMMARY]),
        "run_text_summary",
        {"artifact.document": "A text."},
        tools_per_prompt=True,
    )
    assert not result.is_error
    assert result.structured_content == {"summary": "short"}


def test_an_unknown_tool_is_invalid_params_with_a_suggestion(tmp_path: Path) -> None:
    engine = engine_for(write_project(tmp_path), FakeClient())

    async def session() -> MCPError:
        async with Client(create_server(engine)) as client:
            return await refused(client.call_tool("run_promt", {}))

    err: MCPError = run_async(session)
    assert err.code == INVALID_PARAMS
    assert "did you mean 'run_prompt'" in err.message


def test_list_prompts_mirrors_prompts_list(tmp_path: Path) -> None:
    result = call(write_project(tmp_path), FakeClient(), "list_prompts", {})
    assert not result.is_error
    assert result.structured_content is not None
    listed = {p["name"]: p for p in result.structured_content["prompts"]}
    assert sorted(listed) == ["greet", "tags", "text/summary"]
    assert listed["greet"]["title"] == "Greeting"
    assert [a["name"] for a in listed["greet"]["arguments"]] == ["name", "times", "tone", "shout"]
    assert json.loads(_text(result)) == result.structured_content


def test_render_prompt_mirrors_prompts_get(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    result = call(
        root, FakeClient(), "render_prompt", {"prompt": "greet", "arguments": {"name": "Ada"}}
    )
    assert not result.is_error
    assert result.structured_content is not None
    [message] = result.structured_content["messages"]
    assert message["role"] == "user"
    assert message["content"]["text"].startswith("<system>\nYou greet people")
    refused_render = call(
        root, FakeClient(), "render_prompt", {"prompt": "greet", "arguments": {"times": "9"}}
    )
    assert refused_render.is_error
    assert "name" in _text(refused_render)


def test_a_prompt_whose_tool_name_is_taken_gets_no_tool_of_its_own(tmp_path: Path) -> None:
    hello = "---\nprofile: fake\n---\n## user\nHello.\n"
    root = write_project(tmp_path, extra={"prompt.prompt.md": hello, "a/b.prompt.md": hello})
    (root / "prompts" / "a_b.prompt.md").write_text(hello)
    tools = _tools(root, tools_per_prompt=True)
    # `prompt` would shadow run_prompt, whose meaning stays; `a/b` and `a_b` share one name.
    assert tools["run_prompt"].input_schema["required"] == ["prompt"]
    assert "run_a_b" in tools
    result = call(root, FakeClient(["hi"]), "run_a_b", {}, tools_per_prompt=True)
    assert result.meta is not None
    assert result.meta["prompt_id"] == "a/b"


def test_runs_are_marked_open_world_and_listing_read_only(tmp_path: Path) -> None:
    tools = _tools(write_project(tmp_path), tools_per_prompt=True)
    for name in ("run_prompt", "run_greet"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.open_world_hint is True
        assert annotations.read_only_hint is False
    for name in ("list_prompts", "render_prompt"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
