"""Ranking metrics for retrieval benchmarks: nDCG@k (graded), recall@k and MRR, with trec_eval's conventions.

Inputs
  run    {query_id: {doc_id: score}} or {query_id: [doc_id, ...]} (a ranked list, best first; a repeated id counts
         at its first position only)
  qrels  {query_id: {doc_id: grade}} with integer grades, as in BEIR's qrels/*.tsv

Conventions (the same as trec_eval, hence pytrec_eval and BEIR's evaluation, which uses pytrec_eval):
  * A document is relevant when its grade is > 0. Grade 0 (and any negative grade) means judged not relevant; a
    document absent from the qrels is not relevant either.
  * Scores are ranked best first; equal scores are broken by document id in DESCENDING string order, which is what
    trec_eval does (so a score dict and pytrec_eval rank identically). A ranked list is taken as given.
  * nDCG@k uses linear gain (the grade itself; 0 for grade <= 0) and the log2(rank + 1) discount:
        DCG@k = sum over ranks r = 1..k of gain(doc at r) / log2(r + 1)
    The ideal DCG@k ranks ALL relevant documents of the qrels (not only the retrieved ones) by grade, best first.
    This is trec_eval's `ndcg_cut.k` and ranx's `ndcg@k` (not the exponential 2^grade - 1 "Burges" gain).
  * recall@k = |relevant in the top k| / |relevant| (trec_eval `recall.k`).
  * reciprocal rank = 1 / rank of the first relevant document (0 when none is retrieved; trec_eval `recip_rank`);
    with k, only the top k count (MRR@k).
  * Means are over the queries of the qrels that have at least one relevant document. Such a query that is missing
    from the run (or has an empty ranking) scores 0, as with `trec_eval -c`. Queries of the run that are not in the
    qrels, or whose qrels have no relevant document, are left out. (pytrec_eval reports only queries present in both
    run and qrels, and reports 0 for a query without relevant documents; per query the values are identical.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Union

Ranking = Union[Mapping[str, float], Sequence[str]]
Run = Mapping[str, Ranking]
Qrels = Mapping[str, Mapping[str, int]]

MEASURES = ("ndcg", "recall", "mrr")


def ranked_ids(ranking: Ranking) -> list[str]:
    """Document ids best first: a score dict sorted like trec_eval (score desc, then doc id desc); a list deduplicated."""
    if isinstance(ranking, Mapping):
        return [d for d, _ in sorted(ranking.items(), key=lambda kv: (float(kv[1]), kv[0]), reverse=True)]
    if isinstance(ranking, (str, bytes)):
        raise TypeError("a ranking is a list of document ids or a {doc_id: score} mapping, not a string")
    seen: set[str] = set()
    out: list[str] = []
    for d in ranking:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _check_k(k: int | None, allow_none: bool = False) -> None:
    if k is None and allow_none:
        return
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _relevant(rels: Mapping[str, int]) -> dict[str, int]:
    return {d: g for d, g in rels.items() if g > 0}


# ----------------------------------------------------------------------------------------------- one query


def dcg(ids: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    return sum(max(rels.get(d, 0), 0) / math.log2(r + 2) for r, d in enumerate(ids[:k]))


def ndcg_query(ranking: Ranking, rels: Mapping[str, int], k: int) -> float:
    """nDCG@k of one ranking; 0.0 when the query has no relevant document."""
    _check_k(k)
    relevant = _relevant(rels)
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    return dcg(ranked_ids(ranking), relevant, k) / idcg


def recall_query(ranking: Ranking, rels: Mapping[str, int], k: int) -> float:
    """recall@k of one ranking; 0.0 when the query has no relevant document."""
    _check_k(k)
    relevant = _relevant(rels)
    if not relevant:
        return 0.0
    return sum(1 for d in ranked_ids(ranking)[:k] if d in relevant) / len(relevant)


def reciprocal_rank_query(ranking: Ranking, rels: Mapping[str, int], k: int | None = None) -> float:
    """1 / rank of the first relevant document (within the top k when k is given), else 0.0."""
    _check_k(k, allow_none=True)
    relevant = _relevant(rels)
    ids = ranked_ids(ranking)
    for r, d in enumerate(ids if k is None else ids[:k], 1):
        if d in relevant:
            return 1.0 / r
    return 0.0


# ----------------------------------------------------------------------------------------------- means over a run


def evaluated_queries(qrels: Qrels) -> list[str]:
    """The queries a mean is taken over: those of the qrels with at least one relevant document (sorted)."""
    return sorted(q for q, rels in qrels.items() if any(g > 0 for g in rels.values()))


def _per_query(run: Run, qrels: Qrels, fn, k: int | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for q in evaluated_queries(qrels):
        ranking = run.get(q)
        out[q] = fn(ranking, qrels[q], k) if ranking is not None else 0.0
    return out


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def ndcg_at_k_per_query(run: Run, qrels: Qrels, k: int = 10) -> dict[str, float]:
    _check_k(k)
    return _per_query(run, qrels, ndcg_query, k)


def recall_at_k_per_query(run: Run, qrels: Qrels, k: int = 100) -> dict[str, float]:
    _check_k(k)
    return _per_query(run, qrels, recall_query, k)


def mrr_per_query(run: Run, qrels: Qrels, k: int | None = None) -> dict[str, float]:
    _check_k(k, allow_none=True)
    return _per_query(run, qrels, reciprocal_rank_query, k)


def ndcg_at_k(run: Run, qrels: Qrels, k: int = 10) -> float:
    """Mean nDCG@k over the queries with relevant documents (see the module's conventions)."""
    return _mean(ndcg_at_k_per_query(run, qrels, k).values())


def recall_at_k(run: Run, qrels: Qrels, k: int = 100) -> float:
    """Mean recall@k over the queries with relevant documents."""
    return _mean(recall_at_k_per_query(run, qrels, k).values())


def mrr(run: Run, qrels: Qrels, k: int | None = None) -> float:
    """Mean reciprocal rank of the first relevant document (MRR@k when k is given)."""
    return _mean(mrr_per_query(run, qrels, k).values())


def evaluate(
    run: Run, qrels: Qrels, ndcg_k: int = 10, recall_k: int = 100, mrr_k: int | None = None
) -> dict[str, object]:
    """The three measures at once: {"n_queries", "ndcg@K", "recall@K", "mrr[@K]", "per_query": {measure: {qid: v}}}."""
    mrr_name = "mrr" if mrr_k is None else f"mrr@{mrr_k}"
    per = {
        f"ndcg@{ndcg_k}": ndcg_at_k_per_query(run, qrels, ndcg_k),
        f"recall@{recall_k}": recall_at_k_per_query(run, qrels, recall_k),
        mrr_name: mrr_per_query(run, qrels, mrr_k),
    }
    out: dict[str, object] = {"n_queries": len(evaluated_queries(qrels))}
    out.update({name: _mean(values.values()) for name, values in per.items()})
    out["per_query"] = per
    return out


def load_beir_qrels(path: str) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV (header `query-id corpus-id score`) into {query_id: {doc_id: grade}}."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[:1] == ["query-id"]:
                continue
            if len(parts) < 3 or not line.strip():
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels
