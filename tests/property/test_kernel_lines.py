"""Hypothesis over the kernel's input lines: deep nesting, control and separator characters,
invalid UTF-8, huge numbers, byte order marks, several lines. Whatever arrives, the kernel writes
protocol lines only and ends by its table: completed (0) or refused with one error log (2), never
an internal error, never a traceback, never a key."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium.kernel import EXIT_COMPLETED, EXIT_CONFIG, serve

KEY = "sk-kernel-lines-canary-41d7e9c2"
ENV = {
    "CC_LLM_PROVIDER": "mock",
    "CC_LLM_MOCK_RESPONSE_JSON": json.dumps({"text": "ok", "tokens_input": 2}),
    "SOME_API_KEY": KEY,
}


def _run(stdin: bytes) -> tuple[int, list[dict[str, Any]]]:
    out = io.BytesIO()
    code = serve(io.BytesIO(stdin), out, ENV, pid=9)
    text = out.getvalue().decode("ascii")
    assert KEY not in text
    return code, [json.loads(line) for line in text.splitlines()]


def _check(code: int, messages: list[dict[str, Any]]) -> None:
    assert messages[0] == {"op": "ready", "pid": 9}
    if code == EXIT_CONFIG:
        assert [m["op"] for m in messages[1:]] in (["log"], ["iteration_start", "log"])
        error = messages[-1]["error"]
        assert error["code"] != "scriptorium", error  # a bug of ours would carry the base code
        assert "RecursionError" not in json.dumps(error)
    else:
        assert code == EXIT_COMPLETED, messages
        assert messages[-1]["exit_kind"] == "completed"


def _nest(depth: int, value: str, kind: str) -> str:
    opening, closing = ("[", "]") if kind == "array" else ('{"a":', "}")
    return opening * depth + value + closing * depth


@st.composite
def hostile_values(draw: st.DrawFn) -> str:
    """JSON text (or almost) for a value: deep nesting, odd strings, odd numbers."""
    kind = draw(st.sampled_from(["deep", "string", "number", "raw"]))
    if kind == "deep":
        depth = draw(st.sampled_from([10, 900, 1500, 20_000, 100_000]))
        return _nest(
            depth,
            draw(st.sampled_from(["1", '"x"', "null", ""])),
            draw(st.sampled_from(["array", "object"])),
        )
    if kind == "string":
        text = draw(
            st.text(
                alphabet=st.sampled_from('ab\u2028\u0085\x00\x1b\ud800\ufeff"\\ \n'), max_size=20
            )
        )
        return json.dumps(text)
    if kind == "number":
        return draw(st.sampled_from(["1e999", "-0", "9" * 5000, "NaN", "Infinity", "1.5e-400"]))
    return draw(st.text(max_size=30))


@st.composite
def init_lines(draw: st.DrawFn) -> bytes:
    """An init line with a hostile value at some place of the envelope or payload."""
    value = draw(hostile_values())
    place = draw(st.sampled_from(["line", "payload", "metadata", "user", "model", "inputs", "op"]))
    raw = {"model": '"m-1"', "user": '"hi"'}
    if place == "line":
        text = value
    elif place == "payload":
        text = '{"op": "init", "payload": ' + value + "}"
    elif place == "op":
        text = '{"op": ' + value + ', "payload": {"model": "m", "user": "u"}}'
    elif place == "inputs":
        text = '{"op": "init", "payload": {"prompt_id": "p", "inputs": {"x": ' + value + "}}}"
    else:
        fields = {**raw, place: value}
        body = ", ".join(f'"{k}": {v}' for k, v in fields.items())
        text = '{"op": "init", "payload": {' + body + "}}"
    data = text.encode("utf-8", "surrogatepass")
    prefix = draw(st.sampled_from([b"", b"\n", b"\xef\xbb\xbf", b"  \r\n"]))
    suffix = draw(st.sampled_from([b"\n", b"", b"\r\n", b"\n" + b'{"op": "init"}\n', b"\xff\n"]))
    return prefix + data + suffix


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(init_lines())
def test_any_init_line_ends_by_the_table(stdin: bytes) -> None:
    _check(*_run(stdin))


@pytest.mark.parametrize("depth", [100_000, 500_000])
def test_the_deepest_lines_are_malformed_inits(depth: int) -> None:
    code, messages = _run(_nest(depth, "1", "array").encode() + b"\n")
    assert code == EXIT_CONFIG
    assert messages[-1]["error"]["code"] == "invalid_request"
