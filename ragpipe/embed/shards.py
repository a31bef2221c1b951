"""Sharded embedding: new texts split by a static hash of their document, embedded independently, merged in any order.

    plan_embed_shards   (the one DuckDB writer)  which texts need a vector, one work file per shard
    embed_shard         (any process or machine that reaches the staging: a shared directory, or object storage with
                        [warehouse].staging_uri)  that shard's vectors, written atomically
    merge_embed_shards  (the one DuckDB writer)  every shard's vectors into the LanceDB table through the same
                        content-hash sync as unsharded embedding, so the table is identical whatever the number or
                        order of shards

A vector depends on its text alone (see ragpipe.embed.embedders), so which shard embedded a text does not matter. The
staging directory is named after the plan's content: a run killed after some shards finished is resumed by the next run
with the same plan, which re-embeds only the shards that have no vectors file yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ragpipe.core import Log, no_log
from ragpipe.embed import store
from ragpipe.embed.embedders import Embedder, LazyEmbedder, load_embedder
from ragpipe.embed.stage import chunk_text_loader, current_chunk_keys, embed_chunks
from ragpipe.embed.while_parsing import prefetched_hashes
from ragpipe.ingest import shard_of
from ragpipe.settings import Settings
from ragpipe.warehouse import Staging


def _work_name(i: int, n: int) -> str:
    return f"work-{i}-of-{n}.parquet"


def _vectors_name(i: int, n: int) -> str:
    return f"vectors-{i}-of-{n}.parquet"


@contextmanager
def _atomic_parquet(path: Path, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
    """Write a Parquet file a slice at a time; readers see the whole file or none (a killed writer leaves a hidden temp)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with pq.ParquetWriter(tmp, schema) as writer:
        yield writer
    os.replace(tmp, path)


def plan_embed_shards(
    settings: Settings, con: duckdb.DuckDBPyConnection, shards: int, log: Log = no_log, embedder: Embedder | None = None
) -> dict[str, Any]:
    """Write one work file per shard with the texts that have no vector yet (nor one embedded while parsing); returns
    the staging directory and counts."""
    emb = embedder or LazyEmbedder(settings.embedder, settings.models_dir)  # the plan needs the tag, not the model
    table = store.open_table(store.open_store(settings), emb.tag, lambda: emb.dims)
    waiting = prefetched_hashes(settings, emb.tag)  # embedded while parsing: the merge takes them as they are
    fresh = [
        store.ChunkKey(**k)
        for k in store.diff_vectors(table, current_chunk_keys(con, settings.chunker_tag)).fresh_keys().to_pylist()
        if k["content_hash"] not in waiting
    ]
    plan_id = hashlib.sha256(json.dumps([emb.tag, shards, sorted(k.content_hash for k in fresh)]).encode()).hexdigest()[
        :12
    ]
    staging = Staging(settings, f"embed-{plan_id}")
    stage = staging.local
    stage.mkdir(parents=True, exist_ok=True)
    parts: list[list[Any]] = [[] for _ in range(shards)]
    for key in fresh:
        parts[shard_of(key.doc_id, shards)].append(key)
    load = chunk_text_loader(con, settings.chunker_tag)
    schema = pa.schema([("content_hash", pa.string()), ("text", pa.string())])
    for i, part in enumerate(parts):
        path = stage / _work_name(i, shards)
        if staging.has(path.name):  # an earlier run with the same plan wrote it
            continue
        with _atomic_parquet(path, schema) as writer:  # texts streamed a slice at a time
            for start in range(0, len(part), store.SLICE_ROWS):
                keys = part[start : start + store.SLICE_ROWS]
                texts = load([k.chunk_id for k in keys], [k.doc_id for k in keys])
                writer.write_table(
                    pa.table(
                        {"content_hash": [k.content_hash for k in keys], "text": [texts[k.chunk_id] for k in keys]},
                        schema=schema,
                    )
                )
        staging.publish(path.name)
    sizes = [len(p) for p in parts]
    log(f"embedding plan {plan_id} [{emb.tag}]: {len(fresh)} new texts in {shards} shards {sizes}")
    return {"stage": str(stage), "shards": shards, "texts": len(fresh), "shard_sizes": sizes, "embedder_tag": emb.tag}


def embed_shard(
    settings: Settings,
    stage: Path,
    i: int,
    shards: int,
    log: Log = no_log,
    threads: int = 0,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Vectors for shard i's texts. Touches no database: only the staging (`stage`: the plan's staging directory,
    found by its name on this machine or in [warehouse].staging_uri)."""
    staging = Staging(settings, Path(stage).name)
    out = staging.local / _vectors_name(i, shards)
    if staging.has(out.name):  # a previous run with the same plan got this far
        log(f"shard {i}/{shards}: vectors already staged by an earlier run")
        return {"shard": i, "embedded": 0, "resumed": True}
    if not staging.fetch(_work_name(i, shards)):
        raise FileNotFoundError(
            f"{staging.remote or staging.local}: no work file for embedding shard {i} of {shards}; "
            "materialize embeddings again (its plan writes them)"
        )
    work = pq.ParquetFile(staging.local / _work_name(i, shards))
    total = work.metadata.num_rows
    emb = embedder or load_embedder(settings.embedder, settings.models_dir, threads=threads)
    done, t0 = [0], time.perf_counter()

    def progress(n: int, _total: int, _secs: float) -> None:
        log(
            f"shard {i}/{shards} [{emb.tag}]: {done[0] + n}/{total} texts, {(done[0] + n) / max(time.perf_counter() - t0, 1e-9):.1f} texts/s"
        )

    schema = pa.schema([("content_hash", pa.string()), ("vector", pa.list_(pa.float32(), emb.dims))])
    with _atomic_parquet(out, schema) as writer:  # a slice of texts in memory at a time
        for batch in work.iter_batches(batch_size=store.SLICE_ROWS):
            texts = batch.column("text").to_pylist()
            vectors = np.asarray(emb.encode(texts, progress=progress), dtype=np.float32)
            done[0] += len(texts)
            flat = pa.array(vectors.ravel(), pa.float32())
            writer.write_table(
                pa.table(
                    {
                        "content_hash": batch.column("content_hash"),
                        "vector": pa.FixedSizeListArray.from_arrays(flat, emb.dims),
                    },
                    schema=schema,
                )
            )
    staging.publish(out.name)
    staging.release()
    return {"shard": i, "texts": total, "embedded": total, "resumed": False}


def staged_vectors(staging: Staging, shards: int, order: list[int] | None = None) -> dict[str, np.ndarray]:
    """Every finished shard's vectors by content hash (read in `order`, default ascending: the result is the same)."""
    vectors: dict[str, np.ndarray] = {}
    for i in order if order is not None else range(shards):
        path = staging.local / _vectors_name(i, shards)
        if staging.fetch(path.name):
            t = pq.read_table(path)
            mat = t["vector"].combine_chunks().flatten().to_numpy().reshape(t.num_rows, -1) if t.num_rows else []
            vectors.update(zip(t["content_hash"].to_pylist(), mat))
    return vectors


def merge_embed_shards(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    stage: Path,
    shards: int,
    log: Log = no_log,
    embedder: Embedder | None = None,
    order: list[int] | None = None,
) -> dict[str, Any]:
    """Sync the table with the current chunks using the staged vectors, then drop the staging directory."""
    staging = Staging(settings, Path(stage).name)
    vectors = staged_vectors(staging, shards, order)
    stats = embed_chunks(settings, con, run_id, log=log, embedder=embedder, precomputed=vectors)
    staging.drop()
    return {**stats, "shards": shards}
