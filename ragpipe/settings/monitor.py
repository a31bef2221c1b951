"""[monitor]: the app's production traces (docs/monitoring.md): where they are written, which of their fields are never
stored, and how a day's rates are judged against the days before it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.settings.base import Resolve, SettingsError, build, table

# Fields dropped from every trace before anything is stored, unless [monitor].drop_fields says otherwise: who asked,
# from where, and credentials an app may log by mistake. A dotted name reaches into an object ("metadata.email").
DEFAULT_DROP = ("user", "user_id", "email", "ip", "session_id", "api_key", "authorization", "headers")


@dataclass(frozen=True)
class MonitorSettings:
    """The [monitor] section of ragpipe.toml (every key optional; without traces_dir nothing is monitored)."""

    traces_dir: Path | None = None  # JSON Lines files, one answered question per line, written by the app
    pattern: str = "*.jsonl"  # which files of traces_dir are traces (a glob; "**/*.jsonl" reaches sub-folders)
    drop_fields: tuple[str, ...] = DEFAULT_DROP  # never stored (read for the rates first, then dropped)
    window_days: int = 7  # a day's rates are judged against this many days before it
    min_traces: int = 30  # a day (or a window) with fewer traces is not judged
    sensor_interval_s: int = 60  # how often the traces sensor looks at traces_dir
    workers: int = 0  # processes reading a large batch of new traces; 0: one per core, 1: none (all in-process)

    def versioned(self, root: Path) -> dict[str, Any]:
        """What changes the stored rows (the sensor's interval and the number of workers do not); traces_dir relative to `root` when inside it,
        so that the same project gives the same code version on every machine."""
        out = dataclasses.asdict(self)
        out.pop("sensor_interval_s")
        out.pop("workers")
        if self.traces_dir is not None:
            folder = self.traces_dir.resolve()
            inside = folder.is_relative_to(root.resolve())
            out["traces_dir"] = (folder.relative_to(root.resolve()) if inside else folder).as_posix()
        return out


def read(value: Any, source: Path, resolve: Resolve) -> MonitorSettings:
    raw = table(value, "monitor", source)
    folder = raw.pop("traces_dir", "")
    if not isinstance(folder, str):
        raise SettingsError(f"{source}: [monitor].traces_dir must be a path (a folder of JSON Lines trace files)")
    ms: MonitorSettings = build(MonitorSettings, raw, "monitor", source)
    ms = dataclasses.replace(ms, traces_dir=resolve(folder) if folder.strip() else None)
    if ms.window_days < 1 or ms.min_traces < 1 or ms.sensor_interval_s < 1:
        raise SettingsError(f"{source}: [monitor].window_days, min_traces and sensor_interval_s must be at least 1")
    if ms.workers < 0:
        raise SettingsError(f"{source}: [monitor].workers must be 0 (one per core) or a number of processes")
    if not ms.pattern.strip():
        raise SettingsError(f"{source}: [monitor].pattern must be a glob such as '*.jsonl'")
    return ms
