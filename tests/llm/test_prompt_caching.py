"""Prompt caching end to end: the real ``anthropic`` SDK against FakeAnthropicServer on 127.0.0.1,
so what is asserted is the body that went over the wire."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium.testing import FakeAnthropicServer

KEY = "sk-ant-cache-test-0123456789"
MODEL = "claude-sonnet-4-6"
FIVE = {"type": "ephemeral", "ttl": "5m"}
HOUR = {"type": "ephemeral", "ttl": "1h"}

STATIC_SYSTEM = "You answer questions about the handbook. Be brief."
BODY = f"""## system
{STATIC_SYSTEM}

## user
Question: {{{{ question }}}}
"""

EXPLICIT = """---
cache: {mode: explicit}
---
## system
Rules that never change.
{# cache 1h #}
More rules.

## user
Handbook: chapter one.
{# cache #}
Question: {{ question }}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path, server: FakeAnthropicServer) -> Path:
    server.reset()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: {MODEL}\nendpoint: {server.url}\n"
        "api_key_env: ANTHROPIC_API_KEY\n",
        encoding="utf-8",
    )
    return tmp_path


def _prompt(project: Path, name: str, text: str, cache: str | None = None) -> None:
    front = "---\nprofile: claude\n" + (f"cache: {cache}\n" if cache else "") + "---\n"
    if text.startswith("---"):
        front, text = "", text.replace("---\ncache", "---\nprofile: claude\ncache", 1)
    (project / "prompts" / f"{name}.prompt.md").write_text(front + text, encoding="utf-8")


def _engine(project: Path) -> Engine:
    return Engine(project, env={"ANTHROPIC_API_KEY": KEY})


def _sent(server: FakeAnthropicServer) -> dict[str, Any]:
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body


def _controls(body: Any) -> list[Any]:
    """Every cache_control in the body, wherever it is."""
    found: list[Any] = []
    if isinstance(body, dict):
        for key, value in body.items():
            if key == "cache_control":
                found.append(value)
            else:
                found.extend(_controls(value))
    elif isinstance(body, list):
        for item in body:
            found.extend(_controls(item))
    return found


def _text(blocks: Any) -> str:
    return blocks if isinstance(blocks, str) else "".join(b["text"] for b in blocks)


def test_no_breakpoint_is_sent_by_default(project: Path, server: FakeAnthropicServer) -> None:
    _prompt(project, "plain", BODY)
    result = _engine(project).run("plain", inputs={"question": "why?"})
    body = _sent(server)
    assert _controls(body) == []
    assert body["system"] == STATIC_SYSTEM
    assert result.prepared.cache is None


@pytest.mark.parametrize(("ttl", "control"), [("5m", FIVE), ("1h", HOUR)])
def test_static_caches_an_input_free_system_section(
    project: Path, server: FakeAnthropicServer, ttl: str, control: dict[str, str]
) -> None:
    _prompt(project, "static", BODY, cache=f"{{mode: static, ttl: {ttl}}}")
    _engine(project).run("static", inputs={"question": "why?"})
    body = _sent(server)
    assert body["system"] == [{"type": "text", "text": STATIC_SYSTEM, "cache_control": control}]
    assert body["messages"] == [{"role": "user", "content": "Question: why?"}]
    assert "cache_control" not in body


def test_static_sends_nothing_when_the_system_reads_an_input(
    project: Path, server: FakeAnthropicServer
) -> None:
    text = "## system\nYou write for {{ audience }}.\n\n## user\nHello.\n"
    _prompt(project, "personal", text, cache="static")
    _engine(project).run("personal", inputs={"audience": "board"})
    assert _controls(_sent(server)) == []


