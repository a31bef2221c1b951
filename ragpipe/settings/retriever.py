"""[retriever]: vector, full-text or hybrid search, how many chunks, and when an ANN index replaces flat search."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError


@dataclass(frozen=True)
class RetrieverSettings:
    mode: str = "hybrid"  # vector | fts | hybrid
    k: int = 5
    ann_min_rows: int = 50_000  # build an ANN index above this many vectors (0: always flat search)
    nprobes: int = 20  # ANN partitions probed per query


def check(r: RetrieverSettings, src: Path) -> None:
    if r.mode not in ("vector", "fts", "hybrid"):
        raise SettingsError(f"{src}: [retriever].mode must be vector, fts or hybrid, got {r.mode!r}")
    if r.k < 1:
        raise SettingsError(f"{src}: [retriever].k must be at least 1")
