"""[compare]: the verdict transitions (current -> candidate) that make `ragpipe compare` exit 1."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.core import VERDICTS
from ragpipe.settings.base import SettingsError

TRANSITIONS = tuple(f"{a}->{b}" for a in VERDICTS for b in (*VERDICTS, "none") if a != b)


@dataclass(frozen=True)
class CompareSettings:
    """`ragpipe compare` exits 1 when the candidate makes one of these transitions (current -> candidate verdict)."""

    block: tuple[str, ...] = (
        "pass->fail",
        "pass->needs_review",
        "pass->did_not_run",
        "fail->did_not_run",
        "pass->error",
        "fail->error",
    )


def check(c: CompareSettings, src: Path) -> None:
    bad = sorted(set(c.block) - set(TRANSITIONS))
    if bad:
        raise SettingsError(
            f"{src}: [compare].block has unknown transitions {bad}; write CURRENT->CANDIDATE verdicts, "
            f"e.g. pass->fail or fail->did_not_run"
        )
