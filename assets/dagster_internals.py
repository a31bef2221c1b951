"""Every use of Dagster's private API (`dagster._...`), in one place.

Dagster's public Python API has no staleness reader and no retry-mode type for a custom executor; the UI reads
staleness over GraphQL. Each name below says the public alternative and why it is not used yet;
tests/test_dagster_internals.py checks the shape ragpipe relies on, so a Dagster upgrade that moves or changes one
fails there, by name, instead of somewhere in a run. No other module may import `dagster._` (tests/project/test_architecture.py).
"""

from __future__ import annotations

from typing import Any

import dagster as dg

# The type of Definitions.resolve_asset_graph() (public method, private return type): used for annotations only.
# Public alternative: annotate with Any.
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph

# Why an asset is stale and how: the same resolver the UI's GraphQL `assetNodes { staleStatus staleCauses }` uses.
# Public alternative: query the webserver's GraphQL API (needs a running webserver; `ragpipe status` and the
# inputs_current sensor read the instance directly).
from dagster._core.definitions.data_version import (
    CachingStaleStatusResolver,
    StaleCause,
    StaleCauseCategory,
    StaleStatus,
)

# The retry mode dagster-celery's CeleryExecutor takes in its constructor. Public alternative: the run config
# `execution: {config: {retries: {disabled: {}}}}`, which the executor's config schema parses into this same value.
from dagster._core.execution.retries import RetryMode

# The resolver's loading context (an abstract class with `instance` and `loaders`).
from dagster._core.loader import LoadingContext

__all__ = [
    "BaseAssetGraph",
    "StaleCause",
    "StaleCauseCategory",
    "StaleStatus",
    "RetryMode",
    "stale_status_resolver",
    "retries_disabled",
]


class _Loading(LoadingContext):
    def __init__(self, instance: dg.DagsterInstance):
        self._instance = instance
        self._loaders: dict = {}

    @property
    def instance(self) -> dg.DagsterInstance:
        return self._instance

    @property
    def loaders(self) -> dict:
        return self._loaders


def stale_status_resolver(instance: dg.DagsterInstance, graph: Any) -> CachingStaleStatusResolver:
    """Dagster's own staleness resolver over `graph` (Definitions.resolve_asset_graph()) and the instance."""
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=_Loading(instance))


def retries_disabled() -> RetryMode:
    return RetryMode(RetryMode.DISABLED)
