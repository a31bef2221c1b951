"""[golden]: the golden set file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.settings.base import Resolve, SettingsError


@dataclass(frozen=True)
class GoldenSettings:
    path: Path | None = None


def read(raw: dict[str, Any], source: Path, resolve: Resolve) -> GoldenSettings:
    golden_raw = dict(raw)
    golden = GoldenSettings(path=resolve(str(golden_raw.pop("path"))) if "path" in golden_raw else None)
    if golden_raw:
        raise SettingsError(f"{source}: unknown key(s) in [golden]: {sorted(golden_raw)}; allowed: path")
    return golden
