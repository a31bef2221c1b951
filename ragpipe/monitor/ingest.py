"""Production traces into the warehouse: each file of [monitor].traces_dir read from where the last run stopped, each
line once (a line seen in two files, or read twice, is one trace), bad lines recorded with file and line, the fields
that must not be stored dropped. Read in blocks of lines, one transaction per block with the file's state after it: a
run killed half-way leaves each block read or not, and the next run goes on from there."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ragpipe.core import InputError, usable_cpus
from ragpipe.monitor.otlp import Pending, as_trace, is_otlp, spans_of, take
from ragpipe.monitor.readings import TrapIndex
from ragpipe.monitor.rows import COLUMNS, Chunk, RowPool, RowReader, chunks, read_lines
from ragpipe.monitor.traces import TraceProblem, load_line
from ragpipe.settings import Settings

BLOCK_LINES = 20000  # lines read, judged and written per transaction
BLOCK_BYTES = 64 * 2**20  # or fewer, when they reach this size (an OpenTelemetry export request may be megabytes)
PENDING_LINES = 1000  # lines after which the spans of a trace still without its root span are given up
HEAD = 65536  # bytes of a file's start whose hash tells a rewritten file from a grown one
# A run with this many new bytes reads its blocks in worker processes (when [monitor].workers allows): starting two
# takes about 0.6 s (0.8 CPU seconds), what they save on some 10,000 traces.
POOL_BYTES = 16 * 2**20
POOL_LINES = 200  # a block with fewer new lines is read in-process all the same (a round trip would cost more)


class MonitorError(InputError):
    """Monitoring cannot run as configured ([monitor].traces_dir missing or unreadable)."""


@dataclass
class Ingested:
    files_read: int = 0
    traces: int = 0  # new traces stored
    repeated: int = 0  # lines already stored (a file read twice, a copy of a file)
    new_problems: int = 0  # bad lines found by this run
    not_questions: int = 0  # OpenTelemetry traces of other work (no question and answer in their spans): not stored
    problems: list[str] = field(default_factory=list)  # every bad line recorded so far: "file:line: what is wrong"
    trap_note: str = ""  # why no trap hits were read, if so
    seconds: float = 0.0

    def stats(self) -> dict[str, Any]:
        return {
            "files_read": self.files_read,
            "new_traces": self.traces,
            "repeated_lines": self.repeated,
            "new_bad_lines": self.new_problems,
            "otel_traces_not_questions": self.not_questions,
            "bad_lines": len(self.problems),
            "seconds": round(self.seconds, 2),
        }


def trap_index(settings: Settings) -> tuple[TrapIndex, str]:
    """The golden set's trap quotes, or an empty index and the reason (no golden set, or one that does not load)."""
    if settings.golden.path is None:
        return TrapIndex({}), "no [golden].path: trap hits are not read"
    from ragpipe.golden import GoldenSetError, load_golden

    try:
        golden = load_golden(settings.golden.path)
    except (GoldenSetError, OSError) as exc:
        return TrapIndex({}), f"trap hits not read: {str(exc).splitlines()[0]}"
    return TrapIndex({t.question_id: t.quote or "" for t in golden.tests if t.kind == "negative"}), ""


def _resume(path: Path, state: tuple[int, int, str] | None) -> tuple[int | None, int, bytes]:
    """(lines read, or None when the file is read from its start; byte offset; the file's head) of one file: from the
    start when the file is new, shorter than what was read, or rewritten (its head changed)."""
    with path.open("rb") as f:
        head = f.read(HEAD)
    if state is not None:
        done, done_lines, sha = state
        if hashlib.sha256(head[: min(done, HEAD)]).hexdigest() == sha and path.stat().st_size >= done:
            return done_lines, done, head
    return None, 0, head


@dataclass
class _Read:
    """One file's new rows and problems, and what the next read of it starts from."""

    tables: list[Any] = field(default_factory=list)  # pyarrow tables of new rows
    problems: dict[int, list[str]] = field(default_factory=dict)  # line -> what is wrong there
    not_questions: int = 0  # OpenTelemetry traces with no question and answer (other work of the app)
    pending: Pending = field(default_factory=Pending)

    def add(self, chunk: Chunk) -> None:
        if chunk.table is not None:
            self.tables.append(chunk.table)
        for n, why in chunk.problems.items():
            self.problems.setdefault(n, []).extend(why)