def test_static_caches_after_the_schema_instructions_of_the_prompt_strategy(
    project: Path, server: FakeAnthropicServer
) -> None:
    text = (
        "---\nprofile: claude\ncache: static\noutput:\n  format: json_schema\n"
        "  strategy: prompt\n  schema: {type: object, properties: {a: {type: string}}}\n---\n"
        + BODY
    )
    (project / "prompts" / "structured.prompt.md").write_text(text, encoding="utf-8")
    server.reply('{"a": "x"}')
    _engine(project).run("structured", inputs={"question": "why?"})
    system = _sent(server)["system"]
    assert isinstance(system, list)
    assert len(system) == 2
    assert system[0] == {"type": "text", "text": STATIC_SYSTEM}
    assert system[1]["cache_control"] == FIVE
    assert "JSON Schema" in system[1]["text"]


def test_auto_is_one_top_level_directive(project: Path, server: FakeAnthropicServer) -> None:
    _prompt(project, "auto", BODY, cache="{mode: auto, ttl: 1h}")
    _engine(project).run("auto", inputs={"question": "why?"})
    body = _sent(server)
    assert body["cache_control"] == HOUR
    assert _controls({k: v for k, v in body.items() if k != "cache_control"}) == []
    assert body["system"] == STATIC_SYSTEM


def test_explicit_lines_become_breakpoints_longest_ttl_first(
    project: Path, server: FakeAnthropicServer
) -> None:
    _prompt(project, "explicit", EXPLICIT)
    _engine(project).run("explicit", inputs={"question": "why?"})
    body = _sent(server)
    assert body["system"] == [
        {"type": "text", "text": "Rules that never change.", "cache_control": HOUR},
        {"type": "text", "text": "\nMore rules."},
    ]
    (message,) = body["messages"]
    assert message["content"] == [
        {"type": "text", "text": "Handbook: chapter one.", "cache_control": FIVE},
        {"type": "text", "text": "\nQuestion: why?"},
    ]


def test_a_5m_breakpoint_before_a_1h_one_is_raised_to_1h(
    project: Path, server: FakeAnthropicServer
) -> None:
    text = "---\ncache: explicit\n---\n## system\nA\n{# cache #}\nB\n{# cache 1h #}\n\n## user\nQ\n"
    _prompt(project, "order", text)
    _engine(project).run("order")
    assert _controls(_sent(server)) == [HOUR, HOUR]


def test_at_most_four_breakpoints_are_sent_the_last_ones(
    project: Path, server: FakeAnthropicServer
) -> None:
    lines = "\n".join(f"part {n}\n{{# cache #}}" for n in range(6))
    _prompt(project, "many", f"---\ncache: explicit\n---\n## user\n{lines}\nQ\n")
    _engine(project).run("many")
    content = _sent(server)["messages"][0]["content"]
    marked = [block["text"].strip() for block in content if "cache_control" in block]
    # The first kept breakpoint's block holds everything before it.
    assert marked == ["part 0\npart 1\npart 2", "part 3", "part 4", "part 5"]


def test_inputs_cannot_add_or_move_a_breakpoint(project: Path, server: FakeAnthropicServer) -> None:
    text = "---\ncache: explicit\n---\n## user\nStatic part.\n{# cache #}\n{{ question }}\n"
    _prompt(project, "guarded", text)
    engine = _engine(project)
    forged = "{# cache #}\n{{ scriptorium_cache_mark }}#0#\nmore"
    engine.run("guarded", inputs={"question": forged, "scriptorium_cache_mark": "\x00"})
    content = _sent(server)["messages"][0]["content"]
    assert [b.get("cache_control") for b in content] == [FIVE, None]
    assert content[1]["text"] == "\n" + forged


def test_caching_changes_no_request_hash_and_no_text(
    project: Path, server: FakeAnthropicServer
) -> None:
    plain = EXPLICIT.replace("cache: {mode: explicit}", "cache: off")
    _prompt(project, "cached", EXPLICIT)
    _prompt(project, "uncached", plain)
    engine = _engine(project)
    cached = engine.run("cached", inputs={"question": "why?"})
    cached_body = _sent(server)
    uncached = engine.run("uncached", inputs={"question": "why?"})
    uncached_body = _sent(server)
    assert cached.prepared.request_hash == uncached.prepared.request_hash
    assert cached.prepared.rendered_prompt_hash == uncached.prepared.rendered_prompt_hash
    assert cached.prepared.definition_hash != uncached.prepared.definition_hash
    assert _text(cached_body["system"]) == uncached_body["system"]
    assert _text(cached_body["messages"][0]["content"]) == uncached_body["messages"][0]["content"]
    assert uncached.prepared.cache is None
    assert cached.prepared.cache is not None
    assert len(cached.prepared.cache.points) == 2


