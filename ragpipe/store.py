"""LanceDB vector store: one table per embedder tag, synced incrementally by content hash.

The store is a local directory or an s3:// URI ([warehouse].lancedb_uri); `open_store(settings)` is the one place
that turns the settings into a connection. Everything used here works the same on object storage: adds, deletes by
chunk id, lookups by content hash, the native (non-tantivy) BM25 index and the IVF_HNSW_SQ vector index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa

from ragpipe.chunk import Chunk
from ragpipe.embed import Embedder, Progress
from ragpipe.objstore import explain, lance_storage_options
from ragpipe.settings import S3Settings, Settings, is_remote_uri


def table_name(embedder_tag: str) -> str:
    return "emb_" + re.sub(r"[^A-Za-z0-9_]+", "_", embedder_tag)


def connect(uri: str | Path, s3: S3Settings | None = None) -> Any:
    """Connect to a LanceDB store: a local directory (created when missing) or an s3://bucket/prefix URI.

    `s3` gives the endpoint, region and plain-HTTP permission of an s3:// store; credentials are taken from the
    environment by LanceDB itself. A store that cannot be reached raises ObjectStoreError naming the URI.
    """
    import lancedb

    uri = str(uri)
    if not is_remote_uri(uri):
        Path(uri).mkdir(parents=True, exist_ok=True)
        return lancedb.connect(uri)
    try:
        # LanceDB lists the store's manifest on connect: a missing bucket or a dead endpoint fails here.
        return lancedb.connect(uri, storage_options=lance_storage_options(s3 or S3Settings()))
    except (ValueError, OSError, RuntimeError) as exc:
        raise explain(exc, "open the LanceDB store", uri, s3) from None


def open_store(settings: Settings) -> Any:
    """The project's LanceDB store, wherever [warehouse].lancedb_uri puts it."""
    return connect(settings.lancedb_uri, settings.s3)


def _schema(dims: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("chunk_id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("text", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("n_tokens", pa.int32()),
            pa.field("run_id", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dims)),
        ]
    )


def open_table(db: Any, embedder_tag: str, dims: int) -> Any:
    name = table_name(embedder_tag)
    try:
        return db.open_table(name)
    except ValueError as exc:
        if "not found" not in str(exc).lower() and "does not exist" not in str(exc).lower():
            raise explain(exc, f"open the LanceDB table {name} in", str(db.uri), None) from None
    try:
        return db.create_table(name, schema=_schema(dims), exist_ok=True)
    except (ValueError, OSError, RuntimeError) as exc:
        raise explain(exc, f"create the LanceDB table {name} in", str(db.uri), None) from None


@dataclass
class SyncStats:
    current: int = 0
    embedded: int = 0
    reused: int = 0
    deleted: int = 0
    kept: int = 0
    precomputed: int = 0  # new texts whose vectors came from embedding shards
    encode_seconds: float = 0.0


