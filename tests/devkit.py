"""Helpers for tests that run Dagster's own processes (dagster dev, the daemon): free ports, a trimmed project, the
processes a run leaves, SIGINT that a child can receive."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path
from typing import Iterator

from conftest import Project

ASSETS = {"corpus", "documents", "chunks", "embeddings", "golden_set", "stamps", "retrievals", "answers", "verdicts"}


# A slice of the bundled corpus (Markdown, HTML, text) and the golden tests anchored in it: the same graph as the
# full example at a fraction of the parsing and embedding time. (Every format, PDF included, is covered by the
# ingest tests.)
KEEP = {
    "reports/q1-2023.md",
    "reports/q2-2023.md",
    "reports/q3-2023.md",
    "reports/q4-2023.html",
    "contracts/veridian-nda.txt",
    "policies/pto-policy.html",
    "product/hr-200-datasheet.md",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trim_project(p: Project) -> int:
    """Keep the KEEP documents and the golden tests anchored in them; returns the number of tests."""
    for f in sorted(p.corpus.rglob("*"), reverse=True):
        rel = f.relative_to(p.corpus).as_posix()
        if f.is_file() and rel not in KEEP:
            f.unlink()
    assert {f.relative_to(p.corpus).as_posix() for f in p.corpus.rglob("*") if f.is_file()} == KEEP
    tests = [line for line in p.golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [t for t in tests if (json.loads(t).get("trap_source") or json.loads(t).get("evidence_source")) in KEEP]
    assert {json.loads(t)["kind"] for t in kept} == {"negative", "positive"}
    p.golden.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return len(kept)


def _proc_stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a live /proc entry, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return fields[0], int(fields[2])


def group_members(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies are dead, only waiting for a parent to reap them)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _proc_stat(entry)
            if st and st[1] == pgid and st[0] != "Z":
                found.append(int(entry))
    return found


def processes_using(home: Path) -> list[int]:
    """Any live process (in the group or escaped from it) whose environment names this test's DAGSTER_HOME."""
    needle = f"DAGSTER_HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        st = _proc_stat(entry)
        if needle in env.split(b"\0") and st and st[0] != "Z":
            found.append(int(entry))
    return found


@contextlib.contextmanager
def sigint_not_ignored() -> Iterator[None]:
    """dagster dev maps SIGTERM onto its SIGINT handler, and a Python started with SIGINT ignored (as a background
    job of a non-interactive shell is) keeps ignoring it: then SIGTERM would do nothing. exec resets a handled signal
    to its default, so the child gets a working SIGINT while the parent holds a handler for the moment of Popen."""
    old = signal.getsignal(signal.SIGINT)
    if old is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if old is signal.SIG_IGN:
            signal.signal(signal.SIGINT, old)
