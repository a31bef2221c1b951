"""On-demand assets (the niah and authoring groups) run when asked for, not swept along by a 'Materialize all' of the
whole graph in the UI: hours of NIAH trials or a batch of proposals nobody asked for. Such a run also selects assets
outside the on-demand groups; there the on-demand step logs why and materializes nothing (its output is optional)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator

import dagster as dg

from ragpipe.assets.staleness import ON_DEMAND_GROUPS


def swept_along(context: dg.AssetExecutionContext) -> list[str]:
    """The assets outside the on-demand groups that this step's run also selects (empty when it was asked for)."""
    layer = context.job_def.asset_layer
    selection = context.run.asset_selection or layer.selected_asset_keys  # a job run whole selects all it holds
    graph = layer.asset_graph
    return sorted(
        k.to_user_string() for k in selection if graph.has(k) and graph.get(k).group_name not in ON_DEMAND_GROUPS
    )


def on_demand(how: str) -> Callable[[Callable[..., Any]], Callable[..., Iterator[Any]]]:
    """The compute function of an on-demand asset (declared with output_required=False), skipped with a warning in a
    run that sweeps the whole graph; `how` says how to run it on purpose."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
        @functools.wraps(fn)
        def step(context: dg.AssetExecutionContext, *args: Any, **kwargs: Any) -> Iterator[Any]:
            others = swept_along(context)
            if others:
                context.log.warning(
                    f"{context.asset_key.to_user_string()} not run: it runs on demand only, and this run selects the "
                    f"whole graph ({', '.join(others[:4])}{', ...' if len(others) > 4 else ''}); {how}"
                )
                return
            yield fn(context, *args, **kwargs)

        return step

    return wrap
