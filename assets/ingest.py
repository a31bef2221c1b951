"""Ingestion assets: corpus -> documents -> chunks (then embeddings: assets/embed.py). Thin wrappers over ragpipe.ingest."""

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import dagster as dg

from ragpipe import embed, ingest
from ragpipe.assets.automation import RAGPIPE_CONDITION
from ragpipe.assets.errors import door
from ragpipe.assets.inputs import CHANGE, recorded_inputs
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.sharded import ShardedStage, sharded_asset
from ragpipe.core import heartbeat
from ragpipe.settings import Settings
from ragpipe.versions import code_version

GROUP = "ingest"


def data_version(con: Any, sql: str, params: list[Any] | None = None) -> dg.DataVersion:
    """A data version from the content of a query: downstream is stale only when the content really changed."""
    h = hashlib.sha256()
    for row in con.execute(sql, params or []).fetchall():
        h.update(repr(row).encode())
    return dg.DataVersion(h.hexdigest()[:16])


def _errors_md(con: Any, stage: str | None = None) -> str:
    rows = con.execute(
        "SELECT path, stage, error_class, message FROM ingest_errors "
        + ("WHERE stage = ? " if stage else "")
        + "ORDER BY stage, path LIMIT 50",
        [stage] if stage else [],
    ).fetchall()
    if not rows:
        return "No ingest errors."
    lines = ["| path | stage | error | message |", "|---|---|---|---|"]
    lines += [f"| {p} | {s} | {c} | {m.replace('|', '/')[:200]} |" for p, s, c, m in rows]
    return "\n".join(lines)


def prepare_embedder(context: Any, s: Settings) -> None:
    """Build a new embedder's local model before taking the warehouse's writer lock (`ragpipe sql` keeps answering).
    The documents stage needs it too when it embeds while parsing ([scale].embed_while_parsing)."""
    t0 = time.perf_counter()
    with heartbeat(context.log.info, f"building the {s.embedder.name} model (once; minutes on a small machine)"):
        built = embed.prepare(s.embedder, s.models_dir)
    if built:
        context.log.info(f"built the {s.embedder.name} model under {s.models_dir} in {time.perf_counter() - t0:.0f} s")


def build_ingest_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """Code versions come from each stage's own settings, so a chunker edit marks chunks (not documents) stale."""

    @dg.asset(
        name="corpus",
        group_name=GROUP,
        kinds={"duckdb", "filesystem"},
        code_version=code_version(settings, "corpus"),
        metadata=recorded_inputs(settings, "corpus"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="Files under the corpus directory with their SHA-256 (symlinks leaving it are not followed).",
    )
    @door
    def corpus(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = ingest.sync_corpus(s, con, context.run.run_id, log=context.log.info)
            return dg.MaterializeResult(
                metadata={
                    "corpus_dir": dg.MetadataValue.path(str(s.corpus.dir)),
                    "files": stats["files"],
                    "bytes": stats["bytes"],
                    "skipped_files": stats["problems"],
                    "skipped": dg.MetadataValue.md(_errors_md(con, "corpus")),
                    CHANGE: stats["change"] or "nothing",
                    **recorded_inputs(s, "corpus"),
                },
                data_version=dg.DataVersion(stats["manifest_sha256"][:16]),
            )

    documents = build_documents(settings, corpus)

    @dg.asset(
        name="chunks",
        deps=[documents],
        group_name=GROUP,
        kinds={"duckdb", "unstructured"},
        code_version=code_version(settings, "chunker"),
        metadata=recorded_inputs(settings, "chunker"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description=f"Chunks under the '{settings.chunker.strategy}' chunker with deterministic, content-addressed ids "
        "and exact character spans into the document text.",
    )
    @door
    def chunks(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = ingest.chunk_documents(s, con, context.run.run_id, log=context.log.info)
            return dg.MaterializeResult(
                metadata={**stats, "dagster/row_count": stats["chunks"], **recorded_inputs(s, "chunker")},
                data_version=data_version(
                    con, "SELECT chunk_id FROM chunks WHERE chunker_tag = ? ORDER BY chunk_id", [s.chunker_tag]
                ),
            )

    return [corpus, documents, chunks]


def _documents_output(s: Settings, con: Any, stats: dict[str, Any]) -> tuple[dict[str, Any], dg.DataVersion]:
    metadata = {
        **stats,
        "dagster/row_count": stats["documents"],
        "errors": dg.MetadataValue.md(_errors_md(con)),
        **recorded_inputs(s, "parser"),
    }
    return metadata, data_version(con, "SELECT doc_id, sha256, parser_tag FROM documents ORDER BY doc_id")


def build_documents(settings: Settings, corpus: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """One step, or with [scale].parse_shards > 1 a plan -> N shard steps -> merge graph (ragpipe.ingest.parse_shards)."""
    common = dict(
        name="documents",
        group_name=GROUP,
        kinds={"duckdb", "unstructured"},
        code_version=code_version(settings, "parser"),
        metadata=recorded_inputs(settings, "parser"),
        automation_condition=RAGPIPE_CONDITION,
        description="Each file partitioned with unstructured (titles, element types, pages). Bad files become "
        "ingest_errors rows and are skipped; only new or changed files are parsed.",
    )
    shards = settings.scale.parse_shards
    if shards <= 1:

        @dg.asset(deps=[corpus], pool="duckdb", **common)
        @door
        def documents(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
            s = ragpipe.settings()
            if s.scale.embed_while_parsing:
                prepare_embedder(context, s)
            with ragpipe.warehouse() as con:
                stats = embed.parse_documents_embedding(s, con, context.run.run_id, log=context.log.info)
                metadata, version = _documents_output(s, con, stats)
            return dg.MaterializeResult(metadata=metadata, data_version=version)

        return documents

    return sharded_asset(PARSE_SHARDS, shards, corpus, **common)


def _parse_plan(context: Any, ragpipe: RagpipeResource, shards: int) -> str:
    with ragpipe.warehouse() as con:
        return ingest.plan_parse_shards(ragpipe.settings(), con, shards, log=context.log.info)["stage"]


def _parse_shard(context: Any, ragpipe: RagpipeResource, stage: str, i: int, shards: int) -> dict[str, Any]:
    # Shards of one run share this machine's cores and memory under the multiprocess executor; on a cluster executor
    # each step has its own machine: RAGPIPE_SHARD_WORKERS says how many parser processes it runs.
    workers = int(os.environ.get("RAGPIPE_SHARD_WORKERS") or 0)
    stats = ingest.parse_shard(ragpipe.settings(), Path(stage), i, shards, log=context.log.info, workers=workers)
    return {**stats, "pid": os.getpid()}


PARSE_SHARDS = ShardedStage(
    prefix="parse",
    plan=_parse_plan,
    shard=_parse_shard,
    merge=ingest.merge_parse_shards,
    output=_documents_output,
    plan_doc="Which files need parsing, one work file per shard (reads DuckDB).",
    shard_doc="One shard's files parsed into the staging directory; touches no database, so shards run in parallel.",
    merge_doc="Every shard's results into DuckDB in path order (the same rows whatever the shard count or order).",
)
