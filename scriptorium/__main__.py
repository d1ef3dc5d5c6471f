"""``python -m scriptorium``: the ``scriptorium`` command."""

from __future__ import annotations

import sys

from scriptorium.cli import main

if __name__ == "__main__":
    sys.exit(main())
