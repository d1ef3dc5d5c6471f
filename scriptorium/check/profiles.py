"""``check`` over the profiles: file names, links, pasted keys, profiles that do not load (a fallback
chain naming a profile that does not load, or looping, included: a run refuses such a profile),
and what the provider's spec says about a profile (its provider known, its options, a model where
one is needed, its media options); and provider plugins that do not load."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from scriptorium._suggest import did_you_mean
from scriptorium._version import install_hint
from scriptorium.check.files import ProjectFiles
from scriptorium.check.problems import Problem
from scriptorium.check.secrets import profile_secrets
from scriptorium.check.view import ProjectView
from scriptorium.errors import ScriptoriumError
from scriptorium.llm.registry import ENTRY_POINT_GROUP, ProviderSpec, Route
from scriptorium.profile.chain import fallback_chain
from scriptorium.profile.model import is_insecure_endpoint, is_valid_profile_name

__all__ = ["PROFILE_SUFFIXES", "plugin_problems", "profile_problems"]

PROFILE_SUFFIXES = (".yaml", ".yml")


def profile_problems(view: ProjectView, files: ProjectFiles, names: set[str]) -> Iterator[Problem]:
    """Every problem of the profile files, then of each profile in ``names`` (those listed)."""
    try:
        filenames = sorted(os.listdir(files.profiles_dir))
    except OSError:
        filenames = []
    for filename in filenames:
        for suffix in PROFILE_SUFFIXES:
            name = filename.removesuffix(suffix)
            if not filename.endswith(suffix):
                continue
            if not is_valid_profile_name(name):
                yield Problem(
                    files.shown(files.profiles_dir / filename),
                    "profile_name",
                    f"{name!r} is not a valid profile name (lowercase letters, digits, "
                    "'-' and '_'); the file cannot be used",
                )
            else:
                yield from files.link_problems(files.profile_files, filename, "profiles/")
    for name in sorted(names):
        yield from _check_profile(view, files, name)


def plugin_problems(view: ProjectView) -> Iterator[Problem]:
    """A warning per provider plugin that does not load (it breaks only the profiles that name
    its provider, and those are reported on their own)."""
    for message in view.providers.problems:
        yield Problem(ENTRY_POINT_GROUP, "provider_plugin", message)


def _profile_file(files: ProjectFiles, name: str) -> Path:
    for suffix in PROFILE_SUFFIXES:
        path = files.profiles_dir / (name + suffix)
        if path.exists():
            return path
    return files.profiles_dir / (name + PROFILE_SUFFIXES[0])


def _installation_problems(
    file: str, provider: str, spec: ProviderSpec, route: Route | None
) -> Iterator[Problem]:
    """What a run of this profile would miss on this machine: its provider's SDK or its route's
    libraries, with the install line."""
    for module, extra in spec.missing_libraries(route):
        yield Problem(
            file,
            "provider_not_installed",
            f"provider {provider!r} needs the {module!r} package, which is not installed: "
            + install_hint(extra),
        )


def _check_profile(view: ProjectView, files: ProjectFiles, name: str) -> Iterator[Problem]:
    path = _profile_file(files, name)
    file = files.shown(path)
    secrets = list(profile_secrets(files.profile_files, path.name, file))
    yield from secrets
    try:
        profile = view.profiles.get(name)
    except ScriptoriumError as err:
        # A profile holding a secret is refused for that reason: said once, above.
        if not secrets:
            yield Problem(file, "profile_invalid", err.message)
        return
    try:
        fallback_chain(profile, view.profiles.get)
    except ScriptoriumError as err:
        yield Problem(file, "profile_invalid", err.message)
    known = view.known_providers
    if known is not None and profile.provider not in known:
        yield Problem(
            file,
            "profile_invalid",
            f"unknown provider {profile.provider!r}; known: {', '.join(known)}"
            + did_you_mean(profile.provider, known),
        )
    if profile.allow_insecure_http:
        where = profile.endpoint if profile.endpoint else "its endpoint"
        if profile.endpoint is None or is_insecure_endpoint(profile.endpoint):
            yield Problem(
                file,
                "insecure_endpoint",
                f"allow_insecure_http: {where} may be plain http to another host; keys and "
                "prompts travel unencrypted (use https, or keep the gateway on this machine)",
            )
    spec = view.providers.find(profile.provider)
    if spec is None:
        return
    problem = None if profile.endpoint is None else spec.check_endpoint(profile.endpoint)
    if problem is not None:
        yield Problem(file, "profile_invalid", problem)
    messages = spec.option_problems(profile.options, profile.source)
    for message in messages:
        yield Problem(file, "profile_invalid", message)
    route = None
    if not messages:
        try:
            route = spec.route_for(profile.options, profile.name)
        except ScriptoriumError:
            route = None  # said by the option problems above
    if route is not None and profile.api_key_env and route.no_key_env is not None:
        yield Problem(file, "profile_invalid", route.no_key_env)
    yield from _installation_problems(file, profile.provider, spec, route)
    if spec.needs_model and not profile.model:
        yield Problem(
            file, "profile_invalid", f"provider {profile.provider!r} needs a model; none set"
        )
    if "media" in profile.options:
        try:
            spec.media_limits(profile.endpoint, profile.options)
        except ScriptoriumError as err:
            yield Problem(file, "profile_invalid", err.message)