class _Lines:
    """Where lines become rows: in this process, or in `workers` processes (started at the first block of POOL_LINES
    new lines or more, kept to the end of the run)."""

    def __init__(self, reader: RowReader, workers: int):
        self.reader, self.workers = reader, workers
        self.pool: RowPool | None = None

    def read(self, name: str, items: list[tuple[int, Any, str]]) -> list[Chunk]:
        if self.workers > 1 and len(items) >= POOL_LINES:
            if self.pool is None:
                self.pool = RowPool(self.workers, self.reader)
            return list(self.pool.map(name, chunks(items, self.workers)))
        return [read_lines(name, items, self.reader)] if items else []

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def _otlp(raw: bytes, n: int, seen: int, read: _Read, out: list[tuple[int, Any, str]]) -> None:
    """An OpenTelemetry line: its spans gathered by trace until each trace's root span arrives; a trace whose root
    span is on a new line (past `seen`) is assembled into `out`, to be read like a line. Lines up to `seen` were read
    before (their traces are stored): they are read again only for the spans they hold."""
    try:
        obj = load_line(raw.decode("utf-8"))
        if not is_otlp(obj):
            return
        for _first, spans in take(spans_of(obj), n, read.pending):
            if n > seen:
                _trace(spans, n, read, out)
    except (UnicodeDecodeError, TraceProblem) as exc:
        if n > seen:  # a line past `seen` is only here when it parsed: its spans are what is wrong
            read.problems.setdefault(n, []).append(str(exc))


def _trace(spans: list[Any], n: int, read: _Read, out: list[tuple[int, Any, str]]) -> None:
    """One OpenTelemetry trace whose root span is on line n: assembled to be read, counted as other work, or a
    problem of that line (the line's other traces are read all the same)."""
    label = f"OpenTelemetry trace {spans[0].trace_id}: "
    try:
        assembled = as_trace(spans)
    except TraceProblem as exc:
        read.problems.setdefault(n, []).append(f"{label}{exc}")
        return
    if assembled is None:
        read.not_questions += 1
    else:
        out.append((n, assembled, label))


def _give_up(read: _Read, last: int, seen: int) -> None:
    """Spans whose root span has not come PENDING_LINES lines later: named once, and no longer waited for."""
    for trace_id, at in list(read.pending.first_line.items()):
        if last - at >= PENDING_LINES:
            spans = read.pending.spans.pop(trace_id)
            del read.pending.first_line[trace_id]
            if seen - at < PENDING_LINES:
                why = f"OpenTelemetry trace {trace_id}: {len(spans)} spans and no root span in {PENDING_LINES} lines"
                read.problems.setdefault(at, []).append(why)


def _rows(name: str, new: list[tuple[int, bytes, str]], seen: int, read: _Read, lines: _Lines) -> None:
    """A block's new lines as rows: the trace lines read (in workers when many), then the OpenTelemetry lines in
    order, their spans gathered and each trace whose root span arrived read in turn; rows in line order."""
    otlp: list[int] = []
    for chunk in lines.read(name, new):
        read.add(chunk)
        otlp += chunk.otlp
    if not otlp:
        return
    raw_of = {n: raw for n, raw, _ in new}
    assembled: list[tuple[int, Any, str]] = []
    for n in otlp:
        _otlp(raw_of[n], n, seen, read, assembled)
    for chunk in lines.read(name, assembled):
        read.add(chunk)
    if len(read.tables) > 1:
        import pyarrow as pa

        read.tables = [pa.concat_tables(read.tables).sort_by("line")]  # a stable sort: a line's traces keep their order


def _read_file(path: Path, name: str, state: Any, lines: _Lines) -> Iterator[tuple[_Read, Any]]:
    """The file's new traces in blocks of BLOCK_LINES lines or BLOCK_BYTES (memory stays flat however long the file),
    each with its rows, its problems and the file's state after it: where the next read starts (the first line of a
    trace whose root span has not arrived, else the end of the block) and the lines whose traces are all stored. A
    last line without its newline is still being written: the next run reads it."""
    done_lines, offset, head = _resume(path, state[:3] if state else None)
    seen = (done_lines or 0) if done_lines is None or state[3] is None else state[3]
    read, n, pos = _Read(), done_lines or 0, offset
    starts: dict[int, int] = {}  # byte offset of each line a trace waiting for its root span starts on
    new: list[tuple[int, bytes, str]] = []  # the block's lines past `seen`

    def block() -> tuple[_Read, Any]:
        _rows(name, new, seen, read, lines)
        new.clear()
        _give_up(read, n, seen)
        waiting = set(read.pending.first_line.values())
        for line in [k for k in starts if k not in waiting]:
            del starts[line]
        resume = min(waiting, default=n + 1)
        done = starts[resume] if resume <= n else pos
        return read, (done, resume - 1, hashlib.sha256(head[: min(done, HEAD)]).hexdigest(), max(seen, n))

    with path.open("rb") as f:
        f.seek(offset)
        in_block, block_start = 0, offset
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            n += 1
            starts[n] = pos
            pos += len(raw)
            if raw.strip():
                if n > seen:
                    new.append((n, raw, ""))
                else:
                    _otlp(raw, n, seen, read, [])
            in_block += 1
            if in_block >= BLOCK_LINES or pos - block_start >= BLOCK_BYTES:
                yield block()
                read, in_block, block_start = _Read(pending=read.pending), 0, pos
    yield block()


