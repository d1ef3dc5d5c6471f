"""Moved to :mod:`scriptorium.llm.media.wire`; kept as a re-export for one release."""

from scriptorium.llm.media.wire import MediaWire, install_hook

__all__ = ["MediaWire", "install_hook"]
