"""Retrieval over a LanceDB table: vector top-k, native BM25 full-text, or hybrid by reciprocal-rank fusion."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

IMPL_VERSION = "2"  # bump when retrieval ranks differently (part of `retrievals`' code version)

RRF_K = 60  # the constant of reciprocal-rank fusion (Cormack et al.); 60 is the customary value


class Hit(NamedTuple):
    rank: int  # 1-based
    chunk_id: str
    score: float


# With the ANN index (IVF_HNSW_SQ): candidates explored per HNSW search, and how many times k candidates are re-ranked
# by their full-precision vectors (8-bit codes alone misorder near neighbours). LanceDB's defaults gave recall@10 of
# 0.64 on 20k clustered synthetic vectors; ef 100 with refine 5 gave 0.97 (bench/scale.py). Flat search ignores both.
ANN_EF = 100
ANN_REFINE_FACTOR = 5

# Exact (flat) search: float32 scores pick the candidates within FLAT_MARGIN of the k-th best (a float32 cosine of
# unit vectors is off by far less), float64 scores of those rank them. A query's hits therefore do not depend on the
# other queries of its batch. QUERY_SLICE queries are scored at a time (a slice x rows float32 matrix).
FLAT_MARGIN = 1e-3
QUERY_SLICE = 256
# Extra full-text hits fetched, so that equal scores at the k-th place are cut by chunk id (a tie wider than the
# margin is cut where Lance cuts it: the same for a batch and for one query, which run the same search).
FTS_TIE_MARGIN = 10
FTS_THREADS = 2  # full-text queries run concurrently


def has_vector_index(table: Any) -> bool:
    return any("vector" in i.columns and i.index_type != "FTS" for i in table.list_indices())


@dataclass
class _Snapshot:
    """One table version as read by retrieval: its Lance dataset, and (read on first use) chunk ids by row id and
    the vectors with their norms. Kept for the last table searched, so one-by-one queries read it once."""

    table: Any  # held, so that the id in `key` stays this table's
    key: tuple[int, int]
    dataset: Any
    by_rowid: dict[int, str] | None = None
    ids: np.ndarray | None = None  # object array of chunk ids, in the order of `raw`
    raw: np.ndarray | None = None  # (rows, dims) float32, as stored
    unit: np.ndarray | None = None  # raw / norm (zero rows stay zero)
    norms: np.ndarray | None = None  # float64


_snapshots: list[_Snapshot] = []


def _snapshot(table: Any) -> _Snapshot:
    key = (id(table), int(table.version))
    if not _snapshots or _snapshots[0].key != key:
        _snapshots[:] = [_Snapshot(table, key, table.to_lance())]
    return _snapshots[0]


def _vectors(snap: _Snapshot) -> _Snapshot:
    if snap.raw is None:
        dims = int(snap.dataset.schema.field("vector").type.list_size)
        cols = snap.dataset.to_table(columns=["chunk_id", "vector"])
        flat = cols["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
        raw = np.ascontiguousarray(flat, dtype=np.float32).reshape(-1, dims)
        snap.norms = np.sqrt((raw.astype(np.float64) ** 2).sum(axis=1))
        snap.unit = (raw / np.where(snap.norms > 0, snap.norms, 1.0)[:, None]).astype(np.float32)
        snap.ids, snap.raw = np.asarray(cols["chunk_id"].to_pylist(), dtype=object), raw
    return snap


def _exact_cosine(snap: _Snapshot, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float64 cosine of one query against some rows, row by row (the same arithmetic whatever the batch)."""
    assert snap.raw is not None and snap.norms is not None
    qn = float(np.sqrt((q**2).sum()))
    dots = (snap.raw[rows].astype(np.float64) * q).sum(axis=1)
    den = snap.norms[rows] * qn
    return np.where(den > 0, dots / np.where(den > 0, den, 1.0), 0.0)


