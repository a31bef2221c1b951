"""Kills at random points (tests/killkit.py): `ragpipe ci` after a chunker change (every stage from chunks down to
verdicts redone) SIGKILLed at moments drawn from its own output with a fixed seed, then run again; the documents,
chunks, vectors (DuckDB's mirror and LanceDB's table) and verdicts equal those of the same change never killed, and no
temporary file or process is left. More points, and other seeds, in bench/kills.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from faultkit import evaluated_base
from killkit import (
    kill_and_complete,
    lance,
    leftovers,
    monitor_base,
    monitor_kill_and_complete,
    monitor_points,
    monitor_reference,
    monitor_state,
    points,
    rechunk,
    reference_run,
    state,
)

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]
SEED = int(os.environ.get("RAGPIPE_KILL_SEED", "20261205"))
POINTS = int(os.environ.get("RAGPIPE_KILL_POINTS", "2"))


def test_ci_killed_at_random_points_ends_as_a_run_never_killed(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    base = evaluated_base(tmp_path_factory)
    reference, lines, expected = reference_run(base, tmp_path / "reference", rechunk)
    assert lance(reference) == [r[0] for r in expected["vectors"]]
    landed = 0
    for i, point in enumerate(points(SEED, POINTS, lines)):
        p, killed = kill_and_complete(base, tmp_path / f"kill-{i}", rechunk, point)
        print(
            f"seed {SEED}, kill {i + 1} of {POINTS} at {point} of {lines} lines: {'landed' if killed else 'too late'}"
        )
        landed += killed
        got = state(p)
        for name in expected:
            assert got[name] == expected[name], f"seed {SEED}, kill at {point}: {name} differ"
        assert lance(p) == [r[0] for r in expected["vectors"]], f"seed {SEED}, kill at {point}: LanceDB differs"
        assert leftovers(p.root) == [], f"seed {SEED}, kill at {point}"
    assert landed == POINTS  # every point fell inside the run (drawn from its own output)


def test_monitor_killed_at_random_points_ends_as_a_run_never_killed(tmp_path: Path) -> None:
    """`ragpipe monitor` reading 30,000 traces in two worker processes, SIGKILLed while it reads (its process group,
    then the process alone), then run again: the same traces, problems and file states as a run never killed, every
    trace once, and no worker left running."""
    base = monitor_base(tmp_path / "base", 30000)
    progress, expected = monitor_reference(base, tmp_path / "reference")
    assert len(expected["traces"]) == 30000 and len(expected["problems"]) == 2 and len(progress) >= 6
    for i, point in enumerate(monitor_points(SEED, POINTS, progress)):
        dest = tmp_path / f"kill-{i}"
        landed, orphans = monitor_kill_and_complete(base, dest, point, group=i % 2 == 0)
        where = f"seed {SEED}, kill {i + 1} of {POINTS} at {point} ({'group' if i % 2 == 0 else 'process alone'})"
        print(f"{where}: {'landed' if landed else 'too late'}")
        assert landed, where
        assert orphans == [], where
        assert monitor_state(dest) == expected, where