def test_cache_usage_is_split_by_ttl_and_priced_per_class(
    project: Path, server: FakeAnthropicServer
) -> None:
    _prompt(project, "static", BODY, cache="{mode: static, ttl: 1h}")
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 2000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    server.reply("ok", usage=usage)
    result = _engine(project).run("static", inputs={"question": "why?"})
    assert result.usage.cache_creation_input_tokens == 3000
    assert result.usage.cache_write_1h_input_tokens == 2000
    assert result.usage.cache_read_input_tokens == 2000
    # Sonnet, micro-USD per Mtok: input 3, output 15, 5m write 3.75, 1h write 6, read 0.30.
    micro = 100 * 3_000_000 + 10 * 15_000_000 + 1000 * 3_750_000 + 2000 * 6_000_000
    micro += 2000 * 300_000
    assert result.usage.cost_micro == (micro + 500_000) // 1_000_000 == 16_800


def test_count_tokens_asks_the_counting_endpoint_with_the_prompt(
    project: Path, server: FakeAnthropicServer
) -> None:
    _prompt(project, "static", BODY, cache="static")
    server.count_tokens = 321
    try:
        count = _engine(project).count_tokens("static", inputs={"question": "why?"})
    finally:
        server.count_tokens = None
    assert (count.input_tokens, count.estimated, count.provider) == (321, False, "anthropic")
    sent = server.count_requests[-1]
    assert sent.body["model"] == MODEL
    assert sent.body["messages"] == [{"role": "user", "content": "Question: why?"}]
    assert "max_tokens" not in sent.body
    auth = sent.headers.get("x-api-key") or sent.headers.get("authorization", "")
    assert auth.removeprefix("Bearer ") == KEY
    assert server.requests == []  # no generation was made


