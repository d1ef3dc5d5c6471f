"""``python -m scriptorium.kernel``: scriptorium as a JSON-line worker for supervising engines.

The supervisor spawns the process, reads ``{"op": "ready", "pid": ...}``, writes one line
``{"op": "init", "payload": {...}}`` and reads JSON lines back until the process exits: the
``iteration_start``, a ``log`` line per model call, the ``charge`` lines that drive its ledger,
``iteration_done`` (with zeros: the charges already counted), and ``exit``. The provider comes from
``CC_LLM_PROVIDER`` (``mock``, ``anthropic`` or ``profile``). ``internal_docs/kernel.md`` describes the protocol;
``internal_docs/kernel.md`` explains the rules and the failure table.

Importing this package is cheap (standard library only); so is starting the process.
"""

from __future__ import annotations

from scriptorium.kernel.worker import EXIT_COMPLETED, EXIT_CONFIG, EXIT_FAILED, main, serve

__all__ = ["EXIT_COMPLETED", "EXIT_CONFIG", "EXIT_FAILED", "main", "serve"]
