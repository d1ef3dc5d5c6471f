"""``scriptorium run --stream``: the output written to stdout as the model writes it.

Text mode writes each delta as it arrives (flushed), ends the text with a newline, and for a JSON
prompt then writes the parsed value on a line of its own. A repair starts again on a new line,
announced on stderr. The model's reasoning, when the provider returns it, goes to stderr as it
arrives, and only when stderr is a terminal (someone is watching): stdout stays the answer alone,
and a script's stderr stays quiet. ``--json`` writes every event as one JSON line instead
(``reasoning_delta`` events included; the last one, of type ``done``, holds the whole
``RunResult``). Invalid output exits 1, as ``run`` does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from scriptorium.cli.output import Reporter
from scriptorium.errors import OutputInvalidError

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.usecase.model import RunRequest

__all__ = ["run_streamed"]

_JSON = ("json", "json_schema")


def run_streamed(engine: Engine, request: RunRequest, reporter: Reporter) -> int:
    """Stream one run to ``reporter``; the exit status."""
    from scriptorium.usecase.events import AttemptStarted, ReasoningDelta, TextDelta

    out = reporter.out
    show_reasoning = reporter.err.isatty()
    with engine.stream(request) as stream:
        if reporter.json_mode:
            for event in stream:
                out.write(event.model_dump_json(by_alias=True) + "\n")
                out.flush()
        else:
            open_line = thinking = False
            for event in stream:
                if thinking and not isinstance(event, ReasoningDelta):
                    reporter.note("")  # the reasoning ends on its own line
                    thinking = False
                if isinstance(event, TextDelta):
                    out.write(event.text)
                    out.flush()
                    open_line = not event.text.endswith("\n")
                elif isinstance(event, ReasoningDelta) and show_reasoning:
                    reporter.err.write(event.text)
                    reporter.err.flush()
                    thinking = True
                elif isinstance(event, AttemptStarted) and event.kind == "repair":
                    if open_line:
                        out.write("\n")
                        open_line = False
                    reporter.note(f"scriptorium: output invalid; repair attempt {event.attempt}")
            if open_line:
                out.write("\n")
        result = stream.result()
    value = result.validation.value
    if not reporter.json_mode and result.prepared.output.format in _JSON and value is not None:
        out.write(json.dumps(value, ensure_ascii=False) + "\n")
    out.flush()
    try:
        result.raise_for_validation()
    except OutputInvalidError as err:
        return reporter.failure(err)
    return 0
