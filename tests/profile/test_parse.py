"""The profile format: endpoint and key-variable rules, and no value ever echoed in an error."""

from __future__ import annotations

import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import InvalidRequestError, ProfileLoadError
from scriptorium.profile.parse import find_secret, parse_profile, parse_profile_data

KEY = "sk-ant-api03-" + "Zy9Xw8Vu7Ts6Rq5Po4Nm" * 2
OPENAI_KEY = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90" * 2


def _explain(err: BaseException) -> str:
    """Everything a log could show of an error: message, repr and the printed chain."""
    return str(err) + repr(err) + "".join(traceback.format_exception(err))


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://api.example.com/v1",
        "http://127.0.0.1:8080",
        "http://localhost:11434/v1",
        "http://[::1]:9000",
    ],
)
def test_https_or_loopback_endpoints_are_accepted(endpoint: str) -> None:
    """https anywhere, plain http only on loopback."""
    profile = parse_profile(f"provider: openai\nendpoint: '{endpoint}'\n", name="p")
    assert profile.endpoint == endpoint


@pytest.mark.parametrize(
    "endpoint",
    ["http://example.com/v1", "ftp://127.0.0.1", "https://user:pw@example.com", "not a url"],
)
def test_other_endpoints_are_refused(endpoint: str) -> None:
    """Plain http to a remote host, other schemes and URLs with credentials fail to load."""
    with pytest.raises(ProfileLoadError, match="endpoint"):
        parse_profile(f"provider: openai\nendpoint: '{endpoint}'\n", name="p")


@pytest.mark.parametrize("value", [KEY, OPENAI_KEY])
def test_api_key_env_holding_a_key_is_refused_without_echo(value: str) -> None:
    """A key pasted into api_key_env is refused and appears nowhere in the error or its chain."""
    with pytest.raises(ProfileLoadError, match="api_key_env") as info:
        parse_profile(f"provider: anthropic\napi_key_env: {value}\n", name="p")
    assert value not in _explain(info.value)


def test_api_key_env_must_look_like_a_variable_name() -> None:
    """A name with spaces or dashes is refused; the value is not repeated."""
    with pytest.raises(ProfileLoadError, match="api_key_env") as info:
        parse_profile("provider: anthropic\napi_key_env: my key-var\n", name="p")
    assert "my key-var" not in info.value.message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (f"provider: fake\nmodel: {KEY}\n", "model"),
        (f"provider: fake\noptions: {{headers: {{Authorization: Bearer {KEY}}}}}\n", "options"),
        (f"provider: fake\nsettings: {{stop_sequences: [x, {KEY}]}}\n", "stop_sequences[1]"),
        (f"provider: fake\noptions: {{{KEY}: 1}}\n", "options (a key)"),
    ],
)
def test_a_pasted_key_anywhere_is_refused_by_location(text: str, where: str) -> None:
    """Every string, keys included, is checked; the error gives the path, never the value."""
    with pytest.raises(ProfileLoadError) as info:
        parse_profile(text, name="p")
    assert where in info.value.message
    assert KEY not in _explain(info.value)
    assert info.value.__cause__ is None  # nothing holding the value is chained


def test_a_yaml_error_near_a_key_does_not_show_the_line() -> None:
    """YAML errors report line and column; the printed chain carries no source snippet."""
    text = f"provider: fake\nmodel: {KEY}: oops\n"
    with pytest.raises(ProfileLoadError, match="line 2") as info:
        parse_profile(text, name="p")
    assert KEY not in _explain(info.value)


def test_an_unknown_tag_shaped_like_a_key_is_not_quoted() -> None:
    """Even a YAML problem that would quote a token from the file leaves a key-like one out."""
    with pytest.raises(ProfileLoadError) as info:
        parse_profile(f"provider: !{KEY} fake\n", name="p")
    assert KEY not in _explain(info.value)


def test_pydantic_messages_lose_their_input_values() -> None:
    """Model errors are rebuilt from location and rule; ``input_value=...`` never appears."""
    with pytest.raises(ProfileLoadError) as info:
        parse_profile("provider: fake\nsettings: {temperature: 123456789}\n", name="p")
    assert "settings.temperature" in info.value.message
    assert "123456789" not in info.value.message
    assert "input_value" not in info.value.message


def test_settings_are_parsed_with_presence_kept() -> None:
    """Only the settings written in the file count as given."""
    profile = parse_profile("provider: fake\nsettings: {temperature: 0}\n", name="p")
    assert profile.settings.given() == {"temperature": 0.0}


def test_source_is_kept_but_not_hashed() -> None:
    """The source path is available for relative options, and left out of the hash form."""
    profile = parse_profile("provider: fake\n", name="p", source="/x/profiles/p.yaml")
    assert profile.source == "/x/profiles/p.yaml"
    assert "source" not in profile.hash_form()


def test_a_mapping_goes_through_the_same_checks() -> None:
    """parse_profile_data applies the secret refusal and the model to an in-memory mapping."""
    assert parse_profile_data({"provider": "fake"}, name="p").provider == "fake"
    with pytest.raises(ProfileLoadError):
        parse_profile_data({"provider": "fake", "model": KEY}, name="p")


@pytest.mark.parametrize("name", ["", "Claude", "../x", "a/b", "a" * 65])
def test_malformed_names_are_invalid_requests(name: str) -> None:
    """The profile name grammar is checked before anything else."""
    with pytest.raises(InvalidRequestError):
        parse_profile("provider: fake\n", name=name)


def test_find_secret_returns_paths_only() -> None:
    """find_secret names the location of the first credential-like string, or None."""
    assert find_secret({"a": ["x", {"b": KEY}]}) == "a[1].b"
    assert find_secret({"a": ["fine", 1, None]}) is None


def test_a_key_pasted_as_a_profile_name_is_not_echoed() -> None:
    """A profile name that looks like a credential is refused without repeating it."""
    with pytest.raises(InvalidRequestError) as info:
        parse_profile("provider: fake\n", name=KEY)
    assert KEY not in _explain(info.value)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="-#:[]{}&*!|>'\"\n .abcprovidefkm0123%@`\t\\", max_size=120))
def test_any_text_parses_or_is_a_load_error(text: str) -> None:
    """Whatever the file holds, parsing returns a profile or raises ProfileLoadError."""
    try:
        parse_profile(text, name="p")
    except ProfileLoadError:
        pass
