"""Retrieval over a LanceDB table: vector top-k, native BM25 full-text, or hybrid by reciprocal-rank fusion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

IMPL_VERSION = "1"  # bump when retrieval ranks differently (part of `retrievals`' code version)

RRF_K = 60  # the constant of reciprocal-rank fusion (Cormack et al.); 60 is the customary value


@dataclass(frozen=True)
class Hit:
    rank: int  # 1-based
    chunk_id: str
    score: float


# With the ANN index (IVF_HNSW_SQ): candidates explored per HNSW search, and how many times k candidates are re-ranked
# by their full-precision vectors (8-bit codes alone misorder near neighbours). LanceDB's defaults gave recall@10 of
# 0.64 on 20k clustered synthetic vectors; ef 100 with refine 5 gave 0.97 (bench/scale.py). Flat search ignores both.
ANN_EF = 100
ANN_REFINE_FACTOR = 5


def vector_search(table: Any, vector: np.ndarray, k: int, nprobes: int = 20) -> list[Hit]:
    """Cosine top-k; uses the ANN index when the table has one (exact flat search otherwise)."""
    query = table.search(vector.astype(np.float32), vector_column_name="vector").distance_type("cosine")
    rows = query.nprobes(nprobes).ef(max(ANN_EF, k)).refine_factor(ANN_REFINE_FACTOR).limit(k).to_list()
    return [Hit(i + 1, r["chunk_id"], 1.0 - float(r["_distance"])) for i, r in enumerate(rows)]


def fts_search(table: Any, query: str, k: int) -> list[Hit]:
    try:
        rows = table.search(query, query_type="fts").limit(k).to_list()
    except ValueError:
        return []  # no full-text index yet (empty table)
    return [Hit(i + 1, r["chunk_id"], float(r["_score"])) for i, r in enumerate(rows)]


def rrf(rankings: list[list[Hit]], k: int) -> list[Hit]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for h in ranking:
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + 1.0 / (RRF_K + h.rank)
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [Hit(i + 1, cid, s) for i, (cid, s) in enumerate(best)]


def retrieve(table: Any, mode: str, k: int, query: str, vector: np.ndarray | None, nprobes: int = 20) -> list[Hit]:
    if mode == "vector":
        assert vector is not None
        return vector_search(table, vector, k, nprobes)
    if mode == "fts":
        return fts_search(table, query, k)
    # Hybrid: fuse deeper candidate lists from both retrievers, keep the top k.
    assert vector is not None
    depth = max(k * 4, 20)
    return rrf([vector_search(table, vector, depth, nprobes), fts_search(table, query, depth)], k)


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
