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

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragpipe.embed.embedders import Embedder, Progress
from ragpipe.settings import S3Settings, Settings, is_remote_uri
from ragpipe.warehouse import explain, lance_storage_options


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


TextLoader = Callable[[list[str], list[str]], dict[str, str]]  # chunk ids, their doc ids -> {chunk id: text}
SLICE_ROWS = 1024  # new rows embedded and added per slice: memory holds one slice of texts and vectors (bench/scale.py)
KEY_COLUMNS = ["chunk_id", "doc_id", "content_hash"]


def chunk_keys(chunks: Sequence[Any] | pa.Table) -> pa.Table:
    """Ids, documents and content hashes as Arrow columns (~130 bytes a chunk, against ~800 as Python objects)."""
    if isinstance(chunks, pa.Table):
        return chunks.select(KEY_COLUMNS)
    return pa.table({k: pa.array([getattr(c, k) for c in chunks], pa.string()) for k in KEY_COLUMNS})


@dataclass
class VectorDiff:
    """What it takes to make a table hold exactly a set of chunks, as Arrow columns (no per-chunk Python objects)."""

    to_add: pa.Table  # chunks whose id is not in the table, by (doc id, chunk id), with two flags:
    #   known: their text already has a vector in the table (content-hash cache)
    #   fresh: the first of the new chunks with a text that has no vector: the texts to embed
    stale: pa.Array  # chunk ids in the table that are no longer current
    kept: int

    @property
    def n_fresh(self) -> int:
        return int(pc.sum(self.to_add["fresh"]).as_py() or 0)

    @property
    def reused(self) -> int:  # new ids whose text already has a vector (content-hash cache, or an identical new text)
        return self.to_add.num_rows - self.n_fresh

    def fresh_keys(self) -> pa.Table:
        return self.to_add.filter(self.to_add["fresh"]).select(KEY_COLUMNS)


_DIFF_SQL = """
WITH new AS (
    SELECT chunk_id, doc_id, content_hash, content_hash IN (SELECT content_hash FROM have) AS known
    FROM cur WHERE chunk_id NOT IN (SELECT chunk_id FROM have)
)
SELECT *, NOT known AND row_number() OVER (PARTITION BY content_hash ORDER BY doc_id, chunk_id) = 1 AS fresh
FROM new ORDER BY doc_id, chunk_id
"""


def diff_vectors(table: Any, chunks: Sequence[Any] | pa.Table) -> VectorDiff:
    """Recomputed from the table itself on every run, so a run killed at any point is completed by the next.

    Computed by an in-memory DuckDB over the two sets of keys: its working memory (hash tables, the sort) is freed
    when it closes. Arrow's compute functions kept about 0.5 KB per chunk in the process after the diff was done
    (87k chunks: +105 MB against +20 MB for DuckDB, the 12.5 MB result included; one-off measurement).
    """
    keys = chunk_keys(chunks)
    if table.count_rows():
        have = table_columns(table, ["chunk_id", "content_hash"])
    else:
        have = pa.table({"chunk_id": pa.array([], pa.string()), "content_hash": pa.array([], pa.string())})
    with duckdb.connect() as db:
        db.register("cur", keys)
        db.register("have", have)
        # The cache key is (embedder tag, content hash): a chunk whose text is already embedded reuses that vector
        # (known); identical new texts are embedded once, the first of them in (doc id, chunk id) order (fresh).
        to_add = db.sql(_DIFF_SQL).to_arrow_table()
        stale = db.sql("SELECT chunk_id FROM have WHERE chunk_id NOT IN (SELECT chunk_id FROM cur)").to_arrow_table()
    return VectorDiff(to_add=to_add, stale=stale["chunk_id"].combine_chunks(), kept=have.num_rows - stale.num_rows)


def _known_vectors(table: Any, hashes: list[str]) -> dict[str, np.ndarray]:
    """The vectors the table already holds for these content hashes."""
    vectors: dict[str, np.ndarray] = {}
    for i in range(0, len(hashes), 500):
        rows = (
            table.search()
            .where(f"content_hash IN ({_sql_list(hashes[i : i + 500])})")
            .select(["content_hash", "vector"])
            .limit(None)
            .to_arrow()
        )
        for h, v in zip(rows["content_hash"].to_pylist(), rows["vector"].to_numpy(zero_copy_only=False)):
            vectors[h] = np.asarray(v, dtype=np.float32)
    return vectors


def _rows(
    table: Any,
    embedder: Embedder,
    part: dict[str, list[Any]],
    texts: list[str],
    vectors: dict[str, np.ndarray],
    run_id: str,
) -> pa.Table:
    """One slice of new rows in the table's schema, each with the vector of its text."""
    ids, hashes = part["chunk_id"], part["content_hash"]
    return pa.table(
        {
            "chunk_id": ids,
            "doc_id": part["doc_id"],
            "text": texts,
            "content_hash": hashes,
            "n_tokens": pa.array(embedder.count_tokens(texts), pa.int32()),
            "run_id": [run_id] * len(ids),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.stack([vectors[h] for h in hashes]).ravel(), pa.float32()), table_dims(table)
            ),
        },
        schema=_schema(table_dims(table)),
    )


