"""One contract for every profile repository: the file adapter and the in-memory one behave alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from scriptorium.errors import InvalidRequestError, ProfileLoadError
from scriptorium.profile import FileRepository, MemoryRepository, Repository

RepoFactory = Callable[[Mapping[str, str]], Repository]

CLAUDE = """\
provider: anthropic
model: claude-sonnet-4-6
endpoint: null
api_key_env: ANTHROPIC_API_KEY
settings: {max_tokens: 1024, temperature: 0.2, timeout_s: 60, max_retries: 2}
pricing: {input: 3.0, output: 15.0, cache_write: 3.75, cache_read: 0.30}
options: {}
"""

LOCAL = """\
provider: openai
model: llama3
endpoint: http://127.0.0.1:11434/v1
"""

PASTED_KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 2

BAD_NAMES = ["", "Upper", "../x", "a/b", "-x", "a.yaml", "a b", "x" * 65, "a\x00"]


def _file_repo(tmp_path: Path) -> RepoFactory:
    def build(texts: Mapping[str, str]) -> Repository:
        root = tmp_path / "profiles"
        root.mkdir(exist_ok=True)
        for name, text in texts.items():
            (root / f"{name}.yaml").write_text(text, encoding="utf-8")
        return FileRepository(root)

    return build


def _memory_repo(tmp_path: Path) -> RepoFactory:
    return lambda texts: MemoryRepository(dict(texts))


@pytest.fixture(params=["file", "memory"])
def make_repo(request: pytest.FixtureRequest, tmp_path: Path) -> RepoFactory:
    """A factory for a repository holding the given profile YAML texts, once per adapter."""
    factories = {"file": _file_repo, "memory": _memory_repo}
    return factories[request.param](tmp_path)


def test_get_parses_every_section(make_repo: RepoFactory) -> None:
    """A profile comes back with its target, settings, pricing and name."""
    profile = make_repo({"claude": CLAUDE}).get("claude")
    assert profile.name == "claude"
    assert profile.provider == "anthropic"
    assert profile.model == "claude-sonnet-4-6"
    assert profile.endpoint is None
    assert profile.api_key_env == "ANTHROPIC_API_KEY"
    assert profile.settings.given() == {
        "max_tokens": 1024,
        "temperature": 0.2,
        "timeout_s": 60.0,
        "max_retries": 2,
    }
    assert profile.pricing is not None
    assert profile.pricing.cache_read == 0.30


def test_loopback_http_endpoints_are_accepted(make_repo: RepoFactory) -> None:
    """A local server over plain http on 127.0.0.1 is a valid endpoint."""
    assert make_repo({"local": LOCAL}).get("local").endpoint == "http://127.0.0.1:11434/v1"


def test_missing_profile_is_a_load_error(make_repo: RepoFactory) -> None:
    """A name nobody defined raises ProfileLoadError naming the profile."""
    with pytest.raises(ProfileLoadError, match="not found") as info:
        make_repo({"claude": CLAUDE}).get("gpt")
    assert info.value.profile == "gpt"


@pytest.mark.parametrize(
    "text",
    [
        "provider: [unclosed\n",
        "- a list\n",
        "",
        "model: m\n",
        "provider: anthropic\nprovider: openai\n",
        "provider: anthropic\nendpoint: http://example.com/v1\n",
        "provider: anthropic\nsettings: {temperature: 7}\n",
        "provider: anthropic\nname: other\n",
    ],
    ids=[
        "bad-yaml",
        "not-a-mapping",
        "empty",
        "no-provider",
        "duplicate-key",
        "plain-http",
        "out-of-range",
        "derived-key",
    ],
)
def test_invalid_profiles_are_load_errors(make_repo: RepoFactory, text: str) -> None:
    """Malformed or invalid profiles raise ProfileLoadError, not a YAML or pydantic error."""
    with pytest.raises(ProfileLoadError) as info:
        make_repo({"broken": text}).get("broken")
    assert info.value.profile == "broken"


def test_unknown_keys_are_refused(make_repo: RepoFactory) -> None:
    """A key the format does not define is an error naming the key."""
    repo = make_repo({"typo": "provider: fake\nsetings: {max_tokens: 5}\n"})
    with pytest.raises(ProfileLoadError, match="setings: unknown key"):
        repo.get("typo")


def test_a_pasted_key_is_refused_without_being_shown(make_repo: RepoFactory) -> None:
    """A credential pasted into a profile is refused; the error names where, never the value."""
    repo = make_repo({"leaky": f"provider: anthropic\napi_key_env: {PASTED_KEY}\n"})
    with pytest.raises(ProfileLoadError, match="api_key_env") as info:
        repo.get("leaky")
    assert PASTED_KEY not in str(info.value)
    assert PASTED_KEY not in repr(info.value)


def test_list_gives_every_name_sorted(make_repo: RepoFactory) -> None:
    """list() returns all profile names in sorted order."""
    repo = make_repo({"local": LOCAL, "claude": CLAUDE, "broken": "- x\n"})
    assert repo.list() == ["broken", "claude", "local"]


@pytest.mark.parametrize("bad_name", BAD_NAMES)
def test_malformed_names_are_invalid_requests(make_repo: RepoFactory, bad_name: str) -> None:
    """A name outside the grammar is InvalidRequestError before anything is looked up."""
    with pytest.raises(InvalidRequestError) as info:
        make_repo({"claude": CLAUDE}).get(bad_name)
    assert info.value.field == "profile"


def test_repeated_gets_return_the_same_profile(make_repo: RepoFactory) -> None:
    """The parsed profile is reused (it is frozen), not parsed again on every get."""
    repo = make_repo({"claude": CLAUDE})
    assert repo.get("claude") is repo.get("claude")
