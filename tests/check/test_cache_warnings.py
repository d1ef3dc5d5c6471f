"""``check``'s warnings about prompt caching: breakpoints that cannot all be sent, breakpoints after
input-dependent text, cached prefixes shorter than the model caches; warnings never fail ``check``."""

from __future__ import annotations

from pathlib import Path

from scriptorium import Engine
from scriptorium.check.problems import Problem


def _project(tmp_path: Path, prompt: str, model: str = "claude-sonnet-4-6") -> list[Problem]:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: {model}\napi_key_env: ANTHROPIC_API_KEY\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "p.prompt.md").write_text(prompt, encoding="utf-8")
    return Engine(tmp_path).check()


LONG = "A rule that never changes. " * 200  # about 1,350 tokens


def _kinds(problems: list[Problem]) -> list[str]:
    return [p.kind for p in problems]


def test_check_is_quiet_about_a_sound_static_prompt(tmp_path: Path) -> None:
    prompt = f"---\nprofile: claude\ncache: static\n---\n## system\n{LONG}\n\n## user\nHi.\n"
    assert _project(tmp_path, prompt) == []


def test_check_warns_about_more_than_four_breakpoints(tmp_path: Path) -> None:
    parts = "\n".join(f"{LONG}\n{{# cache #}}" for _ in range(5))
    prompt = f"---\nprofile: claude\ncache: explicit\n---\n## user\n{parts}\nQ\n"
    problems = _project(tmp_path, prompt)
    assert _kinds(problems) == ["cache_breakpoints"]
    assert problems[0].severity == "warning"
    assert problems[0].to_dict()["severity"] == "warning"


def test_check_warns_about_a_breakpoint_after_input_dependent_text(tmp_path: Path) -> None:
    prompt = (
        "---\nprofile: claude\ncache: explicit\ninputs: {type: object, properties: "
        f"{{name: {{type: string}}}}}}\n---\n## user\nHello {{{{ name }}}}\n{LONG}\n"
        "{# cache #}\nQ\n"
    )
    assert _kinds(_project(tmp_path, prompt)) == ["cache_after_input"]


def test_check_warns_about_a_prefix_shorter_than_the_model_caches(tmp_path: Path) -> None:
    prompt = "---\nprofile: claude\ncache: static\n---\n## system\nShort rules.\n\n## user\nHi.\n"
    problems = _project(tmp_path, prompt, model="claude-haiku-4-5")
    assert _kinds(problems) == ["cache_too_short"]
    assert "4096" in problems[0].message


def test_warnings_do_not_fail_check(tmp_path: Path) -> None:
    from scriptorium.cli import main

    prompt = "---\nprofile: claude\ncache: static\n---\n## system\nShort rules.\n\n## user\nHi.\n"
    _project(tmp_path, prompt)
    assert main(["check", "--root", str(tmp_path)]) == 0


def test_the_minimum_is_the_profiles_provider_s_own(tmp_path: Path) -> None:
    """A Claude model name behind a provider that states no cache minimum (an OpenAI-compatible
    gateway, a fake) gets no "too short" warning: the minimum is the provider spec's to say, not
    Anthropic's table applied to every profile."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "gw.yaml").write_text(
        "provider: openai\nmodel: claude-haiku-4-5\nendpoint: http://127.0.0.1:4000/v1\n"
        "api_key_env: GATEWAY_KEY\n",
        encoding="utf-8",
    )
    (tmp_path / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-haiku-4-5\napi_key_env: ANTHROPIC_API_KEY\n",
        encoding="utf-8",
    )
    short = "---\nprofile: {}\ncache: static\n---\n## system\nShort rules.\n\n## user\nHi.\n"
    (tmp_path / "prompts" / "gw.prompt.md").write_text(short.format("gw"), encoding="utf-8")
    (tmp_path / "prompts" / "claude.prompt.md").write_text(short.format("claude"), encoding="utf-8")
    problems = Engine(tmp_path).check()
    assert [(Path(p.file).name, p.kind) for p in problems] == [
        ("claude.prompt.md", "cache_too_short")
    ]
