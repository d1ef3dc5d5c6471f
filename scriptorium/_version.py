"""The package version, in a module of its own so the CLI, the HTTP API and the observer can read
it without importing the ``scriptorium`` package (which names them back)."""

__version__ = "0.1.0"
