"""Ingestion assets: corpus -> documents -> chunks -> embeddings. Thin wrappers over ragpipe.ingest."""


import hashlib
from typing import Any

import dagster as dg

from ragpipe import ingest
from ragpipe.settings import Settings

from assets.automation import RAGPIPE_CONDITION
from assets.resources import RagpipeResource

GROUP = "ingest"


def _version(con: Any, sql: str, params: list[Any] | None = None) -> dg.DataVersion:
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


def build_ingest_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """Code versions come from each stage's own settings, so a chunker edit marks chunks (not documents) stale."""

    @dg.asset(
        name="corpus",
        group_name=GROUP,
        kinds={"duckdb", "filesystem"},
        code_version=settings.code_version("corpus"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="Files under the corpus directory with their SHA-256 (symlinks leaving it are not followed).",
    )
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
                },
                data_version=dg.DataVersion(stats["manifest_sha256"][:16]),
            )

    @dg.asset(
        name="documents",
        deps=[corpus],
        group_name=GROUP,
        kinds={"duckdb", "unstructured"},
        code_version=settings.code_version("parser"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="Each file partitioned with unstructured (titles, element types, pages). Bad files become "
        "ingest_errors rows and are skipped; only new or changed files are parsed.",
    )
    def documents(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = ingest.parse_documents(s, con, context.run.run_id, log=context.log.info)
            return dg.MaterializeResult(
                metadata={
                    **{k: v for k, v in stats.items()},
                    "dagster/row_count": stats["documents"],
                    "errors": dg.MetadataValue.md(_errors_md(con)),
                },
                data_version=_version(con, "SELECT doc_id, sha256 FROM documents ORDER BY doc_id"),
            )

    @dg.asset(
        name="chunks",
        deps=[documents],
        group_name=GROUP,
        kinds={"duckdb", "unstructured"},
        code_version=settings.code_version("chunker"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description=f"Chunks under the '{settings.chunker.strategy}' chunker with deterministic, content-addressed ids "
        "and exact character spans into the document text.",
    )
    def chunks(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = ingest.chunk_documents(s, con, context.run.run_id, log=context.log.info)
            return dg.MaterializeResult(
                metadata={**stats, "dagster/row_count": stats["chunks"]},
                data_version=_version(
                    con, "SELECT chunk_id FROM chunks WHERE chunker_tag = ? ORDER BY chunk_id", [s.chunker_tag]
                ),
            )

    @dg.asset(
        name="embeddings",
        deps=[chunks],
        group_name=GROUP,
        kinds={"lancedb", "pytorch"},
        code_version=settings.code_version("embedder"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description=f"Vectors from the '{settings.embedder.name}' embedder in a LanceDB table per embedder tag. "
        "Cached by (embedder tag, content hash): unchanged chunks are never re-embedded.",
    )
    def embeddings(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = ingest.embed_chunks(s, con, context.run.run_id, log=context.log.info)
            return dg.MaterializeResult(
                metadata={
                    **stats,
                    "dagster/row_count": stats["vectors"],
                    "lancedb_uri": dg.MetadataValue.path(s.lancedb_uri),
                },
                data_version=_version(
                    con,
                    "SELECT embedder_tag, chunk_id FROM embeddings WHERE embedder_tag = ? ORDER BY chunk_id",
                    [stats["embedder_tag"]],
                ),
            )

    return [corpus, documents, chunks, embeddings]
