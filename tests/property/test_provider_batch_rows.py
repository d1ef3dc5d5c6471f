"""``batch --provider-batch`` over generated row sets (duplicates, failing, invalid and expiring
rows, long texts, small chunks) against the loopback fake provider: as many output lines as
input lines, in order, each distinct request sent once per attempt it needed."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium import Engine, RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.batch.job import custom_id_of
from scriptorium.cli import main
from tests.batch_project import KEY, KEY_ENV, flagged, label_text, make_project

WORDS = st.sampled_from(["alpha", "beta", "gamma", "BROKEN", "INVALID", "LATE", "x" * 3000])


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(texts=st.lists(WORDS, min_size=1, max_size=12), batch_size=st.integers(1, 5))
def test_output_lines_are_input_lines_and_no_request_is_sent_twice(
    server: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    texts: list[str],
    batch_size: int,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server.clear()
    server.batches.text = label_text
    server.batches.order = "shuffled"
    server.batches.error_rows(flagged("BROKEN"))
    server.batches.expire_rows(flagged("LATE"))
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp) / "project", "anthropic", server.url)
        rows, out = Path(tmp) / "rows.jsonl", Path(tmp) / "out.jsonl"
        lines = [json.dumps({"id": n, "inputs": {"text": t}}) for n, t in enumerate(texts)]
        rows.write_text("\n".join(lines) + "\n", "utf-8")
        command = [
            "batch", "label", "--root", str(root), "--in", str(rows), "--out", str(out),
            "--provider-batch", "--poll-s", "0.01", "--batch-size", str(batch_size),
        ]  # fmt: skip

        first = main(command)
        records = [json.loads(x) for x in out.read_text("utf-8").splitlines()]
        assert [r["id"] for r in records] == list(range(len(texts)))
        engine = Engine(root)
        hashes = [
            engine.prepare(RunRequest(prompt_id="label", inputs={"text": t})).request_hash
            for t in texts
        ]
        assert [r["request_hash"] for r in records] == hashes
        for record, text in zip(records, texts, strict=True):
            if text in ("BROKEN", "LATE"):
                assert "error" in record
            else:
                assert record["valid"] is (text != "INVALID")
        assert first == (1 if {"BROKEN", "LATE", "INVALID"} & set(texts) else 0)
        sent = Counter(server.batches.submitted_ids())
        assert set(sent) == {custom_id_of(h) for h in hashes}
        assert set(sent.values()) == {1}

        # Started again: answered lines are kept, failed ones sent again (the late ones now run).
        main(command)
        again = [json.loads(x) for x in out.read_text("utf-8").splitlines()]
        assert len(again) == len(texts)
        for record, text in zip(again, texts, strict=True):
            assert ("error" in record) is (text == "BROKEN")
        resent = Counter(server.batches.submitted_ids()) - sent
        retried = {
            custom_id_of(h) for h, t in zip(hashes, texts, strict=True) if t in ("BROKEN", "LATE")
        }
        assert set(resent) == retried
        assert set(resent.values()) <= {1}
