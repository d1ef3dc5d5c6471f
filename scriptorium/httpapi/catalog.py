"""``GET /v1/prompts``, ``GET /v1/prompts/{id}`` and ``GET /v1/profiles``: what the project offers.

A listing never fails because one file is broken: that entry carries an ``error`` instead (the
same choice as ``scriptorium list``). Asking for a broken prompt by id fails like a run would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from scriptorium.errors import ScriptoriumError
from scriptorium.httpapi.responses import json_response
from scriptorium.httpapi.schemas import (
    ProfileList,
    ProfileSummary,
    PromptDetail,
    PromptList,
    PromptOutput,
    PromptSummary,
)
from scriptorium.redaction import public_message

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.httpapi.service import Service

__all__ = ["profiles_route", "prompt_route", "prompts_route"]


def _engine(request: Request) -> Engine:
    service: Service = request.app.state.service
    return service.engine


def _problem(err: ScriptoriumError, roots: tuple[str, ...]) -> dict[str, str]:
    return {"code": err.code, "message": public_message(err.message, roots=roots)}


def _dump(model: PromptSummary | ProfileSummary) -> dict[str, Any]:
    data = model.model_dump(mode="json")
    if data.get("error") is None:
        data.pop("error", None)
    return data


def _prompt_summary(engine: Engine, prompt_id: str, roots: tuple[str, ...]) -> PromptSummary:
    try:
        definition = engine.prompts.get(prompt_id)
    except ScriptoriumError as err:
        return PromptSummary(id=prompt_id, error=_problem(err, roots))
    return PromptSummary(
        id=prompt_id,
        description=definition.description,
        version=definition.version,
        profile=definition.profile,
        output_format=definition.output.format,
    )


async def prompts_route(request: Request) -> Response:
    """``GET /v1/prompts``."""
    service: Service = request.app.state.service
    engine = service.engine
    listing = PromptList(
        prompts=[_prompt_summary(engine, p, service.roots) for p in engine.list_prompts()]
    )
    return json_response({"prompts": [_dump(p) for p in listing.prompts]})


def prompt_detail(engine: Engine, prompt_id: str) -> PromptDetail:
    """One prompt as a client sees it: its inputs schema, artifacts and loaded output schema."""
    from scriptorium.usecase.prepare import definition_hash, load_output_schema

    definition = engine.prompts.get(prompt_id)
    loaded = load_output_schema(definition, engine.validator)
    spec = definition.output
    return PromptDetail(
        id=definition.id,
        description=definition.description,
        version=definition.version,
        profile=definition.profile,
        definition_hash=definition_hash(definition, loaded),
        inputs=definition.inputs,
        artifacts={
            name: artifact.model_dump(mode="json")
            for name, artifact in definition.artifacts.items()
        },
        output=PromptOutput(
            format=spec.format,
            schema_=None if loaded is None else loaded.document,
            repair_attempts=spec.repair_attempts,
            strategy=spec.strategy,
            parse=spec.parse,
        ),
    )


async def prompt_route(request: Request) -> Response:
    """``GET /v1/prompts/{id}`` (the id may hold slashes: ``extract/contact``)."""
    detail = prompt_detail(_engine(request), request.path_params["id"])
    return json_response(detail.model_dump(mode="json", by_alias=True))


def _profile_summary(engine: Engine, name: str, roots: tuple[str, ...]) -> ProfileSummary:
    try:
        profile = engine.profiles.get(name)
    except ScriptoriumError as err:
        return ProfileSummary(name=name, error=_problem(err, roots))
    # Deliberately not the endpoint or api_key_env: what a caller may know is where a profile
    # runs, not how the server reaches it or authenticates.
    return ProfileSummary(name=name, provider=profile.provider, model=profile.model)


async def profiles_route(request: Request) -> Response:
    """``GET /v1/profiles``."""
    service: Service = request.app.state.service
    engine = service.engine
    listing = ProfileList(
        profiles=[_profile_summary(engine, n, service.roots) for n in engine.list_profiles()]
    )
    return json_response({"profiles": [_dump(p) for p in listing.profiles]})
