"""[scale]: parsing and embedding split into parallel steps (docs/scaling.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError


@dataclass(frozen=True)
class ScaleSettings:
    # Static hash partitions of documents whose new chunks are embedded in separate Dagster steps: the multiprocess
    # executor runs them in parallel here, a cluster executor on other machines. Part of no stage's code version:
    # the vectors do not depend on how the work was split.
    embed_shards: int = 1
    # The same for parsing: new and changed files parsed in N steps by a static hash of their path
    # (ragpipe.ingest.parse_shards).
    parse_shards: int = 1


def check(s: ScaleSettings, src: Path) -> None:
    if not 1 <= s.embed_shards <= 64:
        raise SettingsError(f"{src}: [scale].embed_shards must be between 1 and 64, got {s.embed_shards}")
    if not 1 <= s.parse_shards <= 64:
        raise SettingsError(f"{src}: [scale].parse_shards must be between 1 and 64, got {s.parse_shards}")
