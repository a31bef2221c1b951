"""Parsing in child processes, so that a bad file costs one error row, never the run.

In a run, files are parsed in child processes (`ParserPool`): each document gets a wall-clock limit
([parser].timeout_s) and an address-space limit ([parser].max_memory_mb), so a pathological file (a zip bomb,
a PDF that never ends, a 50 MB single line) costs one ingest_errors row instead of hanging or exhausting the run.
Workers are plain `python -c` children (never a re-run of the caller's script), load spaCy once, are reused across documents, and replaced when a document
kills or hangs one. Elements cross the process boundary as the document text plus their stored form
(`stored_elements_json`: unstructured's element dicts without their texts) and are rebuilt with unstructured's
elements_from_dicts, so results are identical to parsing in-process.
"""

from __future__ import annotations

import atexit
import os
import re
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ragpipe.parse import (
    ParsedDocument,
    ParseError,
    ParseMemoryLimit,
    ParserCrashed,
    ParserUnavailable,
    ParseTimeout,
    WorkerParseError,
    _ensure_offline_spacy,
    element_offsets,
    elements_from_json,
    format_of,
    parse_file,
)

# -- Isolated parsing: worker processes with a per-document time and memory limit ------------------------------------

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_MEMORY_MB = 2048
# A worker's resident size after parsing the realdocs HTML, Markdown and text (spaCy and unstructured loaded; VmRSS,
# bench/parse_workers.py); a document may add up to [parser].max_memory_mb on top.
WORKER_RSS_MB = 500
WORKER_IDLE_S = 300.0  # an idle worker exits after this long; the next document starts a fresh one
START_TIMEOUT_S = 600.0  # start-up (imports, spaCy) and per-format imports; never counted against a document

# Imported before a document's limits are set, so the limits measure the document, not the libraries.
_PRELOAD = {
    "markdown": "unstructured.partition.md",
    "text": "unstructured.partition.text",
    "html": "unstructured.partition.html",
    "pdf": "unstructured.partition.pdf",
    "docx": "unstructured.partition.docx",
}

_TIMEOUT_RE = re.compile(r"took longer than ([0-9.]+) s")
_MEMORY_RE = re.compile(r"memory limit of ([0-9]+) MB")


def timeout_message(name: str, timeout_s: float) -> str:
    return (
        f"{name}: parsing took longer than {timeout_s:g} s ([parser].timeout_s) and was stopped; the file is "
        "pathological or very large: split it, exclude it, or raise the limit"
    )


def memory_message(name: str, max_memory_mb: int) -> str:
    return (
        f"{name}: parsing exceeded the memory limit of {max_memory_mb} MB ([parser].max_memory_mb) and was stopped; "
        "the file is pathological (e.g. a zip bomb) or very large: split it, exclude it, or raise the limit"
    )


def crash_message(name: str, exitcode: int | None, max_memory_mb: int) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"killed by signal {-exitcode}"
    else:
        how = f"exit status {exitcode}"
    return (
        f"{name}: the parser process died ({how}) while parsing this file, most likely in native code that "
        f"exceeded the memory limit of {max_memory_mb} MB ([parser].max_memory_mb); exclude the file or raise the limit"
    )


def failed_under_lower_limits(error_class: str, message: str, timeout_s: float, max_memory_mb: int) -> bool:
    """True for a file that failed on a resource limit lower than the current one: it deserves another try."""
    if error_class == "ParseTimeout":
        m = _TIMEOUT_RE.search(message)
        return bool(m) and timeout_s > float(m.group(1))
    if error_class in ("ParseMemoryLimit", "ParserCrashed"):
        m = _MEMORY_RE.search(message)
        return bool(m) and max_memory_mb > int(m.group(1))
    return False


