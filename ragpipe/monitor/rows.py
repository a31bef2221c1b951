"""Lines of a traces file as warehouse rows: each line checked, read (refusal, citation hit, trap hits) and stripped of
the fields that must never be stored, as an Arrow table. A large read runs on every core: the lines go in chunks to
worker processes (plain `python -c` children, as the parser's) and come back as tables, in order."""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from typing import Any, Iterator

from ragpipe.core import RagpipeError
from ragpipe.monitor.otlp import is_otlp
from ragpipe.monitor.readings import TrapIndex, read_trace
from ragpipe.monitor.traces import ALIASES, Trace, TraceProblem, drop, load_line, trace_from

COLUMNS = [
    "trace_id", "asked_at", "day", "app_version", "question", "answer", "contexts", "n_contexts", "refused", "cites",
    "citation_hit", "corrected", "trap_tests", "latency_ms", "tokens", "extra", "file", "line",
]  # fmt: skip
CHUNK_LINES = 1000  # lines per worker request: large enough that sending them costs little beside reading them


class ReaderDied(RagpipeError):
    """A worker process reading traces died (killed, out of memory); what was stored before it stays."""


@dataclass(frozen=True)
class RowReader:
    """What turning a line into a row needs: the golden set's traps, the refusal phrases, the fields never stored."""

    traps: TrapIndex
    phrases: tuple[str, ...] = ()
    drop_fields: tuple[str, ...] = ()


@dataclass
class Chunk:
    """The rows of some lines, the lines' problems, and the lines that are OpenTelemetry export requests (their spans
    are gathered across lines, in order, by the caller)."""

    table: Any = None  # pyarrow.Table of COLUMNS, or None when no line gave a row
    problems: dict[int, list[str]] = field(default_factory=dict)
    otlp: list[int] = field(default_factory=list)


_str = encode_basestring_ascii  # a string as json.dumps writes it (ensure_ascii)


def _opt(value: str | None) -> str:
    return "null" if value is None else _str(value)


_EXTRA = json.JSONEncoder(sort_keys=True, default=str)  # json.dumps(..., sort_keys=True, default=str), made once


@functools.lru_cache(maxsize=16384)
def _context_json(text: str, source: str | None) -> str:
    """One stored context as json.dumps writes it, made once: production traces retrieve the same chunks again and
    again (bounded, as the readings' cache of contexts)."""
    return f'{{"text": {_str(text)}, "source": {_opt(source)}}}'


