"""How a failure reaches an MCP client.

Protocol requests (prompts/get, completion) fail with a JSON-RPC error: invalid params when the
request is at fault (an argument that fails the prompt's ``inputs`` schema, a prompt that does not
exist, a missing artifact), internal error when the server's own set-up is (a broken prompt file, a
key variable unset). A tool call that fails is a result with ``isError: true`` instead, so the model
calling it can read what went wrong and try again. Either way the error carries the sentinel's
``code`` and its safe structured fields, and its message with the server's directories shown as
``.`` and anything shaped like a credential scrubbed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_jsonable_python

import scriptorium.errors as errors
from scriptorium.redaction import public_message

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "error_data",
    "is_callers_fault",
    "rpc_code",
]

#: JSON-RPC's codes, as the protocol uses them (the values are fixed by JSON-RPC 2.0).
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: The structured fields of a sentinel that may travel to a client: none holds a secret.
_SAFE_FIELDS = (
    "reason",
    "field",
    "prompt_id",
    "profile",
    "artifact",
    "env_var",
    "retry_after_s",
    "http_status",
    "attempts",
    "provider",
    "model",
    "issues",
    "path",
)


def is_callers_fault(err: errors.ScriptoriumError) -> bool:
    """Whether the request is what is wrong (invalid params), not the server's set-up."""
    if isinstance(err, errors.PromptLoadError | errors.ProfileLoadError):
        return err.reason == "not_found"
    return isinstance(
        err,
        errors.InvalidRequestError
        | errors.ProfileRequiredError
        | errors.ArtifactLoadError
        | errors.PromptRenderError,
    )


def rpc_code(err: errors.ScriptoriumError) -> int:
    """The JSON-RPC error code of a sentinel raised by a protocol request."""
    return INVALID_PARAMS if is_callers_fault(err) else INTERNAL_ERROR


def error_data(err: errors.ScriptoriumError, roots: Iterable[str] = ()) -> dict[str, Any]:
    """``{"code", "message", ...safe fields}``: the sentinel as a client sees it."""
    attrs = err.attrs()
    fields = {k: attrs[k] for k in _SAFE_FIELDS if k in attrs}
    if isinstance(fields.get("path"), str) and os.path.isabs(fields["path"]):
        # Where the server keeps its files is not the client's business.
        del fields["path"]
    # Issues and the like are models: the data goes out as plain JSON.
    safe = to_jsonable_python(fields, fallback=str)
    return {"code": err.code, "message": public_message(err.message, roots=roots), **safe}
