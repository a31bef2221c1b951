"""Reading traces in worker processes: the same rows, problems and file states as reading them in one process, and a
worker that dies stops the run with what was read before stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from monitorkit import ingest, rows, traces_settings
from test_otel import CTX, App, otlp_line

import ragpipe.monitor.ingest as ingest_module
import ragpipe.monitor.rows as rows_module
from ragpipe.monitor.rows import ReaderDied, RowPool
from ragpipe.settings import Settings

GOLDEN = ROOT / "bench" / "data" / "first_contact" / "realdocs3_golden.jsonl"
RECORDED = sorted((ROOT / "tests" / "fixtures" / "traces").glob("*.jsonl"))
RECORDED_LINES = b"".join(path.read_bytes() for path in RECORDED).splitlines(keepends=True)


def settings(root: Path, **monitor: Any) -> Settings:
    return traces_settings(root, GOLDEN, **{"min_traces": 1, **monitor})


def mixed_file() -> bytes:
    """Recorded traces of real answerers, bad lines, a repeated id, and an OpenTelemetry trace whose spans arrive on
    two lines far apart (its root span last)."""
    recorded = RECORDED_LINES
    app = App()
    app.openinference("What was revenue in Q2 2023?", "Revenue was $44.8 million.", [CTX])
    retriever, llm, root = app.take()
    app.openllmetry("Who is the CFO?", "Not in the documents.")
    other = app.take()
    bad = [b"{oops\n", b'{"question": "q", "answer": "a", "contexts": []}\n', b"\xff\xfe not text\n"]
    return b"".join(
        [*recorded[:100], otlp_line([retriever, llm]).encode(), *bad, *recorded[100:230], recorded[5],
         otlp_line([root, *other]).encode(), *recorded[230:]]
    )  # fmt: skip


def stored(s: Settings) -> list[Any]:
    return [
        rows(s, "SELECT * EXCLUDE (ingested_at) FROM production_traces ORDER BY trace_id"),
        rows(s, "SELECT file, line, problem FROM trace_problems ORDER BY file, line"),
        rows(s, "SELECT * EXCLUDE (updated_at) FROM trace_files ORDER BY file"),
    ]


def test_worker_processes_store_exactly_what_one_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, many = settings(tmp_path / "one", workers=1), settings(tmp_path / "many", workers=2)
    content = mixed_file()  # once: its spans' ids are random
    for s in (one, many):
        (s.monitor.traces_dir / "day.jsonl").write_bytes(content)
    monkeypatch.setattr(ingest_module, "POOL_BYTES", 0)  # every run is large enough, every block too
    monkeypatch.setattr(ingest_module, "POOL_LINES", 1)
    monkeypatch.setattr(ingest_module, "BLOCK_LINES", 120)  # the OpenTelemetry trace waits across blocks
    monkeypatch.setattr(rows_module, "CHUNK_LINES", 25)
    started: list[int] = []
    real_init = RowPool.__init__

    def counted(self: RowPool, workers: int, reader: Any) -> None:
        started.append(workers)
        real_init(self, workers, reader)

    monkeypatch.setattr(RowPool, "__init__", counted)
    a, b = ingest(one), ingest(many)
    assert started == [2]  # the second run read in two worker processes, the first in its own
    assert {**a.stats(), "seconds": 0} == {**b.stats(), "seconds": 0}
    assert (a.traces, a.repeated, a.new_problems, a.not_questions) == (len(RECORDED_LINES) + 2, 1, 3, 0)
    assert stored(one) == stored(many)
    assert rows(many, "SELECT count(*) FROM production_traces WHERE question LIKE '%Q2 2023%'") == [(1,)]


def test_a_reader_process_that_dies_stops_the_run_and_the_next_run_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = settings(tmp_path, workers=2)
    recorded = RECORDED_LINES[:300]
    (s.monitor.traces_dir / "day.jsonl").write_bytes(b"".join(recorded))
    monkeypatch.setattr(ingest_module, "POOL_BYTES", 0)
    monkeypatch.setattr(ingest_module, "POOL_LINES", 1)
    monkeypatch.setattr(ingest_module, "BLOCK_LINES", 100)
    monkeypatch.setattr(rows_module, "CHUNK_LINES", 20)
    real_map, blocks = RowPool.map, []

    def dies_in_the_second_block(self: RowPool, name: str, jobs: Any) -> Any:
        blocks.append(name)
        if len(blocks) == 2:
            self.workers[1][0].kill()  # killed as the out-of-memory killer would
        return real_map(self, name, jobs)

    monkeypatch.setattr(RowPool, "map", dies_in_the_second_block)
    with pytest.raises(ReaderDied, match=r"exit status -9.*run again to go on.*\[monitor\]\.workers = 1"):
        ingest(s)
    assert rows(s, "SELECT count(*), min(line), max(line) FROM production_traces") == [(100, 1, 100)]
    monkeypatch.setattr(RowPool, "map", real_map)
    again = ingest(s)
    assert (again.traces, again.repeated) == (200, 0)
    assert rows(s, "SELECT count(DISTINCT trace_id), max(line) FROM production_traces") == [(300, 300)]