@functools.lru_cache(maxsize=8)
def _dropping(names: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """What drop_fields removes: the trace fields named (by any of their names), and the keys each stored context
    keeps ("text" and "source", less any plain name and any "contexts.<key>")."""
    dropped = {canon for canon, aliases in ALIASES.items() if set(aliases) & set(names)} | set(names)
    heads = (n.partition(".") for n in names)
    inside = {rest or head for head, _, rest in heads if not rest or head in ALIASES["contexts"]}
    return frozenset(dropped), tuple(k for k in ("text", "source") if k not in inside)


def _stored(trace: Trace, names: tuple[str, ...]) -> dict[str, Any]:
    """The trace's fields as stored: a field named in drop_fields (by any of its names) is None."""
    dropped, keys = _dropping(names)
    pairs = zip(trace.contexts, trace.sources)
    if "contexts" in dropped:
        contexts = None
    elif keys == ("text", "source"):  # json.dumps of [{"text": t, "source": s}, ...], written out: the same text
        contexts = "[" + ", ".join([_context_json(t, s) for t, s in pairs]) + "]"
    else:
        contexts = json.dumps([{k: v for k, v in (("text", t), ("source", s)) if k in keys} for t, s in pairs])
    return {
        "question": None if "question" in dropped else trace.question,
        "answer": None if "answer" in dropped else trace.answer,
        "contexts": contexts,
        "app_version": None if "app_version" in dropped else trace.app_version,
        "extra": _EXTRA.encode(drop(trace.extra, names)) if trace.extra else None,
    }


def _row(trace: Trace, name: str, line: int, reader: RowReader) -> list[Any]:
    r = read_trace(trace.answer, trace.contexts, reader.traps, reader.phrases)
    kept = _stored(trace, reader.drop_fields)
    return [
        trace.trace_id, trace.at, trace.at.date(), kept["app_version"], kept["question"], kept["answer"],
        kept["contexts"], len(trace.contexts), r.refused, r.cites, r.citation_hit, trace.corrected, r.trap_tests,
        trace.latency_ms, trace.tokens, kept["extra"], name, line,
    ]  # fmt: skip


def _arrow(rows: list[list[Any]]) -> Any:
    import pyarrow as pa

    types = {"asked_at": pa.timestamp("us"), "day": pa.date32(), "trap_tests": pa.list_(pa.string()), "n_contexts": pa.int32(),
             "latency_ms": pa.float64(), "tokens": pa.int64(), "line": pa.int32(),
             "refused": pa.bool_(), "cites": pa.bool_(), "citation_hit": pa.bool_(), "corrected": pa.bool_(),
             "contexts": pa.json_(), "extra": pa.json_()}  # fmt: skip
    # contexts and extra as Arrow's JSON type: DuckDB takes them as JSON without parsing them again (they are json.dumps'
    # own text, made in _stored; a text typed as a string would be parsed and checked on every insert)
    return pa.table({c: pa.array([r[i] for r in rows], type=types.get(c, pa.string())) for i, c in enumerate(COLUMNS)})


def read_lines(name: str, items: list[tuple[int, Any, str]], reader: RowReader) -> Chunk:
    """Rows of file `name` from items (line number, the line's bytes or a trace object assembled from spans, and what
    a problem of the item is prefixed with). A line that is an OpenTelemetry export request is listed, not read."""
    out, rows = Chunk(), []
    for n, payload, label in items:
        try:
            obj = payload if isinstance(payload, dict) else load_line(payload.decode("utf-8"))
            if payload is not obj and is_otlp(obj):
                out.otlp.append(n)
                continue
            rows.append(_row(trace_from(obj), name, n, reader))
        except UnicodeDecodeError:
            out.problems.setdefault(n, []).append("not UTF-8 text")
        except TraceProblem as exc:
            out.problems.setdefault(n, []).append(f"{label}{exc}")
    out.table = _arrow(rows) if rows else None
    return out


def chunks(items: list[Any], workers: int) -> list[list[Any]]:
    """Items in chunks of about CHUNK_LINES, as many chunks as a multiple of `workers` (none waits on the last)."""
    count = -(-len(items) // CHUNK_LINES)
    count = max(workers, -(-count // workers) * workers)
    size = -(-len(items) // count)
    return [items[i : i + size] for i in range(0, len(items), size)]


# -- Worker processes -------------------------------------------------------------------------------------------------

_WORKER_CODE = (
    "import json, os, sys; sys.path[:0] = json.loads(os.environ.pop('RAGPIPE_ROWS_SYS_PATH', '[]')); "
    "from ragpipe.monitor.rows import _worker_entry; _worker_entry()"
)


class RowPool:
    """Worker processes that read chunks of lines (read_lines), one request at a time each, answered in order. A
    worker exits when its socket closes: when the pool is closed, or when the process that started it dies."""

    def __init__(self, workers: int, reader: RowReader):
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        env = dict(os.environ, RAGPIPE_ROWS_SYS_PATH=json.dumps([p for p in sys.path if p]))
        env.update({var: "1" for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
        self.workers: list[tuple[Any, Any]] = []
        try:
            for _ in range(workers):
                ours, theirs = socket.socketpair()
                proc = subprocess.Popen(
                    [sys.executable, "-c", _WORKER_CODE, str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, close_fds=True,
                )  # fmt: skip
                theirs.close()
                conn = Connection(ours.detach())
                conn.send(reader)
                self.workers.append((proc, conn))
        except BaseException:
            self.close()
            raise

    def map(self, name: str, jobs: list[list[tuple[int, Any, str]]]) -> Iterator[Chunk]:
        """read_lines of each job, in order; each worker holds one job at a time (a large request and a large answer
        never wait on each other)."""
        k = len(self.workers)
        for i, job in enumerate(jobs[:k]):
            self._send(i, (name, job))
        for i in range(len(jobs)):
            reply = self._recv(i % k)
            if i + k < len(jobs):
                self._send(i % k, (name, jobs[i + k]))
            if isinstance(reply, BaseException):
                raise reply
            yield reply

    def _send(self, w: int, request: Any) -> None:
        try:
            self.workers[w][1].send(request)
        except (OSError, ValueError):
            raise self._died(w) from None

    def _recv(self, w: int) -> Any:
        try:
            return self.workers[w][1].recv()
        except (EOFError, OSError):
            raise self._died(w) from None

    def _died(self, w: int) -> ReaderDied:
        proc = self.workers[w][0]
        try:
            code = proc.wait(5)
        except Exception:  # noqa: BLE001 - still running with its socket closed: no status to give
            code = None
        return ReaderDied(
            f"a trace reader process died (exit status {code}; -9 is a kill, often for memory). The blocks read "
            "before it are stored: run again to go on, or set [monitor].workers = 1 to read in this process"
        )

    def close(self) -> None:
        for proc, conn in self.workers:
            conn.close()
            try:
                proc.wait(10)
            except Exception:  # noqa: BLE001 - a worker that does not exit is killed
                proc.kill()
        self.workers = []


def _worker_entry() -> None:
    """`python -c` entry of a worker: argv[1] is the fd of its end of the socket pair."""
    from multiprocessing.connection import Connection

    conn = Connection(int(sys.argv[1]))
    try:
        reader = conn.recv()
        gc.freeze()  # what is loaded by now lives to the end: never scanned again
        while True:
            name, items = conn.recv()
            gc.disable()  # a chunk makes no reference cycles: the collector's passes over it would find nothing
            try:
                reply: Any = read_lines(name, items, reader)
            except Exception as exc:  # noqa: BLE001 - raised again in the caller, with its message
                reply = exc
            finally:
                gc.enable()
            conn.send(reply)
    except (EOFError, OSError, KeyboardInterrupt):
        return