def ingest_traces(settings: Settings, con: Any, log: Callable[[str], None] = lambda _m: None) -> Ingested:
    """Read what is new in [monitor].traces_dir into production_traces; returns what was read."""
    t0 = time.perf_counter()
    folder = settings.monitor.traces_dir
    if folder is None:
        raise MonitorError("[monitor].traces_dir is not set: point it at the folder your app writes its traces to")
    if not folder.is_dir():
        raise MonitorError(f"[monitor].traces_dir {folder} is not a folder; create it or fix the path")
    traps, out = trap_index(settings)
    result = Ingested(trap_note=out)
    recorded = con.execute("SELECT file, bytes_read, lines_read, head_sha, lines_seen FROM trace_files").fetchall()
    known = {r[0]: tuple(r[1:]) for r in recorded}
    paths = sorted(p for p in folder.glob(settings.monitor.pattern) if p.is_file())
    new_bytes = sum(max(0, p.stat().st_size - known.get(p.relative_to(folder).as_posix(), (0,))[0]) for p in paths)
    workers = (settings.monitor.workers or usable_cpus()) if new_bytes >= POOL_BYTES else 1
    reader = RowReader(traps, settings.answerer.refusal_phrases, settings.monitor.drop_fields)
    lines, writer = _Lines(reader, workers), _Writer(con, result, log)
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    if lines.workers > 1:  # the cores read traces: DuckDB inserts in one thread (two spend half again the CPU)
        con.execute("SET threads = 1")
    try:
        for path in paths:
            name = path.relative_to(folder).as_posix()
            read_any = False
            for read, state in _read_file(path, name, known.get(name), lines):
                if state == known.get(name) and not read.tables and not read.problems:
                    continue
                writer.submit(name, read, state)  # one transaction per block: a kill loses nothing
                known[name], read_any = state, True
            result.files_read += read_any
    finally:
        try:
            writer.close()
        finally:
            lines.close()
            con.execute(f"SET threads = {int(threads)}")
    recorded = con.execute("SELECT file, line, problem FROM trace_problems ORDER BY file, line").fetchall()
    result.problems = [f"{f}:{n}: {p}" for f, n, p in recorded]
    result.seconds = time.perf_counter() - t0
    return result


# Rows written between two evictions of DuckDB's block cache (100,000 of bench/monitor.py's traces: 160 MiB of lines)
CACHE_ROWS = 100_000


class _Writer:
    """Blocks written in order by a thread of their own, one at a time: the next block is read while one is written
    (at most two blocks in memory); a write's error is raised at the next block or at the end."""

    def __init__(self, con: Any, result: Ingested, log: Callable[[str], None]):
        from concurrent.futures import ThreadPoolExecutor

        self.con, self.result, self.log = con, result, log
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="ragpipe-traces-writer")
        self.last: Any = None
        self.per_file: dict[str, int] = {}
        self.cached = 0  # rows written since DuckDB's block cache was last emptied

    def submit(self, name: str, read: _Read, state: Any) -> None:
        if self.last is not None:
            self.last.result()
        waiting = len(read.pending.spans)  # counted now: the next block goes on gathering spans
        self.last = self.thread.submit(self._store, name, read, state, waiting)

    def _store(self, name: str, read: _Read, state: Any, waiting: int) -> None:
        problems = [(name, n, "; ".join(p)) for n, p in sorted(read.problems.items())]
        before = self.result.traces
        _write(self.con, name, read.tables, problems, state, self.result)
        self.cached += sum(t.num_rows for t in read.tables)
        if self.cached >= CACHE_ROWS:  # DuckDB keeps the blocks it wrote until its memory_limit: memory would grow
            from ragpipe.warehouse import drop_block_cache  # with the traces stored, not with one run's blocks

            drop_block_cache(self.con)
            self.cached = 0
        self.result.new_problems += len(problems)
        self.result.not_questions += read.not_questions
        self.per_file[name] = self.per_file.get(name, 0) + self.result.traces - before
        bad = f", {len(problems)} bad line{'s' if len(problems) > 1 else ''} in this block" if problems else ""
        spans = f", {waiting} OpenTelemetry traces waiting for their root span" if waiting else ""
        self.log(f"{name}: {self.per_file[name]} traces so far{bad}{spans}")

    def close(self) -> None:
        try:
            if self.last is not None:
                self.last.result()
        finally:
            self.thread.shutdown(wait=True)


def _write(con: Any, name: str, tables: list[Any], problems: list[Any], state: Any, result: Ingested) -> None:
    from ragpipe.warehouse import transaction

    rows = sum(t.num_rows for t in tables)
    with transaction(con):
        added = 0
        if tables:
            import pyarrow as pa

            con.register("_traces", pa.concat_tables(tables) if len(tables) > 1 else tables[0])
            names = ", ".join(COLUMNS)
            sql = f"INSERT OR IGNORE INTO production_traces ({names}, ingested_at) SELECT {names}, now() FROM _traces"
            added = con.execute(sql).fetchall()[0][0]  # the rows inserted: a trace already stored is not
            con.unregister("_traces")
        for f, n, p in problems:
            con.execute("INSERT OR REPLACE INTO trace_problems VALUES (?, ?, ?, now())", [f, n, p])
        con.execute(
            "INSERT OR REPLACE INTO trace_files (file, bytes_read, lines_read, head_sha, lines_seen, updated_at) "
            "VALUES (?, ?, ?, ?, ?, now())",
            [name, *state],
        )
    result.traces += added
    result.repeated += rows - added
