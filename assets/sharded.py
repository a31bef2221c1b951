"""One shape for a stage that fans out: plan -> N shard steps -> merge, as one graph asset. The documents asset with
[scale].parse_shards > 1 and the embeddings asset with [scale].embed_shards > 1 are two rows of it (ShardedStage)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import dagster as dg

from ragpipe.assets.cluster import shard_tags
from ragpipe.assets.errors import door
from ragpipe.assets.resources import RagpipeResource


@dataclass(frozen=True)
class ShardedStage:
    """The three library calls of a fanned-out stage; the steps are named <prefix>_plan, <prefix>_shard_<i>,
    <prefix>_merge."""

    prefix: str
    plan: Callable[[Any, RagpipeResource, int], str]  # (context, ragpipe, shards) -> the staging folder of the run
    shard: Callable[[Any, RagpipeResource, str, int, int], dict[str, Any]]  # (.., folder, i, shards) -> metadata
    # the library's merge, (settings, con, run_id, folder, shards, log=) -> stats, and what the asset records of them,
    # (settings, con, stats) -> (metadata, data version): the same as the stage's one-step asset records
    merge: Callable[..., dict[str, Any]]
    output: Callable[[Any, Any, dict[str, Any]], tuple[dict[str, Any], dg.DataVersion]]
    plan_doc: str
    shard_doc: str
    merge_doc: str


def sharded_asset(spec: ShardedStage, shards: int, upstream: dg.AssetsDefinition, **common: Any) -> Any:
    """`spec` as a graph asset of `shards` parallel shard steps between one plan step and one merge step (both in the
    "duckdb" pool: the only steps that touch the warehouse)."""

    @dg.op(name=f"{spec.prefix}_plan", pool="duckdb", ins={"start": dg.In(dg.Nothing)}, description=spec.plan_doc)
    @door
    def plan(context: dg.OpExecutionContext, ragpipe: RagpipeResource) -> str:
        return spec.plan(context, ragpipe, shards)

    def shard_op(i: int) -> dg.OpDefinition:
        @dg.op(name=f"{spec.prefix}_shard_{i}", tags=shard_tags(i, shards), description=spec.shard_doc)
        @door
        def one_shard(context: dg.OpExecutionContext, ragpipe: RagpipeResource, stage: str) -> str:
            context.add_output_metadata(spec.shard(context, ragpipe, stage, i, shards))
            return stage

        return one_shard

    @dg.op(name=f"{spec.prefix}_merge", pool="duckdb", description=spec.merge_doc)
    @door
    def merge(context: dg.OpExecutionContext, ragpipe: RagpipeResource, stages: list[str]) -> dg.Output:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = spec.merge(s, con, context.run.run_id, Path(stages[0]), shards, log=context.log.info)
            metadata, version = spec.output(s, con, stats)
        return dg.Output(None, metadata=metadata, data_version=version)

    @dg.graph_asset(ins={"upstream": dg.AssetIn(key=upstream.key, dagster_type=dg.Nothing)}, **common)
    def fanned_out(upstream):
        stage = plan(upstream)
        return merge([shard_op(i)(stage) for i in range(shards)])

    return fanned_out