def _vm_size() -> int:
    """This process's address-space size in bytes (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _worker_main(conn: Any, parent_pid: int, idle_s: float) -> None:
    """The worker loop (in the child): load spaCy once, then parse one file per request under the limits.

    Protocol: -> ("ready", pid) | ("fatal", why); per request (path, pdf_strategy, max_memory_mb, timeout_s, pdf_engine):
    -> ("started",) once the format's modules are imported and the limit is set, then ("ok", format, text, stored elements)
    or ("err", error_class, message). A memory failure ends the worker after its reply (a clean heap for the next).
    """
    import importlib

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us

    def watchdog() -> None:  # the parent was killed (even with SIGKILL): do not outlive it
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watchdog, name="parent-watchdog", daemon=True).start()
    try:
        _ensure_offline_spacy()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the stage
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", os.getpid()))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cpu_soft, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    while conn.poll(idle_s):
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        path_str, pdf_strategy, max_memory_mb, *rest = request
        timeout_s = float(rest[0]) if rest else 0.0
        pdf_engine = str(rest[1]) if len(rest) > 1 else "pdfium"
        path = Path(path_str)
        fatal = False
        try:
            fmt = format_of(path) or ""
            module = "ragpipe.pdf" if fmt == "pdf" and pdf_engine == "pdfium" else _PRELOAD.get(fmt)
            if module:
                importlib.import_module(module)
            if max_memory_mb > 0 and _vm_size():
                limit = _vm_size() + (int(max_memory_mb) << 20)
                resource.setrlimit(
                    resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard)
                )
            if timeout_s > 0:  # a backstop for an orphan (the parent's wall-clock limit normally acts first)
                usage = resource.getrusage(resource.RUSAGE_SELF)
                cpu = int(usage.ru_utime + usage.ru_stime + 2 * timeout_s + 10)
                resource.setrlimit(
                    resource.RLIMIT_CPU, (cpu if cpu_hard == resource.RLIM_INFINITY else min(cpu, cpu_hard), cpu_hard)
                )
            try:
                conn.send(("started",))
                doc = parse_file(path, pdf_strategy=pdf_strategy, timeout_s=0, pdf_engine=pdf_engine)
                reply: tuple[Any, ...] = ("ok", doc.format, doc.text, doc.elements_json())
            finally:
                resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_soft, cpu_hard))
        except MemoryError:
            reply, fatal = ("err", "ParseMemoryLimit", memory_message(path.name, max_memory_mb)), True
        except ParseError as exc:
            reply = ("err", exc.error_class, str(exc))
        except Exception as exc:  # noqa: BLE001 - every way a file can be bad becomes a message
            reply = ("err", type(exc).__name__, f"{path.name}: {type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return
        if fatal:
            return


class _WorkerGone(Exception):
    """The worker was gone before it took the request (e.g. it had exited idle); retry on a fresh one."""


_TIMEOUT, _DEAD = "timeout", "dead"


_WORKER_CODE = (
    "import json, os, sys; sys.path[:0] = json.loads(os.environ.pop('RAGPIPE_PARSER_SYS_PATH', '[]')); "
    "from ragpipe.parse_pool import _worker_entry; _worker_entry()"
)


def _worker_entry() -> None:
    """`python -c` entry of a worker: argv is [fd of its end of the socket pair, parent pid, idle seconds]."""
    from multiprocessing.connection import Connection

    fd, parent_pid, idle_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    _worker_main(Connection(fd), parent_pid, idle_s)


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

    def _recv(self, timeout: float) -> Any:
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


def _usable_cpus() -> int:
    from ragpipe.core import usable_cpus

    return usable_cpus()


def available_memory_mb() -> int | None:
    """Memory available to new processes (Linux MemAvailable, else free pages); None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1 << 20)
    except (AttributeError, OSError, ValueError):
        return None


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
    return derive_workers(parser.workers, parser.max_memory_mb, _usable_cpus(), available_memory_mb(), share)


class ParserPool:
    """Worker processes reused across documents; a worker that overran or crashed is replaced.

    Thread-safe: up to `size` threads may parse at once, each on its own worker.
    """

    def __init__(self, size: int | None = None, idle_s: float = WORKER_IDLE_S):
        self.size = size or derive_workers(0, DEFAULT_MAX_MEMORY_MB, _usable_cpus(), available_memory_mb())
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
