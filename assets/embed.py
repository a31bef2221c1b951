"""The embeddings asset: chunks -> embeddings, one step or a graph of shard steps. A thin wrapper over ragpipe.embed."""

import os
from pathlib import Path
from typing import Any

import dagster as dg

from ragpipe import embed
from ragpipe.assets.automation import RAGPIPE_CONDITION
from ragpipe.assets.errors import door
from ragpipe.assets.ingest import GROUP, data_version, prepare_embedder
from ragpipe.assets.inputs import recorded_inputs
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.sharded import ShardedStage, sharded_asset
from ragpipe.core import usable_cpus
from ragpipe.settings import Settings
from ragpipe.versions import code_version


def _embeddings_output(s: Settings, con: Any, stats: dict[str, Any]) -> tuple[dict[str, Any], dg.DataVersion]:
    metadata = {
        **stats,
        "dagster/row_count": stats["vectors"],
        "lancedb_uri": dg.MetadataValue.path(s.lancedb_uri),
        **recorded_inputs(s, "embedder"),
    }
    version = data_version(
        con,
        "SELECT embedder_tag, chunk_id FROM embeddings WHERE embedder_tag = ? ORDER BY chunk_id",
        [stats["embedder_tag"]],
    )
    return metadata, version


def build_embeddings(settings: Settings, chunks: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """One step, or with [scale].embed_shards > 1 a plan -> N shard steps -> merge graph (ragpipe.embed.shards)."""
    common = dict(
        name="embeddings",
        group_name=GROUP,
        kinds={"lancedb", "pytorch"},
        code_version=code_version(settings, "embedder"),
        metadata=recorded_inputs(settings, "embedder"),
        automation_condition=RAGPIPE_CONDITION,
        description=f"Vectors from the '{settings.embedder.name}' embedder in a LanceDB table per embedder tag. "
        "Cached by (embedder tag, content hash): unchanged chunks are never re-embedded.",
    )
    shards = settings.scale.embed_shards
    if shards <= 1:

        @dg.asset(deps=[chunks], pool="duckdb", **common)
        @door
        def embeddings(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
            s = ragpipe.settings()
            prepare_embedder(context, s)
            with ragpipe.warehouse() as con:
                metadata, version = _embeddings_output(
                    s, con, embed.embed_chunks(s, con, context.run.run_id, log=context.log.info)
                )
            return dg.MaterializeResult(metadata=metadata, data_version=version)

        return embeddings

    return sharded_asset(EMBED_SHARDS, shards, chunks, **common)


def _embed_plan(context: Any, ragpipe: RagpipeResource, shards: int) -> str:
    s = ragpipe.settings()
    prepare_embedder(context, s)
    with ragpipe.warehouse() as con:
        return embed.plan_embed_shards(s, con, shards, log=context.log.info)["stage"]


def _embed_shard(context: Any, ragpipe: RagpipeResource, stage: str, i: int, shards: int) -> dict[str, Any]:
    # Shards of one run share this machine's cores under the multiprocess executor; on a cluster executor each step
    # has its own machine: RAGPIPE_SHARD_THREADS says so.
    threads = int(os.environ.get("RAGPIPE_SHARD_THREADS") or max(1, usable_cpus() // shards))
    stats = embed.embed_shard(ragpipe.settings(), Path(stage), i, shards, log=context.log.info, threads=threads)
    return {**stats, "threads": threads, "pid": os.getpid()}


EMBED_SHARDS = ShardedStage(
    prefix="embed",
    plan=_embed_plan,
    shard=_embed_shard,
    merge=embed.merge_embed_shards,
    output=_embeddings_output,
    plan_doc="Which texts need a vector, one work file per shard (reads DuckDB and LanceDB).",
    shard_doc="One shard's vectors into the staging directory; touches no database, so shards run in parallel.",
    merge_doc="Every shard's vectors into the LanceDB table (content-hash sync: any order gives the same table).",
)
