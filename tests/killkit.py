"""Kills at random points: `ragpipe ci` SIGKILLed (its whole process group) at moments drawn from its own progress
lines, then run again without a kill; the warehouse must end as a run never killed ends it. Used by
tests/e2e/test_random_kills.py (a handful of points) and bench/kills.py (many, seeded, the seed printed).

A kill point is (the n-th line of output, a delay after it): seeded, so a failing point replays exactly.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from faultkit import copy_project, python_env, ragpipe_cli

# what must be equal between a killed-then-completed project and one never killed
STATE = {
    "documents": "SELECT doc_id, sha256 FROM documents ORDER BY 1",
    "chunks": "SELECT chunk_id FROM chunks WHERE chunker_tag = ? ORDER BY 1",
    "vectors": "SELECT chunk_id FROM embeddings WHERE embedder_tag = ? ORDER BY 1",
    "verdicts": "SELECT question_id, verdict, reason, anchor_retrieved FROM latest_verdicts ORDER BY 1",
}


@dataclass(frozen=True)
class KillPoint:
    line: int  # killed once the run has printed this many lines
    delay_s: float  # and this long after

    def __str__(self) -> str:
        return f"line {self.line} + {self.delay_s:.2f} s"


def rechunk(p: Any) -> None:
    """The scenario's change: a new chunker size, so every stage from chunks down to verdicts is redone."""
    p.configure(max_characters=600, new_after=450)


def lance(p: Any) -> list[str]:
    """The chunk ids of the LanceDB table of the project's embedder."""
    from ragpipe.embed import store, table_name

    tag = p.sql("SELECT DISTINCT embedder_tag FROM embeddings")[0][0]
    table = store.open_store(p.settings()).open_table(table_name(tag))
    return sorted(table.to_arrow().column("chunk_id").to_pylist())


def state(p: Any) -> dict[str, list[tuple[Any, ...]]]:
    s = p.settings()
    tags = [r[0] for r in p.sql("SELECT DISTINCT embedder_tag FROM embeddings")]
    params = {"chunks": [s.chunker_tag], "vectors": [tags[-1] if tags else ""]}
    return {name: p.sql(sql, params.get(name, [])) for name, sql in STATE.items()}


