"""heartbeat: long work without progress events of its own reports its progress-bar state as log lines."""

from __future__ import annotations

import sys
import time

import pytest
from tqdm import tqdm

from ragpipe.core import heartbeat


def test_a_progress_bar_on_stderr_becomes_log_lines_with_its_count_and_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines: list[str] = []
    with heartbeat(lines.append, "building the static model", every_s=0.05):
        for _ in tqdm(range(40), mininterval=0):  # a library's own bar, written to sys.stderr
            time.sleep(0.01)
    assert lines and all(line.startswith("building the static model: ") for line in lines), lines
    assert any(" so far; " in line and "it/s]" in line and "/40 [" in line for line in lines), lines
    assert "40/40" in capsys.readouterr().err  # the bar still reaches the terminal
    n = len(lines)
    time.sleep(0.15)
    assert len(lines) == n  # nothing after the work ended
    assert sys.stderr is not None and "Tee" not in type(sys.stderr).__name__  # stderr restored


def test_quiet_work_shorter_than_a_beat_logs_nothing() -> None:
    lines: list[str] = []
    with heartbeat(lines.append, "x", every_s=5):
        pass
    assert lines == []


def test_time_left_at_the_rate_so_far() -> None:
    from ragpipe.core import time_left

    assert time_left(10, 40, 20.0) == "about 1 min 0 s left"  # 30 items at 2 s each
    assert time_left(30, 40, 15.0) == "about 5 s left"
    assert time_left(0, 40, 3.0) == "" and time_left(40, 40, 9.0) == ""
