"""Checking a value against a JSON Schema: the ``Validator`` adapter and what it is built from.

- ``validator``: :class:`SchemaValidator`, loading, compiling and caching schemas, and the verdicts;
- ``files``: schema files read inside the prompts root, cached by signature;
- ``refs``: ``$ref`` walking confined to the prompts root, and the registry it builds;
- ``patterns``: ``pattern`` keywords matched in linear time (RE2, or a checked ``re``);
- ``formats``: the ``format`` values that are asserted;
- ``fast``: the optional ``jsonschema-rs`` acceptor that may only say "valid".

:class:`SchemaValidator` is loaded on first access, so importing this package (or ``patterns``,
which the evals use for ``regex`` expectations) does not import ``jsonschema``.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.validate.schema.validator import SchemaValidator

__all__ = ["SchemaValidator"]

__getattr__ = lazy_getattr(__name__, {"SchemaValidator": "validator"})
