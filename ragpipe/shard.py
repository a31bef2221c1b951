"""Sharded embedding: new texts split by a static hash of their document, embedded independently, merged in any order.

    plan         (the one DuckDB writer)  which texts need a vector, one work file per shard
    embed_shard  (any process or machine that sees the staging directory)  that shard's vectors, written atomically
    merge        (the one DuckDB writer)  every shard's vectors into the LanceDB table through the same content-hash
                 sync as unsharded embedding, so the table is identical whatever the number or order of shards

A vector depends on its text alone (see ragpipe.embed), so which shard embedded a text does not matter. The staging
directory is named after the plan's content: a run killed after some shards finished is resumed by the next run with
the same plan, which re-embeds only the shards that have no vectors file yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ragpipe import store
from ragpipe.embed import Embedder, load_embedder
from ragpipe.settings import Settings

Log = Callable[[str], None]


def _noop(_: str) -> None:
    pass


def shard_of(doc_id: str, shards: int) -> int:
    """A static partition of documents: the same document lands in the same shard on every machine and run."""
    return int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big") % shards


def _work_file(stage: Path, i: int, n: int) -> Path:
    return stage / f"work-{i}-of-{n}.parquet"


def _vectors_file(stage: Path, i: int, n: int) -> Path:
    return stage / f"vectors-{i}-of-{n}.parquet"


def _write_atomic(table: pa.Table, path: Path) -> None:
    """Readers see the whole file or none (a killed writer leaves only a hidden temporary)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def plan(settings: Settings, con: duckdb.DuckDBPyConnection, shards: int, log: Log = _noop,
         embedder: Embedder | None = None) -> dict[str, Any]:
    """Write one work file per shard with the texts that have no vector yet; returns the staging directory and counts."""
    from ragpipe.ingest import current_chunks

    emb = embedder or load_embedder(settings.embedder, settings.models_dir)
    table = store.open_table(store.open_store(settings), emb.tag, emb.dims)
    fresh = store.diff_vectors(table, current_chunks(con, settings.chunker_tag)).fresh
    plan_id = hashlib.sha256(json.dumps([emb.tag, shards, sorted(fresh)]).encode()).hexdigest()[:12]
    stage = settings.warehouse_dir / "staging" / f"embed-{plan_id}"
    stage.mkdir(parents=True, exist_ok=True)
    parts: list[list[tuple[str, str]]] = [[] for _ in range(shards)]
    for h, c in fresh.items():
        parts[shard_of(c.doc_id, shards)].append((h, c.text))
    for i, part in enumerate(parts):
        if not _work_file(stage, i, shards).exists():
            _write_atomic(pa.table({"content_hash": [h for h, _ in part], "text": [t for _, t in part]}), _work_file(stage, i, shards))
    sizes = [len(p) for p in parts]
    log(f"embedding plan {plan_id} [{emb.tag}]: {len(fresh)} new texts in {shards} shards {sizes}")
    return {"stage": str(stage), "shards": shards, "texts": len(fresh), "shard_sizes": sizes, "embedder_tag": emb.tag}


def embed_shard(settings: Settings, stage: Path, i: int, shards: int, log: Log = _noop, threads: int = 0,
                embedder: Embedder | None = None) -> dict[str, Any]:
    """Vectors for shard i's texts. Touches no database: only the staging directory."""
    out = _vectors_file(stage, i, shards)
    if out.exists():  # a previous run with the same plan got this far
        n = pq.read_metadata(out).num_rows
        log(f"shard {i}/{shards}: {n} vectors already staged by an earlier run")
        return {"shard": i, "texts": n, "embedded": 0, "resumed": True}
    work = pq.read_table(_work_file(stage, i, shards))
    texts = work["text"].to_pylist()
    emb = embedder or load_embedder(settings.embedder, settings.models_dir, threads=threads)

    def progress(done: int, total: int, secs: float) -> None:
        log(f"shard {i}/{shards} [{emb.tag}]: {done}/{total} texts, {done / max(secs, 1e-9):.1f} texts/s")

    vectors = emb.encode(texts, progress=progress) if texts else np.zeros((0, emb.dims), dtype=np.float32)
    flat = pa.array(np.asarray(vectors, dtype=np.float32).ravel(), pa.float32())
    _write_atomic(pa.table({"content_hash": work["content_hash"], "vector": pa.FixedSizeListArray.from_arrays(flat, emb.dims)}), out)
    return {"shard": i, "texts": len(texts), "embedded": len(texts), "resumed": False}


def staged_vectors(stage: Path, shards: int, order: list[int] | None = None) -> dict[str, np.ndarray]:
    """Every finished shard's vectors by content hash (read in `order`, default ascending: the result is the same)."""
    vectors: dict[str, np.ndarray] = {}
    for i in order if order is not None else range(shards):
        path = _vectors_file(stage, i, shards)
        if path.exists():
            t = pq.read_table(path)
            mat = t["vector"].combine_chunks().flatten().to_numpy().reshape(t.num_rows, -1) if t.num_rows else []
            vectors.update(zip(t["content_hash"].to_pylist(), mat))
    return vectors


def merge(settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, stage: Path, shards: int, log: Log = _noop,
          embedder: Embedder | None = None, order: list[int] | None = None) -> dict[str, Any]:
    """Sync the table with the current chunks using the staged vectors, then drop the staging directory."""
    from ragpipe.ingest import embed_chunks

    vectors = staged_vectors(stage, shards, order)
    stats = embed_chunks(settings, con, run_id, log=log, embedder=embedder, precomputed=vectors)
    shutil.rmtree(stage, ignore_errors=True)
    return {**stats, "shards": shards}
