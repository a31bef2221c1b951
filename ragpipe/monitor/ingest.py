"""Production traces into the warehouse: each file of [monitor].traces_dir read from where the last run stopped, each
line once (a line seen in two files, or read twice, is one trace), bad lines recorded with file and line, the fields
that must not be stored dropped. Read in blocks of lines, one transaction per block with the file's state after it: a
run killed half-way leaves each block read or not, and the next run goes on from there."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ragpipe.core import InputError
from ragpipe.monitor.otlp import Pending, as_trace, is_otlp, spans_of, take
from ragpipe.monitor.readings import TrapIndex, read_trace
from ragpipe.monitor.traces import ALIASES, Trace, TraceProblem, drop, load_line, trace_from
from ragpipe.settings import Settings

BLOCK_LINES = 20000  # lines read, judged and written per transaction
PENDING_LINES = 1000  # lines after which the spans of a trace still without its root span are given up
HEAD = 65536  # bytes of a file's start whose hash tells a rewritten file from a grown one
COLUMNS = [
    "trace_id", "asked_at", "day", "app_version", "question", "answer", "contexts", "n_contexts", "refused", "cites",
    "citation_hit", "corrected", "trap_tests", "latency_ms", "tokens", "extra", "file", "line",
]  # fmt: skip


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


def _stored(trace: Trace, names: tuple[str, ...]) -> dict[str, Any]:
    """The trace's fields as stored: a field named in drop_fields (by any of its names) is None."""
    dropped = {canon for canon, aliases in ALIASES.items() if set(aliases) & set(names)} | set(names)
    # inside each context: a dotted name under contexts ("contexts.source"), and every plain name (dropped anywhere)
    inside = tuple(
        rest or head for head, _, rest in (n.partition(".") for n in names) if not rest or head in ALIASES["contexts"]
    )
    contexts = [drop({"text": t, "source": s}, inside) for t, s in zip(trace.contexts, trace.sources)]
    return {
        "question": None if "question" in dropped else trace.question,
        "answer": None if "answer" in dropped else trace.answer,
        "contexts": None if "contexts" in dropped else json.dumps(contexts),
        "app_version": None if "app_version" in dropped else trace.app_version,
        "extra": json.dumps(drop(trace.extra, names), sort_keys=True, default=str) if trace.extra else None,
    }


def _row(trace: Trace, where: tuple[str, int], traps: TrapIndex, settings: Settings) -> list[Any]:
    r = read_trace(trace.answer, trace.contexts, traps, settings.answerer.refusal_phrases)
    kept = _stored(trace, settings.monitor.drop_fields)
    return [
        trace.trace_id, trace.at, trace.at.date(), kept["app_version"], kept["question"], kept["answer"],
        kept["contexts"], len(trace.contexts), r.refused, r.cites, r.citation_hit, trace.corrected, r.trap_tests,
        trace.latency_ms, trace.tokens, kept["extra"], where[0], where[1],
    ]  # fmt: skip


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


def _arrow(rows: list[list[Any]]) -> Any:
    import pyarrow as pa

    types = {"asked_at": pa.timestamp("us"), "day": pa.date32(), "trap_tests": pa.list_(pa.string()), "n_contexts": pa.int32(),
             "latency_ms": pa.float64(), "tokens": pa.int64(), "line": pa.int32(),
             "refused": pa.bool_(), "cites": pa.bool_(), "citation_hit": pa.bool_(), "corrected": pa.bool_()}  # fmt: skip
    return pa.table({c: pa.array([r[i] for r in rows], type=types.get(c, pa.string())) for i, c in enumerate(COLUMNS)})


@dataclass
class _Read:
    """One file's new rows and problems, and what the next read of it starts from."""

    rows: list[list[Any]] = field(default_factory=list)
    problems: dict[int, list[str]] = field(default_factory=dict)  # line -> what is wrong there
    not_questions: int = 0  # OpenTelemetry traces with no question and answer (other work of the app)
    pending: Pending = field(default_factory=Pending)


def _line(raw: bytes, n: int, seen: int, read: _Read, emit: Callable[[dict[str, Any], int], None]) -> None:
    """One line: a trace object, or OTLP spans gathered by trace until each trace's root span arrives. Lines up to
    `seen` were read before (their traces are stored): they are read again only for the spans they hold."""
    try:
        obj = load_line(raw.decode("utf-8"))
        if is_otlp(obj):
            for _first, spans in take(spans_of(obj), n, read.pending):
                if n > seen:
                    _trace(spans, n, read, emit)
        elif n > seen:
            emit(obj, n)
    except UnicodeDecodeError:
        if n > seen:
            read.problems.setdefault(n, []).append("not UTF-8 text")
    except TraceProblem as exc:
        if n > seen:
            read.problems.setdefault(n, []).append(str(exc))


