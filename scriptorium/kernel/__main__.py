"""Entry point of ``python -m scriptorium.kernel`` (see :mod:`scriptorium.kernel`).

The stop signals are recorded from the first line on (:mod:`scriptorium.kernel.signals`), before
the rest of the kernel is imported, so a supervisor's SIGTERM during start-up ends the run by the
kernel's table rather than killing the process with no line written.
"""

from __future__ import annotations

if __name__ == "__main__":
    import scriptorium.kernel.signals as signals

    signals.install()

    from scriptorium.kernel.worker import main

    raise SystemExit(main())
