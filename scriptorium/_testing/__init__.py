"""Loopback servers and helpers behind ``scriptorium.testing`` (import that module, not this one)."""
