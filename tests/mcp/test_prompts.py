"""prompts/list, prompts/get and completion/complete, through the SDK's own client in process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, types

from scriptorium import Engine
from scriptorium.mcp import create_server
from scriptorium.testing import FakeClient
from tests.mcp.project import engine_for, run_async, write_project

INVALID_PARAMS = -32602
Work = Callable[[Client], Awaitable[Any]]


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return engine_for(write_project(tmp_path), FakeClient())


def talk(engine: Engine, work: Work, *, mode: str = "auto", **options: Any) -> Any:
    """``work(client)`` with a client connected to the engine's server."""

    async def session() -> Any:
        async with Client(create_server(engine, **options), mode=mode) as client:
            return await work(client)

    return run_async(session)


def test_each_prompt_file_is_a_prompt_with_its_inputs_and_text_artifacts_as_arguments(
    engine: Engine,
) -> None:
    listed = talk(engine, lambda c: c.list_prompts())
    prompts = {p.name: p for p in listed.prompts}
    assert sorted(prompts) == ["greet", "tags", "text/summary"]
    greet = prompts["greet"]
    assert greet.title == "Greeting"
    assert greet.description == "Greet someone"
    assert [(a.name, a.description, a.required) for a in greet.arguments or []] == [
        ("name", "who to greet", True),
        ("times", None, False),
        ("tone", "how it sounds", False),
        ("shout", None, False),
    ]
    summary = prompts["text/summary"]
    assert [(a.name, a.required) for a in summary.arguments or []] == [("artifact.document", True)]
    # The image cannot be an argument: the description names it.
    assert summary.description is not None
    assert summary.description.startswith("Summarize a text")
    assert "scan (image/*)" in summary.description


def test_a_broken_prompt_file_is_left_out_of_the_listing(tmp_path: Path) -> None:
    root = write_project(tmp_path, extra={"broken.prompt.md": "---\nnope: 1\n---\nhi\n"})
    listed = talk(engine_for(root, FakeClient()), lambda c: c.list_prompts())
    assert "broken" not in {p.name for p in listed.prompts}


def test_get_renders_the_messages_prepare_renders_with_the_system_text_opening_them(
    engine: Engine,
) -> None:
    arguments = {"name": "Ada", "times": "2", "tone": "warm", "shout": "true"}
    got = talk(engine, lambda c: c.get_prompt("greet", arguments))
    prepared = engine.prepare(
        "greet", inputs={"name": "Ada", "times": 2, "tone": "warm", "shout": True}
    )
    assert prepared.system is not None
    assert len(got.messages) == 1
    message = got.messages[0]
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == (
        f"<system>\n{prepared.system}\n</system>\n\n{prepared.messages[0].content}"
    )
    assert got.description == "Greet someone"
    assert got.meta is not None
    assert got.meta["system"] == prepared.system
    assert got.meta["rendered_prompt_hash"] == prepared.rendered_prompt_hash
    assert got.meta["inputs_hash"] == prepared.inputs_hash


def test_a_string_input_keeps_text_that_looks_like_a_number(engine: Engine) -> None:
    got = talk(engine, lambda c: c.get_prompt("greet", {"name": "123"}))
    assert got.meta["inputs_hash"] == engine.prepare("greet", inputs={"name": "123"}).inputs_hash


def test_text_artifacts_travel_by_value_and_are_hashed(engine: Engine) -> None:
    got = talk(engine, lambda c: c.get_prompt("text/summary", {"artifact.document": "The text."}))
    assert isinstance(got.messages[0].content, types.TextContent)
    assert "Summarize: The text." in got.messages[0].content.text
    [artifact] = got.meta["artifacts"]
    assert artifact["name"] == "document"
    assert artifact["size"] == len("The text.")
    assert artifact["sha256"].startswith("sha256:")


async def refused(call: Awaitable[Any]) -> MCPError:
    """The protocol error ``call`` fails with (caught inside the session: past it, the client's
    task group would wrap it in an exception group)."""
    with pytest.raises(MCPError) as caught:
        await call
    return caught.value


def _rejection(engine: Engine, name: str, arguments: dict[str, str]) -> MCPError:
    rejected: MCPError = talk(engine, lambda c: refused(c.get_prompt(name, arguments)))
    return rejected


def test_an_argument_that_fails_the_inputs_schema_is_invalid_params_naming_it(
    engine: Engine,
) -> None:
    err = _rejection(engine, "greet", {"name": "Ada", "times": "9"})
    assert err.code == INVALID_PARAMS
    assert "/times" in err.message
    assert "at most 3" in err.message
    assert err.data["code"] == "invalid_request"


def test_a_number_argument_that_is_not_a_number_names_the_expected_type(engine: Engine) -> None:
    err = _rejection(engine, "greet", {"name": "Ada", "times": "twice"})
    assert err.code == INVALID_PARAMS
    assert "/times" in err.message
    assert "integer" in err.message


def test_an_undeclared_argument_gets_a_suggestion(engine: Engine) -> None:
    err = _rejection(engine, "greet", {"nme": "Ada"})
    assert err.code == INVALID_PARAMS
    assert "did you mean 'name'" in err.message


def test_a_missing_required_artifact_is_invalid_params(engine: Engine) -> None:
    err = _rejection(engine, "text/summary", {})
    assert err.code == INVALID_PARAMS
    assert "document" in err.message


def test_a_missing_prompt_is_invalid_params_naming_the_closest_id(engine: Engine) -> None:
    err = _rejection(engine, "gret", {})
    assert err.code == INVALID_PARAMS
    assert "did you mean 'greet'" in err.message
    assert err.data["code"] == "prompt_load"
    # The server's directories are not the client's business.
    assert str(engine.root) not in err.message


def test_errors_travel_the_same_over_json_rpc_framing(engine: Engine) -> None:
    err = talk(
        engine,
        lambda c: refused(c.get_prompt("greet", {"name": "Ada", "times": "9"})),
        mode="legacy",
    )
    assert err.code == INVALID_PARAMS
    assert err.data["code"] == "invalid_request"


def test_the_server_profile_renders_every_prompt(engine: Engine) -> None:
    got = talk(engine, lambda c: c.get_prompt("greet", {"name": "Ada"}), profile="other")
    assert got.meta["profile"] == "other"


def _complete(engine: Engine, prompt: str, argument: str, value: str) -> list[str]:
    async def work(client: Client) -> Any:
        return await client.complete(
            types.PromptReference(name=prompt), {"name": argument, "value": value}
        )

    values: list[str] = talk(engine, work).completion.values
    return values


def test_completion_offers_enum_values_filtered_by_the_typed_prefix(engine: Engine) -> None:
    assert _complete(engine, "greet", "tone", "") == ["warm", "formal", "wry"]
    assert _complete(engine, "greet", "tone", "w") == ["warm", "wry"]
    assert _complete(engine, "greet", "tone", "x") == []


def test_completion_offers_true_and_false_for_a_boolean(engine: Engine) -> None:
    assert _complete(engine, "greet", "shout", "") == ["true", "false"]
    assert _complete(engine, "greet", "shout", "f") == ["false"]


def test_completion_offers_nothing_for_free_text(engine: Engine) -> None:
    assert _complete(engine, "greet", "name", "A") == []
    assert _complete(engine, "greet", "artifact.document", "") == []
