"""Entry point of ``python -m scriptorium.kernel`` (see :mod:`scriptorium.kernel`)."""

from __future__ import annotations

from scriptorium.kernel.worker import main

if __name__ == "__main__":
    raise SystemExit(main())