def leftovers(root: Path) -> list[str]:
    """Temporary files a writer leaves behind, and processes still running in the project (orphans)."""
    found = [str(f.relative_to(root)) for f in root.rglob("*") if f.is_file() and f.name.endswith((".tmp", ".partial"))]
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = (Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(root) in cmd:
                found.append(f"process {pid}: {cmd[:160]}")
    return found


def reference_run(
    base: Path, dest: Path, change: Callable[[Any], None], args: tuple[str, ...] = ("ci",)
) -> tuple[Any, int, dict[str, Any]]:
    """The scenario never killed: its output lines (the progress a kill point is drawn from) and its end state."""
    p = copy_project(base, dest)
    change(p)
    code, out = ragpipe_cli(p.root, *args).finish(900)
    assert code in (0, 1) and "GATE:" in out, out[-4000:]
    return p, len(out.splitlines()), state(p)


def points(seed: int, n: int, lines: int) -> list[KillPoint]:
    rng = random.Random(seed)
    return [KillPoint(rng.randrange(1, max(2, lines - 2)), round(rng.uniform(0, 0.5), 2)) for _ in range(n)]


def kill_and_complete(
    base: Path, dest: Path, change: Callable[[Any], None], point: KillPoint, args: tuple[str, ...] = ("ci",)
) -> tuple[Any, bool]:
    """The scenario killed at `point`, then run again to the end (`ragpipe ci`); (the project, whether the kill
    landed before the run finished)."""
    p = copy_project(base, dest)
    change(p)
    ci = ragpipe_cli(p.root, *args, env=python_env())
    deadline = time.monotonic() + 900
    while len(ci.lines) < point.line and ci.p.poll() is None:
        assert time.monotonic() < deadline, ci.output[-4000:]
        time.sleep(0.01)
    time.sleep(point.delay_s)
    landed = ci.p.poll() is None
    ci.sigkill()
    code, out = ragpipe_cli(p.root, "ci").finish(900)
    assert code in (0, 1) and "GATE:" in out, f"{point}: the run after the kill did not complete:\n{out[-4000:]}"
    return p, landed


# -- `ragpipe monitor` reading a large traces folder in its worker processes -------------------------------------------

MONITOR_STATE = {
    "traces": "SELECT trace_id, file, line, refused, cites, citation_hit, trap_tests FROM production_traces ORDER BY 1",
    "problems": "SELECT file, line, problem FROM trace_problems ORDER BY 1, 2",
    "files": "SELECT file, bytes_read, lines_read, lines_seen FROM trace_files ORDER BY 1",
}


def monitor_base(dest: Path, traces: int) -> Path:
    """A project whose [monitor] reads `traces` recorded traces in 6 files, two bad lines among them: enough (16 MiB
    and more) that two worker processes read them."""
    import sys

    from conftest import ROOT, write_settings

    sys.path.insert(0, str(ROOT))
    from bench.monitor import GOLDEN, make_traces

    (dest / "traces").mkdir(parents=True)
    sections = {"warehouse": {"dir": "warehouse"}, "corpus": {"dir": "corpus"}, "golden": {"path": str(GOLDEN)},
                "monitor": {"traces_dir": "traces", "workers": 2, "min_traces": 1}}  # fmt: skip
    write_settings(dest / "ragpipe.toml", sections)
    make_traces(dest / "traces", traces, 6)
    with next((dest / "traces").glob("*-002.jsonl")).open("a") as f:
        f.write('{oops\n{"question": 1}\n')
    return dest


def monitor_state(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    from ragpipe.settings import load_settings
    from ragpipe.warehouse import connect

    with connect(load_settings(root / "ragpipe.toml").duckdb_path, read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in MONITOR_STATE.items()}


def monitor_reference(base: Path, dest: Path) -> tuple[list[int], dict[str, Any]]:
    """`ragpipe monitor` never killed: which of its output lines are reading progress (a block stored: where kill
    points are drawn from, so that each falls while traces are read) and its end state."""
    import shutil

    shutil.copytree(base, dest)
    code, out = ragpipe_cli(dest, "monitor").finish(900)
    assert code == 0, out[-4000:]
    progress = [n for n, line in enumerate(out.splitlines(), 1) if "traces so far" in line]
    return progress, monitor_state(dest)


def monitor_points(seed: int, n: int, progress: list[int]) -> list[KillPoint]:
    rng = random.Random(seed)
    return [KillPoint(rng.choice(progress[:-1] or progress), round(rng.uniform(0, 0.5), 2)) for _ in range(n)]


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        try:
            stat = (Path("/proc") / entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's new parent may never reap it)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def monitor_kill_and_complete(base: Path, dest: Path, point: KillPoint, group: bool) -> tuple[bool, list[int]]:
    """`ragpipe monitor` SIGKILLed at `point` (its process group, or the process alone as the out-of-memory killer
    kills), then run again to the end; (whether the kill landed in the run, the worker processes still running 20 s
    after it: none may be)."""
    import shutil
    import signal

    shutil.copytree(base, dest)
    run = ragpipe_cli(dest, "monitor")
    deadline = time.monotonic() + 900
    while len(run.lines) < point.line and run.p.poll() is None:
        assert time.monotonic() < deadline, run.output[-4000:]
        time.sleep(0.01)
    time.sleep(point.delay_s)
    landed, workers = run.p.poll() is None, children(run.p.pid)
    if group:
        run.sigkill()
    else:
        os.kill(run.p.pid, signal.SIGKILL)
        run.p.wait(30)
    deadline = time.monotonic() + 20
    while any(running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    orphans = [w for w in workers if running(w)]
    for w in orphans:
        os.kill(w, signal.SIGKILL)
    code, out = ragpipe_cli(dest, "monitor").finish(900)
    assert code == 0, f"{point}: the run after the kill did not complete:\n{out[-4000:]}"
    return landed, orphans
