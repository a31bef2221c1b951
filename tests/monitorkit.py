"""What the monitoring tests share: a project whose [monitor] reads its traces folder, reading it, and querying it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import write_settings

from ragpipe.monitor import ingest_traces
from ragpipe.settings import Settings, load_settings
from ragpipe.warehouse import connect


def traces_settings(root: Path, golden: Path, corpus: str = "corpus", **monitor: Any) -> Settings:
    (root / "traces").mkdir(parents=True, exist_ok=True)
    sections = {
        "warehouse": {"dir": "warehouse"},
        "corpus": {"dir": corpus},
        "golden": {"path": str(golden)},
        "monitor": {"traces_dir": "traces", **monitor},
    }
    return load_settings(write_settings(root / "ragpipe.toml", sections))


def ingest(s: Settings) -> Any:
    with connect(s.duckdb_path) as con:
        return ingest_traces(s, con)


def rows(s: Settings, sql: str) -> list[tuple[Any, ...]]:
    with connect(s.duckdb_path, read_only=True) as con:
        return con.execute(sql).fetchall()
