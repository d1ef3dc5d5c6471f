"""The judge: a prompt bundled with scriptorium (``judge.prompt.md`` beside this module, schema
``{pass: bool, reason: str}``) that grades a case's output against the case's rubric.

A judge's run is an ordinary run of that prompt on the profile the case names: prepared, hashed,
priced, observed and served from a cassette like any other. Test runs see it under the id
:data:`JUDGE_PROMPT_ID` through :class:`JudgePrompts`, which serves it beside the project's own
prompts. Its verdict is read from the validated value; a failed run or an answer without a
boolean ``pass`` is a judge error, never a failure of the case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.errors import ScriptoriumError
from scriptorium.evals.bundled import bundled_prompt
from scriptorium.evals.report import JudgeVerdict, RunError
from scriptorium.hashing import canonical_json

if TYPE_CHECKING:
    from scriptorium.evals.model import JudgeSpec
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.promptdef.repository import Repository
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "JUDGE_FILE",
    "JUDGE_PROMPT_ID",
    "JudgePrompts",
    "judge_definition",
    "judge_request",
    "run_error",
    "verdict",
]

#: The id the bundled judge prompt runs under (a project prompt of that id is not served).
JUDGE_PROMPT_ID = "scriptorium/judge"
#: The bundled prompt file, in this package.
JUDGE_FILE = "judge.prompt.md"


def judge_definition() -> PromptDefinition:
    """The bundled judge prompt (read and parsed once)."""
    return bundled_prompt(JUDGE_FILE, JUDGE_PROMPT_ID)


class JudgePrompts:
    """A prompt repository serving the project's prompts and, under :data:`JUDGE_PROMPT_ID`, the
    bundled judge (listed only by the project's repository: it is not one of its prompts)."""

    def __init__(self, inner: Repository) -> None:
        self._inner = inner

    def get(self, prompt_id: str) -> PromptDefinition:
        """The judge for its id, else the project's prompt."""
        if prompt_id == JUDGE_PROMPT_ID:
            return judge_definition()
        return self._inner.get(prompt_id)

    def list(self) -> list[str]:
        """The project's prompt ids."""
        return self._inner.list()


def judge_request(spec: JudgeSpec, output: str, inputs: dict[str, Any]) -> RunRequest:
    """The judge's run for one output: the rubric, the output text and (when the case had any)
    the case's inputs as JSON, on the judge's profile."""
    from scriptorium.usecase.model import RunRequest

    judge_inputs: dict[str, Any] = {"rubric": spec.rubric, "output": output}
    if inputs:
        judge_inputs["context"] = canonical_json(inputs).decode("utf-8")
    return RunRequest(prompt_id=JUDGE_PROMPT_ID, profile=spec.profile, inputs=judge_inputs)


def run_error(err: ScriptoriumError) -> RunError:
    """A sentinel as the report keeps it."""
    reason = getattr(err, "reason", None)
    return RunError(
        code=err.code, message=err.message, reason=reason if isinstance(reason, str) else None
    )


def verdict(spec: JudgeSpec, outcome: RunResult | ScriptoriumError) -> JudgeVerdict:
    """What a judge run said: its verdict, or the judge error (the run failed, or its answer is
    not a valid ``{pass, reason}`` object), with what it cost either way."""
    if isinstance(outcome, ScriptoriumError):
        return JudgeVerdict(profile=spec.profile, error=run_error(outcome))
    cost = outcome.usage.cost_micro
    value = outcome.validation.value
    passed = value.get("pass") if isinstance(value, dict) else None
    if not outcome.validation.valid or not isinstance(passed, bool):
        issues = "; ".join(i.message for i in outcome.validation.issues[:3])
        return JudgeVerdict(
            profile=spec.profile,
            error=RunError(
                code="judge_no_verdict",
                message="the judge's answer holds no verdict"
                + (f": {issues}" if issues else " (no boolean 'pass')"),
            ),
            cost_micro=cost,
            request_hash=outcome.prepared.request_hash,
        )
    reason = value.get("reason") if isinstance(value, dict) else None
    return JudgeVerdict(
        profile=spec.profile,
        passed=passed,
        reason=reason if isinstance(reason, str) else None,
        cost_micro=cost,
        request_hash=outcome.prepared.request_hash,
    )