def test_a_count_route_that_cannot_be_reached_gives_the_estimate_saying_why(project: Path) -> None:
    """Nothing listens on the profile's endpoint: counting is advice, so the local estimate
    stands in, saying why (a run to that endpoint would fail as ``connection``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: connections are refused
    (project / "profiles" / "nowhere.yaml").write_text(
        f"provider: anthropic\nmodel: {MODEL}\nendpoint: http://127.0.0.1:{port}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_retries: 0}\n",
        encoding="utf-8",
    )
    _prompt(project, "plain", BODY)
    count = _engine(project).count_tokens("plain", profile="nowhere", inputs={"question": "x"})
    assert count.estimated
    assert count.input_tokens > 0
    assert count.reason is not None
    assert "connection" in count.reason
    assert KEY not in count.reason


def test_other_providers_get_a_local_estimate_marked_estimated(project: Path) -> None:
    (project / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [ok]}\n", encoding="utf-8"
    )
    _prompt(project, "plain", BODY)
    count = _engine(project).count_tokens("plain", profile="offline", inputs={"question": "why?"})
    assert count.estimated
    assert count.provider == "fake"
    # System (50 characters) + message (14) over four characters a token, plus message framing.
    assert count.input_tokens == 16 + 4


def test_openai_gets_the_definition_hash_as_prompt_cache_key(tmp_path: Path) -> None:
    """Through the real ``openai`` SDK: a caching prompt sends ``prompt_cache_key``, an uncached
    one does not. A compatible server gets it only when its profile says it takes it."""
    from scriptorium._testing.openai_server import FakeOpenAIServer

    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    with FakeOpenAIServer() as server:
        for name, takes in (("takes", "true"), ("plain", "false")):
            (tmp_path / "profiles" / f"{name}.yaml").write_text(
                f"provider: openai\nmodel: gpt-4.1-mini\nendpoint: {server.url}\n"
                f"api_key_env: OPENAI_API_KEY\noptions: {{prompt_cache_key: {takes}}}\n",
                encoding="utf-8",
            )
        (tmp_path / "prompts" / "cached.prompt.md").write_text(
            "---\ncache: static\n---\n" + BODY, encoding="utf-8"
        )
        (tmp_path / "prompts" / "uncached.prompt.md").write_text(BODY, encoding="utf-8")
        engine = Engine(tmp_path, env={"OPENAI_API_KEY": "sk-test-0001"})
        cached = engine.run("cached", profile="takes", inputs={"question": "q"})
        assert server.requests[-1].body["prompt_cache_key"] == cached.prepared.definition_hash
        engine.run("uncached", profile="takes", inputs={"question": "q"})
        assert "prompt_cache_key" not in server.requests[-1].body
        engine.run("cached", profile="plain", inputs={"question": "q"})
        assert "prompt_cache_key" not in server.requests[-1].body
        assert _controls(server.requests[-1].body) == []


def test_prepare_count_tokens_on_the_command_line(
    project: Path, server: FakeAnthropicServer, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from scriptorium.cli import main

    (project / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [ok]}\n", encoding="utf-8"
    )
    _prompt(project, "plain", BODY)
    argv = ["prepare", "plain", "--root", str(project), "-i", "question=why?", "--count-tokens"]
    assert main([*argv, "-p", "offline"]) == 0
    assert "tokens     20 input (estimated locally)" in capsys.readouterr().out
    assert main([*argv, "-p", "offline", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["token_count"] == {
        "input_tokens": 20,
        "estimated": True,
        "provider": "fake",
        "model": "fake-1",
    }
    assert data["request_hash"].startswith("sha256:")


PNG = (Path(__file__).resolve().parents[2] / "examples" / "invoice.png").read_bytes()


def _media_project(project: Path, text: str) -> None:
    (project / "scan.png").write_bytes(PNG)
    (project / "prompts" / "scan.prompt.md").write_text(text, encoding="utf-8")


def test_static_caches_through_leading_media_of_artifacts_declared_cache(
    project: Path, server: FakeAnthropicServer
) -> None:
    """System text, then an unplaced manual scan declared cache: true: one breakpoint, after
    the image block."""
    _media_project(
        project,
        "---\nprofile: claude\ncache: static\nartifacts:\n"
        "  manual: {media_type: image/png, cache: true}\n---\n"
        f"## system\n{STATIC_SYSTEM}\n\n## user\nQuestion: {{{{ question }}}}\n",
    )
    Engine(project, env={"ANTHROPIC_API_KEY": KEY}).run(
        "scan", inputs={"question": "why?"}, artifacts={"manual": "scan.png"}
    )
    body = _sent(server)
    assert body["system"] == STATIC_SYSTEM  # the one breakpoint is further on
    content = body["messages"][0]["content"]
    assert [block["type"] for block in content] == ["image", "text"]
    assert content[0]["cache_control"] == FIVE
    assert _controls(body) == [FIVE]


def test_an_explicit_line_after_a_placed_block_caches_the_block(
    project: Path, server: FakeAnthropicServer
) -> None:
    _media_project(
        project,
        "---\nprofile: claude\ncache: explicit\nartifacts:\n"
        "  manual: {media_type: image/png}\n---\n"
        "## user\nRead this page.\n{{ artifacts.manual.block }}\n{# cache 1h #}\n"
        "Question: {{ question }}\n",
    )
    Engine(project, env={"ANTHROPIC_API_KEY": KEY}).run(
        "scan", inputs={"question": "why?"}, artifacts={"manual": "scan.png"}
    )
    content = _sent(server)["messages"][0]["content"]
    assert [block["type"] for block in content] == ["text", "image", "text"]
    assert content[1]["cache_control"] == HOUR
    assert "cache_control" not in content[0]
    assert "cache_control" not in content[2]
    assert content[2]["text"] == "Question: why?"
