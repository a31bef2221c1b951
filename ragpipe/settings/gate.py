"""[gate]: the verdicts that make `ragpipe ci` exit 1, and how failing checks show in the UI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError


@dataclass(frozen=True)
class GateSettings:
    block: tuple[str, ...] = ("fail", "needs_review", "did_not_run", "error")  # needs_review: unsure never passes
    check_severity: str = "WARN"  # severity of the asset checks on verdicts: WARN or ERROR


def check(g: GateSettings, src: Path) -> None:
    bad = set(g.block) - {"fail", "needs_review", "did_not_run", "error", "unverified"}
    if bad:
        raise SettingsError(f"{src}: [gate].block has unknown verdicts {sorted(bad)}")
    if g.check_severity not in ("WARN", "ERROR"):
        raise SettingsError(f"{src}: [gate].check_severity must be WARN or ERROR")