def _trace(spans: list[Any], n: int, read: _Read, emit: Callable[[dict[str, Any], int], None]) -> None:
    """One OpenTelemetry trace whose root span is on line n: stored, counted as other work, or a problem of that
    line (the line's other traces are read all the same)."""
    try:
        assembled = as_trace(spans)
        if assembled is None:
            read.not_questions += 1
        else:
            emit(assembled, n)
    except TraceProblem as exc:
        read.problems.setdefault(n, []).append(f"OpenTelemetry trace {spans[0].trace_id}: {exc}")


def _give_up(read: _Read, last: int, seen: int) -> None:
    """Spans whose root span has not come PENDING_LINES lines later: named once, and no longer waited for."""
    for trace_id, at in list(read.pending.first_line.items()):
        if last - at >= PENDING_LINES:
            spans = read.pending.spans.pop(trace_id)
            del read.pending.first_line[trace_id]
            if seen - at < PENDING_LINES:
                why = f"OpenTelemetry trace {trace_id}: {len(spans)} spans and no root span in {PENDING_LINES} lines"
                read.problems.setdefault(at, []).append(why)


def _read_file(path: Path, name: str, state: Any, traps: TrapIndex, settings: Settings) -> Iterator[tuple[_Read, Any]]:
    """The file's new traces in blocks of BLOCK_LINES lines (memory stays flat however long the file), each with its
    rows, its problems and the file's state after it: where the next read starts (the first line of a trace whose
    root span has not arrived, else the end of the block) and the lines whose traces are all stored. A last line
    without its newline is still being written: the next run reads it."""
    done_lines, offset, head = _resume(path, state[:3] if state else None)
    seen = (done_lines or 0) if done_lines is None or state[3] is None else state[3]
    read, n, pos = _Read(), done_lines or 0, offset
    starts: dict[int, int] = {}  # byte offset of each line a trace waiting for its root span starts on

    def emit(obj: dict[str, Any], line: int) -> None:
        read.rows.append(_row(trace_from(obj), (name, line), traps, settings))

    def block() -> tuple[_Read, Any]:
        _give_up(read, n, seen)
        waiting = set(read.pending.first_line.values())
        for line in [k for k in starts if k not in waiting]:
            del starts[line]
        resume = min(waiting, default=n + 1)
        done = starts[resume] if resume <= n else pos
        return read, (done, resume - 1, hashlib.sha256(head[: min(done, HEAD)]).hexdigest(), max(seen, n))

    with path.open("rb") as f:
        f.seek(offset)
        in_block = 0
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            n += 1
            starts[n] = pos
            pos += len(raw)
            if raw.strip():
                _line(raw, n, seen, read, emit)
            in_block += 1
            if in_block >= BLOCK_LINES:
                yield block()
                read, in_block = _Read(pending=read.pending), 0
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
    for path in sorted(p for p in folder.glob(settings.monitor.pattern) if p.is_file()):
        name = path.relative_to(folder).as_posix()
        before, read_any = result.traces, False
        for read, state in _read_file(path, name, known.get(name), traps, settings):
            if state == known.get(name) and not read.rows and not read.problems:
                continue
            problems = [(name, n, "; ".join(p)) for n, p in sorted(read.problems.items())]
            _write(con, name, read.rows, problems, state, result)  # one transaction per block: a kill loses nothing
            known[name], read_any = state, True
            result.new_problems += len(problems)
            result.not_questions += read.not_questions
            waiting = f", {len(read.pending.spans)} OpenTelemetry traces waiting for their root span"
            log(f"{name}: {result.traces - before} traces so far{waiting if read.pending.spans else ''}")
        result.files_read += read_any
    recorded = con.execute("SELECT file, line, problem FROM trace_problems ORDER BY file, line").fetchall()
    result.problems = [f"{f}:{n}: {p}" for f, n, p in recorded]
    result.seconds = time.perf_counter() - t0
    return result


def _write(con: Any, name: str, rows: list[list[Any]], problems: list[Any], state: Any, result: Ingested) -> None:
    from ragpipe.warehouse import transaction

    with transaction(con):
        added = 0
        if rows:
            con.register("_traces", _arrow(rows))
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
    result.repeated += len(rows) - added