def _flat_search_many(table: Any, vectors: np.ndarray, k: int) -> list[list[Hit]]:
    """Exact cosine top-k of every query; equal scores are ranked by chunk id."""
    snap = _vectors(_snapshot(table))
    assert snap.ids is not None and snap.unit is not None
    n = len(snap.ids)
    if n == 0 or k <= 0:
        return [[] for _ in range(len(vectors))]
    q64 = np.asarray(vectors, dtype=np.float64)
    qn = np.sqrt((q64**2).sum(axis=1))
    q_unit = (q64 / np.where(qn > 0, qn, 1.0)[:, None]).astype(np.float32)
    kk = min(k, n)
    out: list[list[Hit]] = []
    for s in range(0, len(q64), QUERY_SLICE):
        scores = q_unit[s : s + QUERY_SLICE] @ snap.unit.T  # (slice, rows) float32
        kth = -np.partition(-scores, kk - 1, axis=1)[:, kk - 1]
        for i, row in enumerate(scores):
            cand = np.flatnonzero(row >= kth[i] - FLAT_MARGIN)
            exact = _exact_cosine(snap, cand, q64[s + i])
            ranked = sorted(zip((-exact).tolist(), snap.ids[cand].tolist()))[:kk]
            out.append([Hit(r + 1, cid, -neg) for r, (neg, cid) in enumerate(ranked)])
    return out


def _ann_query(table: Any, vectors: Any, k: int, nprobes: int) -> Any:
    query = table.search(vectors, vector_column_name="vector").distance_type("cosine")
    # HNSW must explore at least the k x refine candidates it is asked for (LanceDB refuses a smaller ef).
    ef = max(ANN_EF, k * ANN_REFINE_FACTOR)
    return query.nprobes(nprobes).ef(ef).refine_factor(ANN_REFINE_FACTOR).limit(k)


def _ranked(ids: list[str], scores: list[float]) -> list[Hit]:
    """Hits by descending score; equal scores by chunk id (the engine's order of ties is not part of the result)."""
    best = sorted(zip(scores, ids), key=lambda sc: (-sc[0], sc[1]))
    return [Hit(i + 1, cid, s) for i, (s, cid) in enumerate(best)]


def _ann_search_many(table: Any, vectors: np.ndarray, k: int, nprobes: int) -> list[list[Hit]]:
    """LanceDB's ANN search, QUERY_SLICE query vectors per call (its `query_index` column says whose row it is)."""
    out: list[list[Hit]] = []
    for s in range(0, len(vectors), QUERY_SLICE):
        part = [np.asarray(v, dtype=np.float32) for v in vectors[s : s + QUERY_SLICE]]
        rows = _ann_query(table, part if len(part) > 1 else part[0], k, nprobes)
        rows = rows.select(["chunk_id", "_distance"]).to_arrow()
        qi = rows["query_index"].to_pylist() if "query_index" in rows.column_names else [0] * rows.num_rows
        per: list[tuple[list[str], list[float]]] = [([], []) for _ in part]
        for i, cid, d in zip(qi, rows["chunk_id"].to_pylist(), rows["_distance"].to_pylist(), strict=True):
            per[i][0].append(cid)
            per[i][1].append(1.0 - float(d))
        out += [_ranked(ids, sc) for ids, sc in per]
    return out


def vector_search_many(table: Any, vectors: np.ndarray, k: int, nprobes: int = 20) -> list[list[Hit]]:
    """Cosine top-k of each query vector: exact (flat) search, or the ANN index when the table has one."""
    if len(vectors) == 0:
        return []
    if has_vector_index(table):
        return _ann_search_many(table, vectors, k, nprobes)
    return _flat_search_many(table, vectors, k)


def vector_search(table: Any, vector: np.ndarray, k: int, nprobes: int = 20) -> list[Hit]:
    """Cosine top-k; uses the ANN index when the table has one (exact flat search otherwise)."""
    return vector_search_many(table, np.asarray(vector)[None, :], k, nprobes)[0]


def _row_ids(snap: _Snapshot) -> dict[int, str]:
    if snap.by_rowid is None:
        cols = snap.dataset.to_table(columns=["chunk_id"], with_row_id=True)
        snap.by_rowid = dict(zip(cols["_rowid"].to_pylist(), cols["chunk_id"].to_pylist()))
    return snap.by_rowid


