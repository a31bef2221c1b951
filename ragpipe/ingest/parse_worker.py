"""The parser worker: the child side of ragpipe.ingest.parse_pool, one file per request under its time and memory
limits, and the messages both sides word those limits' failures with.

A worker is a plain `python -c` child that runs `_worker_entry` (parse_pool starts it); it loads spaCy once, then
answers requests over a socket pair until it is idle for too long, told to stop, or its parent is gone.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ragpipe.ingest.parse import ParseError, _ensure_offline_spacy, format_of, parse_file

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
        return m is not None and timeout_s > float(m.group(1))
    if error_class in ("ParseMemoryLimit", "ParserCrashed"):
        m = _MEMORY_RE.search(message)
        return m is not None and max_memory_mb > int(m.group(1))
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
            module = "ragpipe.ingest.pdf" if fmt == "pdf" and pdf_engine == "pdfium" else _PRELOAD.get(fmt)
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


def _worker_entry() -> None:
    """`python -c` entry of a worker: argv is [fd of its end of the socket pair, parent pid, idle seconds]."""
    from multiprocessing.connection import Connection

    fd, parent_pid, idle_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    _worker_main(Connection(fd), parent_pid, idle_s)
