"""LanceDB vector store: one table per embedder tag, synced incrementally by content hash.

The store is a local directory or an s3:// URI ([warehouse].lancedb_uri); `open_store(settings)` is the one place
that turns the settings into a connection. Everything used here works the same on object storage: adds, deletes by
chunk id, lookups by content hash, the native (non-tantivy) BM25 index and the IVF_HNSW_SQ vector index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

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


def open_table(db: Any, embedder_tag: str, dims: int | Callable[[], int]) -> Any:
    """The embedder's table; `dims` (or a function giving it, e.g. one that loads the model) only for a new table."""
    name = table_name(embedder_tag)
    try:
        return db.open_table(name)
    except ValueError as exc:
        if "not found" not in str(exc).lower() and "does not exist" not in str(exc).lower():
            raise explain(exc, f"open the LanceDB table {name} in", str(db.uri), None) from None
    try:
        return db.create_table(name, schema=_schema(dims() if callable(dims) else dims), exist_ok=True)
    except (ValueError, OSError, RuntimeError) as exc:
        raise explain(exc, f"create the LanceDB table {name} in", str(db.uri), None) from None


def table_dims(table: Any) -> int:
    return int(table.schema.field("vector").type.list_size)


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


class ChunkKey(NamedTuple):
    """A chunk without its text: what the diff needs (texts are fetched slice by slice, see sync_vectors)."""

    chunk_id: str
    doc_id: str
    content_hash: str


TextLoader = Callable[[list[str]], dict[str, str]]  # chunk ids -> {chunk id: text}
SLICE_ROWS = 1024  # new rows embedded and added per slice: peak memory stays flat as the corpus grows (bench/scale.py)


@dataclass
class VectorDiff:
    """What it takes to make a table hold exactly a set of chunks (Chunk or ChunkKey objects)."""

    to_add: list[Any]  # chunks whose id is not in the table
    stale: list[str]  # chunk ids in the table that are no longer current
    kept: int
    reused: int  # new ids whose text already has a vector (content-hash cache, or an identical new text)
    fresh: dict[str, Any]  # content hash -> the first chunk (by doc id, chunk id) with that text: to embed


def diff_vectors(table: Any, chunks: Sequence[Any]) -> VectorDiff:
    """Recomputed from the table itself on every run, so a run killed at any point is completed by the next."""
    existing = table_columns(table, ["chunk_id", "content_hash"]) if table.count_rows() else None
    existing_ids = set(existing["chunk_id"].to_pylist()) if existing is not None else set()
    # The cache key is (embedder tag, content hash): a chunk whose text is already embedded reuses that vector.
    known_hashes = set(existing["content_hash"].to_pylist()) if existing is not None else set()
    wanted = {c.chunk_id for c in chunks}
    to_add = sorted((c for c in chunks if c.chunk_id not in existing_ids), key=lambda c: (c.doc_id, c.chunk_id))
    fresh: dict[str, Any] = {}
    for c in to_add:  # identical new texts are embedded once
        if c.content_hash not in known_hashes:
            fresh.setdefault(c.content_hash, c)
    return VectorDiff(
        to_add=to_add,
        stale=sorted(existing_ids - wanted),
        kept=len(existing_ids & wanted),
        reused=len(to_add) - len(fresh),
        fresh=fresh,
    )


def sync_vectors(
    db: Any,
    embedder: Embedder,
    chunks: Sequence[Any],
    run_id: str,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    precomputed: Mapping[str, np.ndarray] | None = None,
    load_texts: TextLoader | None = None,
    slice_rows: int | None = None,
) -> tuple[Any, SyncStats]:
    """Make the embedder's table hold exactly `chunks`. Unchanged chunks are never re-embedded.

    `chunks` are Chunk objects, or ChunkKey objects with `load_texts` to fetch their texts. New rows are embedded and
    added `slice_rows` at a time, so memory holds one slice of texts (plus this run's new vectors), and a run killed
    part-way keeps the slices it added. `precomputed` (content hash -> vector, e.g. from embedding shards) supplies
    vectors for new texts; the rest are encoded here. New rows are added before stale ones are deleted.
    """
    import time

    slice_rows = slice_rows or SLICE_ROWS  # read at call time: a benchmark may change the module default
    table = open_table(db, embedder.tag, lambda: embedder.dims)
    d = diff_vectors(table, chunks)
    stats = SyncStats(current=len(chunks), kept=d.kept, reused=d.reused)
    if load_texts is None:
        by_id = {c.chunk_id: c for c in d.to_add}
        load_texts = lambda ids: {i: by_id[i].text for i in ids}  # noqa: E731
    vectors: dict[str, np.ndarray] = {}  # this run's vectors by content hash (reused ones too: identical texts)
    done, t_start = [0], time.perf_counter()

    def slice_progress(n: int, _total: int, _secs: float) -> None:
        if progress:
            progress(done[0] + n, len(d.fresh), time.perf_counter() - t_start)

    for start in range(0, len(d.to_add), slice_rows):
        part = d.to_add[start : start + slice_rows]
        texts = load_texts([c.chunk_id for c in part])
        known = sorted({c.content_hash for c in part if c.content_hash not in d.fresh and c.content_hash not in vectors})
        for i in range(0, len(known), 500):
            rows = table.search().where(f"content_hash IN ({_sql_list(known[i:i + 500])})").select(["content_hash", "vector"]).limit(None).to_arrow()
            for h, v in zip(rows["content_hash"].to_pylist(), rows["vector"].to_numpy(zero_copy_only=False)):
                vectors[h] = np.asarray(v, dtype=np.float32)
        todo: dict[str, str] = {}
        for c in part:
            h = c.content_hash
            if h in d.fresh and h not in vectors and h not in todo:
                if precomputed is not None and h in precomputed:
                    vectors[h] = np.asarray(precomputed[h], dtype=np.float32)
                    stats.precomputed += 1
                else:
                    todo[h] = texts[c.chunk_id]
        if todo:
            t0 = time.perf_counter()
            encoded = embedder.encode(list(todo.values()), progress=slice_progress)
            stats.encode_seconds += time.perf_counter() - t0
            vectors.update(zip(todo, encoded))
            stats.embedded += len(todo)
            done[0] += len(todo)
        batch = pa.table(
            {
                "chunk_id": [c.chunk_id for c in part],
                "doc_id": [c.doc_id for c in part],
                "text": [texts[c.chunk_id] for c in part],
                "content_hash": [c.content_hash for c in part],
                "n_tokens": pa.array(embedder.count_tokens([texts[c.chunk_id] for c in part]), pa.int32()),
                "run_id": [run_id] * len(part),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.stack([vectors[c.content_hash] for c in part]).ravel(), pa.float32()), table_dims(table)
                ),
            },
            schema=_schema(table_dims(table)),
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


def ensure_fts_index(table: Any, changed: bool = True) -> None:
    """LanceDB's native BM25 full-text index on the chunk text (rebuilt after a sync that changed rows).

    Native (use_tantivy=False) on purpose: it is stored with the table, so it works on object storage too, where a
    tantivy index (a local directory) cannot be written.
    """
    if not changed and any(i.index_type == "FTS" for i in table.list_indices()):
        return  # rebuilding is O(table): a sync that added and deleted nothing keeps the index it has
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


def table_columns(table: Any, columns: list[str]) -> pa.Table:
    """Only these columns of every row: a projected scan (to_arrow() would read every vector and text first)."""
    return table.search().select(columns).limit(None).to_arrow()


def table_rows(table: Any, columns: list[str]) -> list[dict[str, Any]]:
    return table_columns(table, columns).to_pylist() if table.count_rows() else []
