"""The one resource every asset uses: ragpipe's settings file, and what it opens (lazily, at run time)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import dagster as dg
import duckdb

from ragpipe.settings import Settings, load_settings
from ragpipe.warehouse import connect


class RagpipeResource(dg.ConfigurableResource):
    """Points at ragpipe.toml. Nothing is opened until an asset asks: no database or model at import time."""

    settings_path: str

    def settings(self) -> Settings:
        return load_settings(self.settings_path)

    @contextmanager
    def warehouse(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.settings().duckdb_path, read_only=read_only, wait_s=120.0) as con:
            yield con
