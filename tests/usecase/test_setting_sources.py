"""A provider refusing a setting says where the setting came from (the profile, the request's
overrides, the default), so the user knows what to change: ``--reasoning high`` refused because of
the profile's temperature names the profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, Overrides, RunRequest, errors
from scriptorium.cli import main


def _project(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("---\nprofile: gpt\n---\nHello\n")
    (root / "profiles" / "gpt.yaml").write_text(
        "provider: openai\nmodel: gpt-5\napi_key_env: K\nsettings: {temperature: 0.2}\n"
    )
    return root


def test_a_refused_profile_setting_names_the_profile(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path), env={"K": "sk-setting-source-0001"})
    request = RunRequest(prompt_id="hi", overrides=Overrides(reasoning="high"))
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare(request)
    assert caught.value.field == "settings.temperature"
    assert "settings.temperature comes from profile 'gpt'" in caught.value.message


def test_a_refused_override_says_it_is_the_requests(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path), env={"K": "sk-setting-source-0001"})
    request = RunRequest(
        prompt_id="hi", overrides=Overrides(reasoning="high", top_p=0.5, temperature=1)
    )
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare(request)
    assert "comes from this request's overrides" in caught.value.message


def test_the_cli_says_so_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", "sk-setting-source-0001")
    root = _project(tmp_path)
    assert main(["prepare", "hi", "--root", str(root), "--reasoning", "high"]) == 2
    assert "settings.temperature comes from profile 'gpt'" in capsys.readouterr().err
