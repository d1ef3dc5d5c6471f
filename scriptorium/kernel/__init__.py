"""``python -m scriptorium.kernel``: scriptorium as a JSON-line worker for supervising engines.

The supervisor spawns the process, reads ``{"op": "ready", "pid": ...}``, writes one line
``{"op": "init", "payload": {...}}`` and reads JSON lines back until the process exits: the
``iteration_start``, a ``log`` line per model call, the ``charge`` lines that drive its ledger,
``iteration_done`` (with zeros: the charges already counted), and ``exit``. The provider comes from
``CC_LLM_PROVIDER`` (``mock``, ``anthropic`` or ``profile``). ``internal_docs/kernel.md`` describes the protocol;
``internal_docs/kernel.md`` explains the rules and the failure table.

Importing this package is cheap (standard library only), and loads nothing until a name is used,
so ``python -m scriptorium.kernel`` installs its signal handlers before anything else is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.kernel.worker import EXIT_COMPLETED, EXIT_CONFIG, EXIT_FAILED, main, serve

__all__ = ["EXIT_COMPLETED", "EXIT_CONFIG", "EXIT_FAILED", "main", "serve"]

__getattr__ = lazy_getattr(__name__, dict.fromkeys(__all__, "worker"))
