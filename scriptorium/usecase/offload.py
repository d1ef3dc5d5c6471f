"""CPU-heavy steps of async runs, off the event loop.

An async run shares its loop with everything else the process serves (the HTTP server's other
requests, its health probe). Two of its steps can take long enough to stall them: preparing a
request that carries a lot of content (decoding, hashing and rendering it, walking media headers,
reading files) and judging a long output (a lenient reading of a hostile text, schema validation
of a large value). The async drivers run those two in a worker thread when the rule of each step
says it is heavy (:func:`~scriptorium.usecase.prepare.heavy_to_prepare`,
:func:`~scriptorium.validate.validator.heavy_to_validate`); everything else stays on the loop,
where a small run pays nothing for a thread hop.

The work is the same function either way, given the same arguments; the thread inherits the
caller's context (the run's log scope), and the loop awaits it, so nothing else of the run moves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from scriptorium.llm.model import LLMResponse
from scriptorium.usecase.flow import Outcome, RunFlow
from scriptorium.usecase.repair import RepairResult
from scriptorium.validate.validator import heavy_to_validate

__all__ = ["judged", "off_loop"]

T = TypeVar("T")


async def off_loop(heavy: bool, work: Callable[[], T]) -> T:
    """``work()``, in a worker thread when ``heavy``, else right here on the loop."""
    if heavy:
        return await asyncio.to_thread(work)
    return work()


async def judged(flow: RunFlow, outcome: Outcome) -> None:
    """``flow.send(outcome)``, the judgement of a long output in a worker thread."""
    response = outcome.response if isinstance(outcome, RepairResult) else outcome
    heavy = isinstance(response, LLMResponse) and heavy_to_validate(response.text)
    await off_loop(heavy, lambda: flow.send(outcome))
