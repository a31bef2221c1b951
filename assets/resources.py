"""The one resource every asset uses: ragpipe's settings file, and what it opens (lazily, at run time)."""

from __future__ import annotations

import pickle
from contextlib import contextmanager
from typing import Any, Iterator

import dagster as dg
import duckdb

from ragpipe.settings import Settings, load_settings
from ragpipe.warehouse import Staging, connect


class RagpipeResource(dg.ConfigurableResource):
    """Points at ragpipe.toml. Nothing is opened until an asset asks: no database or model at import time."""

    settings_path: str

    def settings(self) -> Settings:
        return load_settings(self.settings_path)

    @contextmanager
    def warehouse(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.settings().duckdb_path, read_only=read_only, wait_s=120.0) as con:
            yield con


class StagingIOManager(dg.ConfigurableIOManager):
    """What steps hand each other (a plan's stage name, a shard's) as small pickles in [warehouse].staging_uri: with
    an s3:// URI, steps on machines that share no disk (the cluster executor) find each other's outputs there."""

    settings_path: str

    def _staging(self) -> Staging:
        return Staging(load_settings(self.settings_path), "outputs")

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        self._staging().put_bytes("/".join(context.get_identifier()), pickle.dumps(obj))

    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        if upstream is None:  # an asset input from outside the run: this IO manager never wrote it
            raise ValueError(f"{context.name}: no upstream step output to load from the staging store")
        return pickle.loads(self._staging().get_bytes("/".join(upstream.get_identifier())))