def sync_vectors(
    db: Any,
    embedder: Embedder,
    chunks: Sequence[Any] | pa.Table,
    run_id: str,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    precomputed: Mapping[str, np.ndarray] | None = None,
    load_texts: TextLoader | None = None,
    slice_rows: int | None = None,
) -> tuple[Any, SyncStats]:
    """Make the embedder's table hold exactly `chunks`. Unchanged chunks are never re-embedded.

    `chunks` are Chunk objects, or their keys (ChunkKey objects or an Arrow table of chunk_id, doc_id,
    content_hash) with `load_texts` to fetch their texts. New rows are embedded and added `slice_rows` at a time, so
    memory holds one slice of texts and vectors, and a run killed part-way keeps the slices it added. `precomputed`
    (content hash -> vector, e.g. from embedding shards) supplies vectors for new texts; the rest are encoded here.
    New rows are added before stale ones are deleted.
    """
    import time

    slice_rows = slice_rows or SLICE_ROWS  # read at call time: a benchmark may change the module default
    table = open_table(db, embedder.tag, lambda: embedder.dims)
    d = diff_vectors(table, chunks)
    n_fresh = d.n_fresh
    stats = SyncStats(current=len(chunks), kept=d.kept, reused=d.reused)
    if load_texts is None:
        by_id = {c.chunk_id: c.text for c in chunks}  # Chunk objects carry their text
        load_texts = lambda ids, _docs: {i: by_id[i] for i in ids}  # noqa: E731
    vectors: dict[str, np.ndarray] = {}  # the current slice's vectors by content hash
    done, t_start = [0], time.perf_counter()

    def slice_progress(n: int, _total: int, _secs: float) -> None:
        if progress:
            progress(done[0] + n, n_fresh, time.perf_counter() - t_start)

    for start in range(0, d.to_add.num_rows, slice_rows):
        part = d.to_add.slice(start, slice_rows).to_pydict()  # one slice as Python values
        ids, hashes = part["chunk_id"], part["content_hash"]
        texts = load_texts(ids, part["doc_id"])
        slice_texts = [texts[c] for c in ids]
        # Only one slice's vectors are held: a text embedded in an earlier slice of this run is in the table by now
        # and is looked up there like any other known text (an identical text later in this slice comes from `vectors`).
        vectors.clear()
        vectors.update(_known_vectors(table, sorted({h for h, f in zip(hashes, part["fresh"]) if not f})))
        todo: dict[str, str] = {}
        for cid, h, fresh in zip(ids, hashes, part["fresh"]):
            if fresh and h not in vectors:
                if precomputed is not None and h in precomputed:
                    vectors[h] = np.asarray(precomputed[h], dtype=np.float32)
                    stats.precomputed += 1
                else:
                    todo[h] = texts[cid]
        if todo:
            t0 = time.perf_counter()
            encoded = embedder.encode(list(todo.values()), progress=slice_progress)
            stats.encode_seconds += time.perf_counter() - t0
            vectors.update(zip(todo, encoded))
            stats.embedded += len(todo)
            done[0] += len(todo)
        table.add(_rows(table, embedder, part, slice_texts, vectors, run_id))
    for i in range(0, len(d.stale), 500):
        table.delete(f"chunk_id IN ({_sql_list(d.stale.slice(i, 500).to_pylist())})")
    stats.deleted = len(d.stale)
    if log:
        log(
            f"vectors for {embedder.tag}: {stats.current} current, {stats.embedded} embedded"
            + (f" + {stats.precomputed} from shards" if stats.precomputed else "")
            + f", {stats.reused} reused by content hash, {stats.deleted} deleted"
        )
    return table, stats


def ensure_fts_index(table: Any, changed: bool = True) -> None:
    """LanceDB's native BM25 full-text index on the chunk text (rebuilt after a sync that changed rows, and when rows
    are not in it: a run stopped between its sync and the rebuild leaves them searched but scored apart).

    Native (use_tantivy=False) on purpose: it is stored with the table, so it works on object storage too, where a
    tantivy index (a local directory) cannot be written.
    """
    fts = [i for i in table.list_indices() if i.index_type == "FTS"]
    if not changed and fts and not getattr(table.index_stats(fts[0].name), "num_unindexed_rows", 1):
        return  # rebuilding is O(table): a sync that added and deleted nothing keeps a complete index
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
    table.create_index(
        "vector", config=HnswSq(distance_type="cosine", num_partitions=max(1, rows // 4096)), replace=True
    )
    if log:
        log(f"built an ANN index (IVF_HNSW_SQ, cosine) over {rows} vectors")
    return "built"


def table_batches(table: Any, columns: list[str]) -> pa.RecordBatchReader:
    """Only these columns of every row, a batch at a time: a projected scan (for a consumer that streams, e.g. a
    DuckDB insert; to_arrow() on the table would read every vector and text first)."""
    return table.search().select(columns).limit(None).to_batches()


def table_columns(table: Any, columns: list[str]) -> pa.Table:
    """The projected scan of table_batches, whole."""
    return table_batches(table, columns).read_all()


def table_rows(table: Any, columns: list[str]) -> list[dict[str, Any]]:
    return table_columns(table, columns).to_pylist() if table.count_rows() else []