def _fts(snap: _Snapshot, query: str, k: int) -> list[Hit]:
    """BM25 on the Lance dataset itself, row ids only: a LanceDB query that reads columns costs ~10x more."""
    try:
        got = snap.dataset.to_table(
            full_text_query=query, columns=["_score"], with_row_id=True, limit=k + FTS_TIE_MARGIN
        )
    except ValueError:
        return []  # no full-text index yet (empty table)
    ids = _row_ids(snap)
    return _ranked([ids[r] for r in got["_rowid"].to_pylist()], got["_score"].to_pylist())[:k]


def fts_search(table: Any, query: str, k: int) -> list[Hit]:
    """LanceDB's native BM25 top-k; equal scores are ranked by chunk id."""
    return fts_search_many(table, [query], k)[0]


def fts_search_many(table: Any, queries: list[str], k: int) -> list[list[Hit]]:
    """The BM25 top-k of each query, FTS_THREADS queries at a time (Lance releases the GIL while it searches)."""
    snap = _snapshot(table)
    if len(queries) <= 1:
        return [_fts(snap, q, k) for q in queries]
    _row_ids(snap)
    with ThreadPoolExecutor(max_workers=FTS_THREADS) as pool:
        return list(pool.map(lambda q: _fts(snap, q, k), queries))


def rrf(rankings: list[list[Hit]], k: int) -> list[Hit]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for h in ranking:
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + 1.0 / (RRF_K + h.rank)
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [Hit(i + 1, cid, s) for i, (cid, s) in enumerate(best)]


def retrieve_many(
    table: Any, mode: str, k: int, queries: list[str], vectors: np.ndarray | None, nprobes: int = 20
) -> list[list[Hit]]:
    """retrieve() for every question at once: the query vectors in batches, the full-text queries concurrently."""
    if mode not in ("vector", "fts", "hybrid"):
        raise ValueError(f"unknown retriever mode {mode!r}; use 'vector', 'fts' or 'hybrid'")
    if mode == "fts":
        return fts_search_many(table, queries, k)
    if vectors is None or len(vectors) != len(queries):
        raise ValueError(f"{mode} retrieval needs one query vector per question")
    if mode == "vector":
        return vector_search_many(table, vectors, k, nprobes)
    # Hybrid: fuse deeper candidate lists from both retrievers, keep the top k.
    depth = max(k * 4, 20)
    dense = vector_search_many(table, vectors, depth, nprobes)
    sparse = fts_search_many(table, queries, depth)
    return [rrf([v, t], k) for v, t in zip(dense, sparse, strict=True)]


def retrieve(table: Any, mode: str, k: int, query: str, vector: np.ndarray | None, nprobes: int = 20) -> list[Hit]:
    """One question's top-k: retrieve_many with a batch of one (the same ranking code)."""
    vectors = None if vector is None else np.asarray(vector)[None, :]
    return retrieve_many(table, mode, k, [query], vectors, nprobes)[0]


def metrics(ranked: list[list[str]], relevant: list[set[str]], k: int) -> dict[str, float]:
    """hit@k, MRR and recall@k over queries with a non-empty relevant set.

    A query hits at rank r when all of its relevant ids appear within the first r results (a split anchor needs
    every part); recall@k is the fraction of relevant ids in the top k.
    """
    hits, rr, recall, n = 0.0, 0.0, 0.0, 0
    for ids, rel in zip(ranked, relevant):
        if not rel:
            continue
        n += 1
        top = ids[:k]
        found = [i for i, cid in enumerate(top) if cid in rel]
        recall += len(set(top) & rel) / len(rel)
        if set(top) >= rel:
            hits += 1
            rr += 1.0 / (max(found) + 1)
    if n == 0:
        return {"n": 0, "hit_at_k": 0.0, "mrr": 0.0, "recall_at_k": 0.0, "k": k}
    return {"n": n, "hit_at_k": hits / n, "mrr": rr / n, "recall_at_k": recall / n, "k": k}
