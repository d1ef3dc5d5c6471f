"""scriptorium: execute prompt definitions against LLMs.

    from scriptorium import Engine
    result = Engine("path/to/project").run("summarize", inputs={"audience": "board"})

Importing the package is cheap: names are loaded on first use, and no provider SDK, ``jsonschema``
or ``jinja2`` is imported until something needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from scriptorium import errors
from scriptorium._version import __version__

__all__ = [
    "ArtifactContent",
    "AttemptStarted",
    "Done",
    "Engine",
    "LLMRequest",
    "LLMResponse",
    "Overrides",
    "PartialValue",
    "PreparedRun",
    "ReasoningDelta",
    "RunRequest",
    "RunResult",
    "ScriptoriumError",
    "StreamEvent",
    "TextDelta",
    "Usage",
    "ValidationResult",
    "__version__",
    "errors",
]

_LAZY = {
    "ArtifactContent": "scriptorium.artifact.model",
    "Engine": "scriptorium.engine",
    "LLMRequest": "scriptorium.llm.model",
    "LLMResponse": "scriptorium.llm.model",
    "Usage": "scriptorium.llm.model",
    "Overrides": "scriptorium.usecase.model",
    "PreparedRun": "scriptorium.usecase.model",
    "RunRequest": "scriptorium.usecase.model",
    "RunResult": "scriptorium.usecase.model",
    "ValidationResult": "scriptorium.validate.model",
    "AttemptStarted": "scriptorium.usecase.events",
    "Done": "scriptorium.usecase.events",
    "PartialValue": "scriptorium.usecase.events",
    "ReasoningDelta": "scriptorium.usecase.events",
    "StreamEvent": "scriptorium.usecase.events",
    "TextDelta": "scriptorium.usecase.events",
}

ScriptoriumError = errors.ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.artifact.model import ArtifactContent
    from scriptorium.engine import Engine
    from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
    from scriptorium.usecase.events import (
        AttemptStarted,
        Done,
        PartialValue,
        ReasoningDelta,
        StreamEvent,
        TextDelta,
    )
    from scriptorium.usecase.model import Overrides, PreparedRun, RunRequest, RunResult
    from scriptorium.validate.model import ValidationResult


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scriptorium' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
