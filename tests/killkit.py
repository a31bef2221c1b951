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