def _sql_list(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


@dataclass
class VectorDiff:
    """What it takes to make a table hold exactly a set of chunks."""

    to_add: list[Chunk]  # chunk ids not in the table
    stale: list[str]  # chunk ids in the table that are no longer current
    kept: int
    reuse: list[Chunk]  # new ids whose text is already embedded (content-hash cache)
    fresh: dict[str, Chunk]  # content hash -> the first chunk (by doc id, chunk id) with that text: to embed


def diff_vectors(table: Any, chunks: list[Chunk]) -> VectorDiff:
    """Recomputed from the table itself on every run, so a run killed at any point is completed by the next."""
    existing = table.to_arrow().select(["chunk_id", "content_hash"]).to_pylist() if table.count_rows() else []
    existing_ids = {r["chunk_id"] for r in existing}
    wanted = {c.chunk_id: c for c in chunks}
    to_add = [c for cid, c in wanted.items() if cid not in existing_ids]
    # The cache key is (embedder tag, content hash): a chunk whose text is already embedded reuses that vector.
    known_hashes = {r["content_hash"] for r in existing}
    fresh: dict[str, Chunk] = {}
    for c in sorted(to_add, key=lambda c: (c.doc_id, c.chunk_id)):  # identical new texts are embedded once
        if c.content_hash not in known_hashes:
            fresh.setdefault(c.content_hash, c)
    return VectorDiff(
        to_add=to_add,
        stale=sorted(existing_ids - set(wanted)),
        kept=len(existing_ids & set(wanted)),
        reuse=[c for c in to_add if c.content_hash in known_hashes],
        fresh=fresh,
    )


def sync_vectors(
    db: Any,
    embedder: Embedder,
    chunks: list[Chunk],
    run_id: str,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    precomputed: Mapping[str, np.ndarray] | None = None,
) -> tuple[Any, SyncStats]:
    """Make the embedder's table hold exactly `chunks`. Unchanged chunks are never re-embedded.

    `precomputed` (content hash -> vector, e.g. from embedding shards) supplies vectors for new texts; the rest are
    encoded here. Order matters for crash safety: new rows are added before stale ones are deleted.
    """
    import time

    table = open_table(db, embedder.tag, embedder.dims)
    d = diff_vectors(table, chunks)
    stats = SyncStats(current=len(chunks), kept=d.kept)
    vectors: dict[str, np.ndarray] = {}
    if d.reuse:
        hashes = sorted({c.content_hash for c in d.reuse})
        for i in range(0, len(hashes), 500):
            rows = table.search().where(f"content_hash IN ({_sql_list(hashes[i:i + 500])})").limit(None).to_arrow()
            for h, v in zip(rows["content_hash"].to_pylist(), rows["vector"].to_numpy(zero_copy_only=False)):
                vectors[h] = np.asarray(v, dtype=np.float32)
    given = {h: np.asarray(precomputed[h], dtype=np.float32) for h in d.fresh if precomputed and h in precomputed}
    vectors.update(given)
    todo = {h: c.text for h, c in d.fresh.items() if h not in given}
    if todo:
        t0 = time.perf_counter()
        encoded = embedder.encode(list(todo.values()), progress=progress)
        stats.encode_seconds = time.perf_counter() - t0
        for h, v in zip(todo, encoded):
            vectors[h] = v
    stats.embedded = len(todo)
    stats.precomputed = len(given)
    stats.reused = len(d.to_add) - len(d.fresh)

    to_add = d.to_add
    if to_add:
        n_tokens = embedder.count_tokens([c.text for c in to_add])
        batch = pa.table(
            {
                "chunk_id": [c.chunk_id for c in to_add],
                "doc_id": [c.doc_id for c in to_add],
                "text": [c.text for c in to_add],
                "content_hash": [c.content_hash for c in to_add],
                "n_tokens": pa.array(n_tokens, pa.int32()),
                "run_id": [run_id] * len(to_add),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.stack([vectors[c.content_hash] for c in to_add]).ravel(), pa.float32()), embedder.dims
                ),
            },
            schema=_schema(embedder.dims),
        )
        table.add(batch)
    for i in range(0, len(d.stale), 500):
        table.delete(f"chunk_id IN ({_sql_list(d.stale[i:i + 500])})")
    stats.deleted = len(d.stale)
    if log:
        log(
            f"vectors for {embedder.tag}: {stats.current} current, {stats.embedded} embedded"
            + (f" + {stats.precomputed} from shards" if stats.precomputed else "")
            + f", {stats.reused} reused by content hash, {stats.deleted} deleted"
        )
    return table, stats


def ensure_fts_index(table: Any) -> None:
    """LanceDB's native BM25 full-text index on the chunk text (rebuilt after each sync).

    Native (use_tantivy=False) on purpose: it is stored with the table, so it works on object storage too, where a
    tantivy index (a local directory) cannot be written.
    """
    if table.count_rows():
        import warnings

        with warnings.catch_warnings():  # the replacement API (create_index with FTS config) is not stable yet
            warnings.simplefilter("ignore", DeprecationWarning)
            table.create_fts_index("text", replace=True, use_tantivy=False)


def ensure_vector_index(table: Any, min_rows: int, log: Callable[[str], None] | None = None) -> str:
    """Build an ANN index (IVF + HNSW, 8-bit scalar quantization, cosine) once the table is big enough.

    Below `min_rows` flat search is exact and fast enough. Above it the index is (re)built when it is missing or
    when more than 20 % of the rows arrived after it; rows not yet indexed are still searched exactly by LanceDB,
    so results stay complete between rebuilds. Returns what was done: "flat", "kept" or "built".
    """
    rows = table.count_rows()
    if min_rows <= 0 or rows < min_rows:
        return "flat"
    indices = [i for i in table.list_indices() if "vector" in i.columns and i.index_type != "FTS"]
    if indices:
        stats = table.index_stats(indices[0].name)
        if stats is not None and stats.num_unindexed_rows <= 0.2 * rows:
            return "kept"
    from lancedb.index import HnswSq

    # ~4k rows per partition keeps each partition's HNSW graph small; queries probe several partitions.
    table.create_index("vector", config=HnswSq(distance_type="cosine", num_partitions=max(1, rows // 4096)), replace=True)
    if log:
        log(f"built an ANN index (IVF_HNSW_SQ, cosine) over {rows} vectors")
    return "built"


def table_rows(table: Any, columns: list[str]) -> list[dict[str, Any]]:
    return table.to_arrow().select(columns).to_pylist() if table.count_rows() else []
