"""Reading traces in worker processes: the same rows, problems and file states as reading them in one process, and a
worker that dies stops the run with what was read before stored."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, write_settings
from faultkit import ragpipe_cli
from killkit import children, running
from monitorkit import ingest, rows, traces_settings
from test_otel import CTX, App, otlp_line

import ragpipe.monitor.ingest as ingest_module
import ragpipe.monitor.rows as rows_module
from ragpipe.monitor.rows import ReaderDied, RowPool
from ragpipe.settings import Settings, load_settings

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


def test_a_block_ends_at_block_bytes_also_in_a_file_read_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines of megabytes (an OpenTelemetry export request) make blocks of a few lines: memory stays flat."""
    s = settings(tmp_path, workers=1)
    path = s.monitor.traces_dir / "day.jsonl"
    first, then = RECORDED_LINES[:60], RECORDED_LINES[60:120]
    path.write_bytes(b"".join(first))
    limit = 10 * max(map(len, RECORDED_LINES[:120]))
    monkeypatch.setattr(ingest_module, "BLOCK_BYTES", limit)

    def cuts(lines: list[bytes]) -> list[int]:  # lines per block: a block ends at the line that takes it to the limit
        out, size, count = [], 0, 0
        for line in lines:
            size, count = size + len(line), count + 1
            if size >= limit:
                out, size, count = [*out, count], 0, 0
        return [*out, count] if count else out

    real_write, blocks = ingest_module._write, []

    def counted(con: Any, name: str, tables: Any, *rest: Any) -> None:
        blocks.append(sum(t.num_rows for t in tables))
        real_write(con, name, tables, *rest)

    monkeypatch.setattr(ingest_module, "_write", counted)
    assert ingest(s).traces == 60
    assert blocks == cuts(first) and len(blocks) > 2
    blocks.clear()
    with path.open("ab") as f:
        f.write(b"".join(then))
    assert ingest(s).traces == 60  # from where the first run stopped, in blocks counted from there
    assert blocks == cuts(then)


def test_ragpipe_monitor_killed_while_its_workers_read_leaves_none_behind_and_the_next_run_completes(
    tmp_path: Path,
) -> None:
    """SIGKILL to the process alone, as the out-of-memory killer sends it: its workers exit by themselves, the
    warehouse holds whole blocks (every stored trace is counted in its file's state), the next run reads the rest."""
    sys.path.insert(0, str(ROOT))
    from bench.monitor import make_traces

    root = tmp_path / "project"
    (root / "traces").mkdir(parents=True)
    sections = {"warehouse": {"dir": "warehouse"}, "corpus": {"dir": "corpus"}, "golden": {"path": str(GOLDEN)},
                "monitor": {"traces_dir": "traces", "workers": 2, "min_traces": 1}}  # fmt: skip
    write_settings(root / "ragpipe.toml", sections)
    make_traces(root / "traces", 40000, 4)  # 68 MB: read by the workers
    run = ragpipe_cli(root, "monitor")
    run.wait_for(r"traces so far", 300)  # a first block is stored
    workers = children(run.p.pid)
    assert len([w for w in workers if "ragpipe.monitor.rows" in (Path("/proc") / str(w) / "cmdline").read_text()]) == 2
    os.kill(run.p.pid, signal.SIGKILL)
    run.p.wait(30)
    deadline = time.monotonic() + 20
    while any(running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [w for w in workers if running(w)] == []
    s = load_settings(root / "ragpipe.toml")
    stored, counted = rows(s, "SELECT (SELECT count(*) FROM production_traces), sum(lines_read) FROM trace_files")[0]
    assert 0 < stored < 40000 and stored == counted
    code, out = ragpipe_cli(root, "monitor").finish(600)
    assert code == 0, out[-3000:]
    assert rows(s, "SELECT count(DISTINCT trace_id), count(*) FROM production_traces") == [(40000, 40000)]
    assert rows(s, "SELECT sum(lines_read) FROM trace_files") == [(40000,)]


def test_each_stored_block_is_logged_with_its_file_traces_and_bad_lines(tmp_path: Path) -> None:
    from ragpipe.monitor import ingest_traces
    from ragpipe.warehouse import connect

    s = settings(tmp_path, workers=1)
    (s.monitor.traces_dir / "day.jsonl").write_bytes(b"".join(RECORDED_LINES[:2]) + b"{oops\n" + RECORDED_LINES[2])
    (s.monitor.traces_dir / "more.jsonl").write_bytes(b"{oops\n[]\n")
    logged: list[str] = []
    with connect(s.duckdb_path) as con:
        ingest_traces(s, con, log=logged.append)
    assert logged == ["day.jsonl: 3 traces so far, 1 bad line in this block",
                      "more.jsonl: 0 traces so far, 2 bad lines in this block"]  # fmt: skip


@pytest.mark.parametrize("drop", [(), ("email",), ("contexts.source",)])
def test_the_stored_contexts_are_json_dumps_of_them_also_when_read_again(drop: tuple[str, ...]) -> None:
    """The contexts are written out by hand and each made once (a chunk comes back in trace after trace): the text
    is json.dumps' all the same, whatever the texts hold and whichever trace reads them again."""
    import json

    from ragpipe.monitor.rows import _stored
    from ragpipe.monitor.traces import trace_from

    contexts = [{"text": 'He said "12 %"\nthen \u00e9\u4e2d \\ \U0001f600', "source": "a.pdf#3"}, "plain text",
                {"text": "plain text", "id": 7}]  # fmt: skip
    for _ in range(2):
        trace = trace_from({"time": "2026-12-01T10:00:00Z", "question": "q?", "answer": "a.", "contexts": contexts})
        keep = [("text", "source")[: 1 if drop == ("contexts.source",) else 2]] * 3
        want = [{k: v for k, v in (("text", t), ("source", s)) if k in keep[i]}
                for i, (t, s) in enumerate(zip(trace.contexts, trace.sources))]  # fmt: skip
        assert _stored(trace, drop)["contexts"] == json.dumps(want)
