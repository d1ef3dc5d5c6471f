"""The one piece of work a kernel does: a raw generation or a prompt run through the Engine.

Both are built (and their requests validated) before the iteration starts, and both send their
request through the same metered client, so the ``calling <model>`` line and the charges come
from one place whatever the payload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scriptorium.errors import InvalidRequestError, LLMGenerateError, translate
from scriptorium.kernel.payload import PromptPayload, RawPayload
from scriptorium.kernel.providers import MeteredClient, Provider
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

__all__ = ["Job", "Outcome", "prompt_job", "raw_job"]


@dataclass(frozen=True)
class Outcome:
    """What a completed job produced: the output text, warnings for the supervisor's log, and for
    a prompt run the whole ``RunResult`` in its JSON form (sent as the ``result`` line)."""

    text: str
    warnings: tuple[str, ...] = field(default=())
    result: dict[str, Any] | None = None


#: Runs the work; raises a ``ScriptoriumError`` on failure.
Job = Callable[[], Outcome]


def raw_job(payload: RawPayload, provider: Provider, client: MeteredClient) -> Job:
    """One user message to ``payload.model`` through the provider's client."""
    with translate(InvalidRequestError, "invalid raw payload", field="payload"):
        request = LLMRequest(
            target=Target(
                provider=provider.name,
                model=payload.model,
                endpoint=provider.endpoint,
                explicit=("provider", "model"),
            ),
            api_key=provider.api_key,
            system=payload.system,
            messages=(Message(role="user", content=payload.user),),
            settings=ExecutionSettings(
                max_tokens=payload.max_tokens,
                temperature=payload.temperature,
                reasoning=payload.reasoning,
                reasoning_budget_tokens=payload.reasoning_budget_tokens,
            ),
            metadata=payload.metadata,
        )
    secret = None if provider.api_key is None else provider.api_key.get_secret_value()

    def run() -> Outcome:
        # The one boundary of a raw call: clients raise LLMGenerateError, anything else is theirs.
        with translate(
            LLMGenerateError,
            "calling the model",
            secrets=[secret],
            reason="server_error",
            provider=provider.name,
            model=payload.model,
        ):
            response = client.generate(request)
        if not isinstance(response, LLMResponse):
            raise LLMGenerateError(
                f"the client returned {type(response).__name__}, not an LLMResponse",
                reason="invalid_response",
                provider=provider.name,
            )
        return Outcome(response.text)

    return run


def prompt_job(
    payload: PromptPayload, provider: Provider, client: MeteredClient, env: Mapping[str, str]
) -> Job:
    """``payload.prompt_id`` run by an Engine over ``payload.root`` (default: the working
    directory) whose every LLM call goes to the metered client. With a provider that brings its
    own key and endpoint (``anthropic``), they are given as the request's key and endpoint
    override; an endpoint the payload's ``overrides`` state wins."""
    from scriptorium.engine import Engine
    from scriptorium.observe import observer_from_env
    from scriptorium.usecase.model import Overrides, RunRequest

    with translate(InvalidRequestError, "invalid prompt-run payload", field="overrides"):
        overrides = Overrides.model_validate(payload.all_overrides())
    if provider.endpoint is not None and overrides.endpoint is None:
        overrides = overrides.model_copy(update={"endpoint": provider.endpoint})
    with translate(InvalidRequestError, "invalid prompt-run payload", field="payload"):
        request = RunRequest(
            prompt_id=payload.prompt_id,
            profile=payload.profile,
            inputs=payload.inputs,
            artifacts=payload.artifacts,
            overrides=overrides,
            api_key=provider.api_key,
            metadata=payload.metadata,
        )
    engine = Engine(payload.root or ".", client=client, env=env, observer=observer_from_env(env))

    def run() -> Outcome:
        result = engine.run(request)
        warnings: tuple[str, ...] = ()
        if not result.validation.valid:
            issues = "; ".join(
                f"{i.path or '/'}: {i.message}" for i in result.validation.issues[:3]
            )
            warnings = (f"output failed its {result.validation.format} contract: {issues}",)
        return Outcome(result.output.text, warnings, result.model_dump(mode="json", by_alias=True))

    return run
