"""Whether a profile's server enforces a JSON schema (``scriptorium verify --structured``).

Many servers accept a ``json_schema`` and do not hold the model to it. The probe asks for an
object whose one required key has a name no model would guess and whose value is one of two
made-up tokens, in a prompt that invites a different answer, with a small output budget: a
model left unconstrained almost surely answers something else. The verdict:

- ``enforced``: the answer is exactly an object of that shape;
- ``not enforced``: an answer came back that does not fit (whatever it is);
- ``refused``: the server rejected the request's form (400 or 422, ``invalid_request``).

Any other failure (a bad key, no server) is the error a plain ``verify`` raises. Pure functions:
the engine sends the request (:meth:`scriptorium.Engine.verify_structured`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import SecretStr

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

__all__ = [
    "PROBE_KEY",
    "PROBE_MAX_TOKENS",
    "PROBE_SCHEMA",
    "PROBE_TOKENS",
    "PROBE_USER",
    "StructuredVerdict",
    "Verdict",
    "judge",
    "probe_request",
    "refused",
]

Verdict = Literal["enforced", "not enforced", "refused"]

#: The required key and the values it may take: nothing a model says unprompted.
PROBE_KEY = "zqx_vorpal_marker"
PROBE_TOKENS = ("qlimber-7", "yxothe-3")
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {PROBE_KEY: {"type": "string", "enum": list(PROBE_TOKENS)}},
    "required": [PROBE_KEY],
    "additionalProperties": False,
}
#: A prompt inviting another answer, so an unconstrained model gives one.
PROBE_USER = "Name your favourite colour and say why, as JSON with keys colour and reason."
#: Enough for the enforced answer (a dozen tokens), too little for an essay.
PROBE_MAX_TOKENS = 64
_SHOWN_CHARS = 300


@dataclass(frozen=True)
class StructuredVerdict:
    """What the probe found: the verdict, what was sent (the schema, the output budget, the
    prompt, and the provider's structured-output members as they went out where it says), the
    answer's text (cut to 300 characters) or the refusal's message, and why."""

    verdict: Verdict
    why: str
    sent: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None

    @property
    def enforced(self) -> bool:
        """Whether the server held the model to the schema."""
        return self.verdict == "enforced"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``verify --structured --json``)."""
        return {
            "verdict": self.verdict,
            "why": self.why,
            "sent": self.sent,
            "answer": self.answer,
        }


def probe_request(
    target: Target,
    api_key: SecretStr | str | None,
    *,
    options: dict[str, Any] | None = None,
    source: str | None = None,
) -> LLMRequest:
    """The probe's request: the schema asked for natively (the server's own structured output),
    no retries, 30 seconds."""
    return LLMRequest(
        target=target,
        api_key=api_key,
        messages=(Message(role="user", content=PROBE_USER),),
        settings=ExecutionSettings(max_tokens=PROBE_MAX_TOKENS, max_retries=0, timeout_s=30.0),
        structured_output=StructuredOutput(schema_=PROBE_SCHEMA, name="probe", strategy="native"),
        options=dict(options or {}),
        profile_source=source,
    )


def sent_of(request: LLMRequest, wire: dict[str, Any] | None) -> dict[str, Any]:
    """What the probe sent, for the report."""
    sent: dict[str, Any] = {
        "schema": PROBE_SCHEMA,
        "strategy": "native",
        "max_tokens": request.settings.max_tokens,
        "user": PROBE_USER,
    }
    if wire:
        sent["wire"] = wire
    return sent


def refused(err: LLMGenerateError) -> bool:
    """Whether ``err`` is the server rejecting the request's form (not a key or a network)."""
    return err.reason == "invalid_request" or err.http_status in (400, 422)


def _fits(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {PROBE_KEY}
        and isinstance(value[PROBE_KEY], str)
        and value[PROBE_KEY] in PROBE_TOKENS
    )


def judge(text: str, sent: dict[str, Any]) -> StructuredVerdict:
    """The verdict on an answer ``text`` (see the module)."""
    shown = text[:_SHOWN_CHARS]
    try:
        value = json.loads(text)
    except ValueError:
        return StructuredVerdict(
            "not enforced", "the answer is not JSON: the schema was not applied", sent, shown
        )
    if _fits(value):
        return StructuredVerdict(
            "enforced", f"the answer is an object with only {PROBE_KEY} from the enum", sent, shown
        )
    return StructuredVerdict(
        "not enforced",
        f"the answer is JSON that does not fit the schema (required {PROBE_KEY}, one of "
        f"{', '.join(PROBE_TOKENS)}, nothing else)",
        sent,
        shown,
    )


def refusal(err: LLMGenerateError, sent: dict[str, Any]) -> StructuredVerdict:
    """The verdict when the server rejected the request."""
    status = f"HTTP {err.http_status}" if err.http_status else err.reason
    return StructuredVerdict(
        "refused", f"the server rejected the structured-output form ({status})", sent, err.message
    )
