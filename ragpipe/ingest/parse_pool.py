"""Parsing in child processes, so that a bad file costs one error row, never the run.

In a run, files are parsed in child processes (`ParserPool`): each document gets a wall-clock limit
([parser].timeout_s) and an address-space limit ([parser].max_memory_mb), so a pathological file (a zip bomb,
a PDF that never ends, a 50 MB single line) costs one ingest_errors row instead of hanging or exhausting the run.
Workers are plain `python -c` children (never a re-run of the caller's script; their side is
ragpipe.ingest.parse_worker), load spaCy once, are reused across documents, and replaced when a document kills or hangs
one. Elements cross the process boundary as the document text plus their stored form
(`stored_elements_json`: unstructured's element dicts without their texts) and are rebuilt with unstructured's
elements_from_dicts, so results are identical to parsing in-process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from pathlib import Path
from typing import Any

from ragpipe.core import available_memory_mb, usable_cpus
from ragpipe.ingest.parse import (
    ParsedDocument,
    ParseMemoryLimit,
    ParserCrashed,
    ParserUnavailable,
    ParseTimeout,
    WorkerParseError,
    element_offsets,
    elements_from_json,
)
from ragpipe.ingest.parse_worker import crash_message, timeout_message

# -- Isolated parsing: worker processes with a per-document time and memory limit ------------------------------------

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_MEMORY_MB = 2048
# A worker's resident size after parsing the realdocs HTML, Markdown and text (spaCy and unstructured loaded; VmRSS,
# bench/parse_workers.py); a document may add up to [parser].max_memory_mb on top.
WORKER_RSS_MB = 500
WORKER_IDLE_S = 300.0  # an idle worker exits after this long; the next document starts a fresh one
START_TIMEOUT_S = 600.0  # start-up (imports, spaCy) and per-format imports; never counted against a document


class _WorkerGone(Exception):
    """The worker was gone before it took the request (e.g. it had exited idle); retry on a fresh one."""


_TIMEOUT, _DEAD = "timeout", "dead"


_WORKER_CODE = (
    "import json, os, sys; sys.path[:0] = json.loads(os.environ.pop('RAGPIPE_PARSER_SYS_PATH', '[]')); "
    "from ragpipe.ingest.parse_worker import _worker_entry; _worker_entry()"
)


class _Worker:
    """One worker: a plain `python -c` child (not multiprocessing's spawn, which would re-run the caller's
    __main__ script in the child), talking pickled messages over a socket pair."""

    def __init__(self, idle_s: float):
        import json
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["RAGPIPE_PARSER_SYS_PATH"] = json.dumps([p for p in sys.path if p])
        # Parsing needs no thread pools; every thread and malloc arena (64 MB each) reserves address space the
        # memory limit counts.
        for var in ("MALLOC_ARENA_MAX", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "2" if var == "MALLOC_ARENA_MAX" else "1")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(theirs.fileno()), str(os.getpid()), str(idle_s)],
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise ParserUnavailable(f"the parser worker process could not start: {exc}") from exc
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        import unstructured.staging.base  # noqa: F401  (needed here for the results; loads while the worker starts)

        msg = self._recv(START_TIMEOUT_S)
        if not (isinstance(msg, tuple) and msg[0] == "ready"):
            self.kill()
            why = msg[1] if isinstance(msg, tuple) and len(msg) > 1 else f"{msg} (exit status {self.proc.returncode})"
            raise ParserUnavailable(f"the parser worker process could not start: {why}")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and not self.conn.closed

    def _recv(self, timeout: float | None) -> Any:
        try:
            if self.conn.poll(timeout):
                return self.conn.recv()
            return _TIMEOUT
        except (EOFError, OSError):
            return _DEAD

    def parse(
        self, path: Path, pdf_strategy: str, timeout_s: float, max_memory_mb: int, pdf_engine: str = "pdfium"
    ) -> tuple[str, str, str]:
        """(format, document text, stored elements JSON) for one file, or a ParseError; the worker is killed when it overruns."""
        try:
            self.conn.send((str(path), pdf_strategy, int(max_memory_mb), float(timeout_s), pdf_engine))
        except (OSError, ValueError):
            raise _WorkerGone() from None
        msg = self._recv(START_TIMEOUT_S)
        if msg == _DEAD:
            raise _WorkerGone()
        if msg == _TIMEOUT:
            self.kill()
            raise ParserCrashed(f"{path.name}: the parser did not start within {START_TIMEOUT_S:g} s")
        if msg[0] == "started":
            msg = self._recv(timeout_s if timeout_s > 0 else None)
        if msg == _TIMEOUT:
            self.kill()
            raise ParseTimeout(timeout_message(path.name, timeout_s))
        if msg == _DEAD:
            code = self._wait(5)
            self.kill()
            raise ParserCrashed(crash_message(path.name, code, max_memory_mb))
        if msg[0] == "ok":
            return msg[1], msg[2], msg[3]
        error_class, message = msg[1], msg[2]
        if error_class == "ParseMemoryLimit":
            self._wait(5)  # it exits after a memory failure
            self.kill()
            raise ParseMemoryLimit(message)
        raise WorkerParseError(message, error_class)

    def _wait(self, timeout: float) -> int | None:
        import subprocess

        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._wait(10)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self._wait(2)
        self.kill()


def derive_workers(requested: int, max_memory_mb: int, cpus: int, memory_mb: int | None, share: int = 1) -> int:
    """How many parser workers a process runs: `requested` if above 0, else one per core and as many as memory
    holds at worst (each WORKER_RSS_MB plus max_memory_mb), with the cores and memory split `share` ways
    (parse shards of one run on one machine). Two cores or fewer get one worker: a second one is slower there
    (bench/parse_workers.py, docs/scaling.md)."""
    if requested > 0:
        return requested
    cores = max(1, cpus // max(1, share))
    workers = 1 if cores <= 2 else cores
    if memory_mb is not None:
        workers = min(workers, (memory_mb // max(1, share)) // (WORKER_RSS_MB + max_memory_mb))
    return max(1, workers)


def parser_workers(parser: Any, share: int = 1) -> int:
    """derive_workers for [parser] settings on this machine ([parser].workers, 0: from cores and memory)."""
    return derive_workers(parser.workers, parser.max_memory_mb, usable_cpus(), available_memory_mb(), share)


class ParserPool:
    """Worker processes reused across documents; a worker that overran or crashed is replaced.

    Thread-safe: up to `size` threads may parse at once, each on its own worker.
    """

    def __init__(self, size: int | None = None, idle_s: float = WORKER_IDLE_S):
        self.size = size or derive_workers(0, DEFAULT_MAX_MEMORY_MB, usable_cpus(), available_memory_mb())
        self.idle_s = idle_s
        self.pid = os.getpid()
        self.closed = False
        self.started = 0  # workers started so far (a restart after a kill counts)
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()

    def _acquire(self) -> _Worker:
        with self._lock:
            if self.closed:
                raise ParserUnavailable("the parser pool is closed")
            while self._idle:
                w = self._idle.pop()
                if w.alive:
                    self._busy.add(w)
                    return w
                w.kill()
        w = _Worker(self.idle_s)  # outside the lock: start-up takes seconds
        with self._lock:
            self.started += 1
            self._busy.add(w)
        return w

    def _release(self, w: _Worker) -> None:
        with self._lock:
            self._busy.discard(w)
            if w.alive and not self.closed:
                self._idle.append(w)
                return
        w.kill()

    def parse_json(
        self,
        path: Path,
        pdf_strategy: str = "fast",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
        pdf_engine: str = "pdfium",
    ) -> tuple[str, str, str]:
        """(format, document text, stored elements JSON) from a worker."""
        for attempt in range(2):
            w = self._acquire()
            try:
                return w.parse(Path(path), pdf_strategy, timeout_s, max_memory_mb, pdf_engine)
            except _WorkerGone:
                w.kill()
                if attempt:
                    raise ParserUnavailable(f"parser workers keep exiting before taking {Path(path).name}") from None
            finally:
                self._release(w)
        raise AssertionError("unreachable")

    def parse(
        self,
        path: Path,
        pdf_strategy: str = "fast",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
        pdf_engine: str = "pdfium",
    ) -> ParsedDocument:
        """Parse in a worker; the elements are rebuilt here from the worker's text and stored elements."""
        fmt, text, stored = self.parse_json(path, pdf_strategy, timeout_s, max_memory_mb, pdf_engine)
        elements = elements_from_json(stored, text)
        return ParsedDocument(
            format=fmt, elements=elements, text=text, offsets=element_offsets(elements), stored=stored
        )

    def close(self) -> None:
        with self._lock:
            self.closed = True
            workers, self._idle = self._idle + list(self._busy), []
            self._busy.clear()
        for w in workers:
            w.stop()


_POOL: ParserPool | None = None
_POOL_LOCK = threading.Lock()


def isolation_available() -> bool:
    """Worker processes can be started here (an embedded interpreter may have no executable to start)."""
    return bool(sys.executable)


def shared_pool(size: int | None = None) -> ParserPool:
    """The process-wide pool: workers (and their loaded spaCy) are reused across runs in a long-lived process.

    A different `size` replaces it (its workers are stopped)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and size and _POOL.size != size and _POOL.pid == os.getpid():
            _POOL.close()
        if _POOL is None or _POOL.closed or _POOL.pid != os.getpid():
            _POOL = ParserPool(size)
            atexit.register(_POOL.close)
        return _POOL
