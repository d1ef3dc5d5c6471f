"""What a profile's provider and endpoint must be, decided when a run loads it: a provider the
router knows (a typo is a load error naming the closest, before any key is looked up), the SDK's
base-URL variable for a profile without an endpoint, plain http only where the profile allows it,
and an endpoint the provider can use (no ``/v1`` on an Anthropic base URL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, Overrides, RunRequest, errors
from scriptorium.cli import main
from scriptorium.testing import FakeClient

KEY = "sk-test-profiles-at-load-0000"


def _project(root: Path, **profiles: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text("Hello!\n")
    for name, text in profiles.items():
        (root / "profiles" / f"{name}.yaml").write_text(text)
    return root


TYPO = "provider: antropic\nmodel: claude-sonnet-4-6\napi_key_env: UNSET_KEY_FOR_TYPO\n"
PLAIN = "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: AT_LOAD_KEY\n"


def test_a_provider_typo_is_a_load_error_naming_the_closest_before_any_key_lookup(
    tmp_path: Path,
) -> None:
    engine = Engine(_project(tmp_path, typo=TYPO), env={})
    with pytest.raises(errors.ProfileLoadError) as info:
        engine.prepare("greet", profile="typo")
    message = str(info.value)
    assert "unknown provider 'antropic'" in message
    assert "did you mean 'anthropic'?" in message
    assert "openai" in message  # the known providers are named
    assert "UNSET_KEY_FOR_TYPO" not in message  # not reported as a missing key


def test_an_injected_client_serves_any_provider_name(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path, typo=TYPO), client=FakeClient(["hi"]), env={})
    with pytest.raises(errors.APIKeyEnvMissingError):
        engine.prepare("greet", profile="typo")  # loaded: only its key is missing
    engine = Engine(
        _project(tmp_path / "b", typo=TYPO),
        client=FakeClient(["hi"]),
        env={"UNSET_KEY_FOR_TYPO": KEY},
    )
    assert engine.run("greet", profile="typo").output.text == "hi"


@pytest.mark.parametrize("command", [["prepare", "greet", "-p", "typo"], ["run", "greet"]])
def test_the_cli_exits_4_for_a_provider_typo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    root = _project(tmp_path, typo=TYPO)
    (root / "prompts" / "greet.prompt.md").write_text("---\nprofile: typo\n---\nHello!\n")
    assert main([*command, "--root", str(root)]) == 4
    assert "did you mean 'anthropic'" in capsys.readouterr().err


def test_list_and_check_agree_with_prepare_about_a_provider_typo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path, typo=TYPO)
    assert main(["list", "--root", str(root), "--json"]) == 0
    listed = capsys.readouterr().out
    assert '"code": "profile_load"' in listed
    assert "did you mean 'anthropic'" in listed
    assert main(["check", "--root", str(root)]) == 1
    assert "did you mean 'anthropic'" in capsys.readouterr().out


def test_a_profile_without_endpoint_takes_the_sdks_base_url_variable(tmp_path: Path) -> None:
    engine = Engine(
        _project(tmp_path, plain=PLAIN),
        env={"AT_LOAD_KEY": KEY, "ANTHROPIC_BASE_URL": "https://gateway.example/anthropic"},
    )
    target = engine.prepare("greet", profile="plain").target
    assert target.endpoint == "https://gateway.example/anthropic"
    assert target.endpoint_source == "env"
    # The profile's own endpoint and an override win over the variable.
    with_endpoint = PLAIN + "endpoint: https://own.example\n"
    engine = Engine(
        _project(tmp_path / "b", own=with_endpoint),
        env={"AT_LOAD_KEY": KEY, "ANTHROPIC_BASE_URL": "https://gateway.example"},
    )
    assert engine.prepare("greet", profile="own").target.endpoint_source == "profile"
    overridden = engine.prepare(
        RunRequest(
            prompt_id="greet",
            profile="own",
            api_key=KEY,
            overrides=Overrides(endpoint="https://other.example"),
        )
    ).target
    assert (overridden.endpoint, overridden.endpoint_source) == (
        "https://other.example",
        "override",
    )


def test_prepare_shows_the_endpoint_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, plain="provider: openai\nmodel: m\napi_key_env: AT_LOAD_KEY\n")
    monkeypatch.setenv("AT_LOAD_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/v1")
    assert main(["prepare", "greet", "--root", str(root), "-p", "plain"]) == 0
    assert "endpoint   https://gateway.example/v1 (env)" in capsys.readouterr().out


def test_plain_http_to_a_private_gateway_needs_allow_insecure_http(tmp_path: Path) -> None:
    gateway = (
        "provider: openai\nmodel: m\napi_key_env: AT_LOAD_KEY\nendpoint: http://litellm:4000/v1\n"
    )
    engine = Engine(_project(tmp_path, gw=gateway), env={"AT_LOAD_KEY": KEY})
    with pytest.raises(errors.ProfileLoadError, match="allow_insecure_http"):
        engine.prepare("greet", profile="gw")
    allowed = gateway + "allow_insecure_http: true\n"
    engine = Engine(_project(tmp_path / "b", gw=allowed), env={"AT_LOAD_KEY": KEY})
    assert engine.prepare("greet", profile="gw").target.endpoint == "http://litellm:4000/v1"


def test_the_base_url_variable_is_held_to_the_same_rule(tmp_path: Path) -> None:
    engine = Engine(
        _project(tmp_path, plain=PLAIN),
        env={"AT_LOAD_KEY": KEY, "ANTHROPIC_BASE_URL": "http://10.1.2.3:4000"},
    )
    with pytest.raises(errors.InvalidRequestError, match="ANTHROPIC_BASE_URL") as info:
        engine.prepare("greet", profile="plain")
    assert "allow_insecure_http" in str(info.value)


def test_allow_insecure_http_leaves_other_profiles_hashes_alone(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path, plain=PLAIN), env={"AT_LOAD_KEY": KEY})
    before = engine.prepare("greet", profile="plain").profile_hash
    explicit = Engine(
        _project(tmp_path / "b", plain=PLAIN + "allow_insecure_http: false\n"),
        env={"AT_LOAD_KEY": KEY},
    )
    assert explicit.prepare("greet", profile="plain").profile_hash == before


def test_check_warns_about_a_profile_that_allows_insecure_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = (
        "provider: openai\nmodel: m\napi_key_env: AT_LOAD_KEY\n"
        "endpoint: http://litellm:4000/v1\nallow_insecure_http: true\n"
    )
    root = _project(tmp_path, gw=gateway)
    assert main(["check", "--root", str(root)]) == 0  # a warning, not a failure
    out = capsys.readouterr().out
    assert "insecure_endpoint (warning)" in out
    assert "http://litellm:4000/v1" in out


@pytest.mark.parametrize("endpoint", ["https://gw.example/v1", "https://gw.example/anthropic/v1/"])
def test_an_anthropic_endpoint_ending_in_v1_is_refused_saying_to_drop_it(
    tmp_path: Path, endpoint: str
) -> None:
    engine = Engine(
        _project(tmp_path, v1=PLAIN + f"endpoint: {endpoint}\n"), env={"AT_LOAD_KEY": KEY}
    )
    with pytest.raises(errors.ProfileLoadError, match="drop the trailing /v1"):
        engine.prepare("greet", profile="v1")
    with pytest.raises(errors.InvalidRequestError, match="drop the trailing /v1"):
        engine.prepare(
            RunRequest(
                prompt_id="greet",
                profile="v1",
                api_key=KEY,
                overrides=Overrides(endpoint="https://other.example/v1"),
            )
        )
    from_env = Engine(
        _project(tmp_path / "b", plain=PLAIN),
        env={"AT_LOAD_KEY": KEY, "ANTHROPIC_BASE_URL": endpoint},
    )
    with pytest.raises(errors.InvalidRequestError, match="ANTHROPIC_BASE_URL"):
        from_env.prepare("greet", profile="plain")


def test_an_openai_endpoint_keeps_its_v1(tmp_path: Path) -> None:
    profile = (
        "provider: openai\nmodel: m\napi_key_env: AT_LOAD_KEY\nendpoint: https://gw.example/v1\n"
    )
    engine = Engine(_project(tmp_path, gpt=profile), env={"AT_LOAD_KEY": KEY})
    assert engine.prepare("greet", profile="gpt").target.endpoint == "https://gw.example/v1"
