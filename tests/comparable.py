"""What two runs of the same response share: the result without ids, times and latency."""

from __future__ import annotations

from typing import Any

from scriptorium.usecase.model import RunResult

#: Per-request identifiers a provider (or fake server) hands out: different for every request.
_IDS = ("request_id", "response_id")


def comparable(result: RunResult) -> dict[str, Any]:
    """``result`` as JSON data without run id, timestamps, durations and provider request ids."""
    data: dict[str, Any] = result.model_dump(mode="json")
    for key in ("run_id", "started_at", "finished_at", "duration_ms"):
        data.pop(key)
    for attempt in data["attempts"]:
        attempt.pop("latency_ms")
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key in _IDS:
            metadata.pop(key, None)
    return data
