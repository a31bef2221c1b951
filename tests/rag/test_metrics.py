"""ragpipe.rag.ranking: hand-computed cases, and agreement with trec_eval (pytrec_eval) to 1e-6 on a fixture with ties,
graded relevance, queries with nothing relevant retrieved, a query missing from the run and one without relevant docs."""

from __future__ import annotations

import math

import pytest

from ragpipe.rag import ranking as M

pytrec_eval = pytest.importorskip("pytrec_eval")  # dev extra: pytrec-eval-terrier (trec_eval's C code)

L2 = math.log2


# ---------------------------------------------------------------------------------------------- by hand


def test_ndcg_by_hand_graded() -> None:
    rels = {"a": 3, "b": 2, "c": 0, "d": 1}
    # ranking: c(0) a(3) x(unjudged) d(1) b(2)
    ranking = ["c", "a", "x", "d", "b"]
    dcg = 3 / L2(3) + 1 / L2(5) + 2 / L2(6)
    idcg = 3 / L2(2) + 2 / L2(3) + 1 / L2(4)
    assert M.ndcg_query(ranking, rels, 10) == pytest.approx(dcg / idcg, abs=1e-12)
    # cut at 2: only c and a count; the ideal is cut at 2 as well
    assert M.ndcg_query(ranking, rels, 2) == pytest.approx((3 / L2(3)) / (3 + 2 / L2(3)), abs=1e-12)
    # the perfect ranking scores 1
    assert M.ndcg_query(["a", "b", "d"], rels, 3) == pytest.approx(1.0)
    # ideal counts relevant docs that were not retrieved: only 'a' retrieved at rank 1
    assert M.ndcg_query(["a"], rels, 10) == pytest.approx(3 / idcg)


def test_recall_and_rr_by_hand() -> None:
    rels = {"a": 1, "b": 2, "c": 0}
    ranking = ["c", "x", "b", "y", "a"]
    assert M.recall_query(ranking, rels, 2) == 0.0
    assert M.recall_query(ranking, rels, 3) == 0.5
    assert M.recall_query(ranking, rels, 100) == 1.0
    assert M.reciprocal_rank_query(ranking, rels) == pytest.approx(1 / 3)
    assert M.reciprocal_rank_query(ranking, rels, k=3) == pytest.approx(1 / 3)
    assert M.reciprocal_rank_query(ranking, rels, k=2) == 0.0  # MRR@2: nothing relevant in the top 2


def test_grade_zero_is_not_relevant() -> None:
    rels = {"a": 0, "b": 0}
    assert M.ndcg_query(["a", "b"], rels, 10) == 0.0
    assert M.recall_query(["a", "b"], rels, 10) == 0.0
    assert M.reciprocal_rank_query(["a", "b"], rels) == 0.0
    # and such a query is left out of the mean
    assert M.evaluated_queries({"q1": rels, "q2": {"a": 1}}) == ["q2"]
    assert M.mrr({"q1": ["a"], "q2": ["a"]}, {"q1": rels, "q2": {"a": 1}}) == 1.0


def test_ties_broken_by_doc_id_descending_like_trec_eval() -> None:
    scores = {"a": 0.5, "b": 0.5, "c": 0.9, "x": 0.5}
    assert M.ranked_ids(scores) == ["c", "x", "b", "a"]
    rels = {"a": 1}
    assert M.reciprocal_rank_query(scores, rels) == pytest.approx(1 / 4)


def test_ranked_list_dedup_and_missing_query_counts_zero() -> None:
    assert M.ranked_ids(["a", "b", "a", "c"]) == ["a", "b", "c"]
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a"], "q9": ["b"]}  # q2 absent from the run, q9 not in the qrels
    assert M.mrr(run, qrels) == 0.5
    assert M.recall_at_k(run, qrels, 10) == 0.5
    assert M.ndcg_at_k(run, qrels, 10) == 0.5


def test_bad_k_and_bad_ranking() -> None:
    with pytest.raises(ValueError):
        M.ndcg_query(["a"], {"a": 1}, 0)
    with pytest.raises(ValueError):
        M.recall_at_k({}, {}, -1)
    with pytest.raises(TypeError):
        M.ranked_ids("abc")  # type: ignore[arg-type]


def test_load_beir_qrels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "test.tsv"
    p.write_text("query-id\tcorpus-id\tscore\n1\t184\t3\n1\t29\t0\n2\t5\t1\n", encoding="utf-8")
    assert M.load_beir_qrels(str(p)) == {"1": {"184": 3, "29": 0}, "2": {"5": 1}}


# ---------------------------------------------------------------------------------------------- vs trec_eval

QRELS = {
    "q1": {"d1": 3, "d2": 2, "d3": 1, "d4": 0, "d9": 2},  # graded, one relevant doc never retrieved (d9)
    "q2": {"d5": 1, "d6": 1},  # binary
    "q3": {"d7": 2, "d8": 1},  # nothing relevant retrieved
    "q4": {"d1": 1, "d2": 4, "d3": 4},  # ties across relevant and non-relevant docs
    "q5": {"d1": 0, "d2": 0},  # no relevant document: left out of our means
    "q6": {"d3": 2},  # missing from the run: 0 in our means
    "q7": {f"e{i:02d}": (i % 4) for i in range(40)},  # many graded docs, a long ranking
}
RUN = {
    "q1": {"d4": 0.9, "d1": 0.8, "x1": 0.8, "d3": 0.7, "d2": 0.1, "x2": 0.05},
    "q2": {"x1": 2.0, "x2": 1.5, "d6": 1.5, "d5": 1.5, "x3": -1.0},
    "q3": {"x1": 1.0, "x2": 0.5},
    "q4": {"d3": 1.0, "d1": 1.0, "d2": 1.0, "x0": 1.0, "x9": 1.0},
    "q5": {"d1": 1.0, "d3": 0.2},
    "q7": {f"e{i:02d}": float((i * 7919) % 23) for i in range(60)},  # many ties among 60 docs
    "q8": {"d1": 1.0},  # not in the qrels
}


def _trec(run, qrels, measures):  # type: ignore[no-untyped-def]
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize("k", [1, 3, 5, 10, 100])
def test_agrees_with_trec_eval_per_query_and_mean(k: int) -> None:
    ref = _trec(RUN, QRELS, {f"ndcg_cut.{k}", f"recall.{k}", "recip_rank"})
    ours = {
        "ndcg": M.ndcg_at_k_per_query(RUN, QRELS, k),
        "recall": M.recall_at_k_per_query(RUN, QRELS, k),
        "rr": M.mrr_per_query(RUN, QRELS),
    }
    keys = {"ndcg": f"ndcg_cut_{k}", "recall": f"recall_{k}", "rr": "recip_rank"}
    evaluated = M.evaluated_queries(QRELS)
    assert evaluated == ["q1", "q2", "q3", "q4", "q6", "q7"]
    for q in evaluated:
        for name, key in keys.items():
            expected = ref[q][key] if q in ref else 0.0  # trec_eval -c: a query missing from the run scores 0
            assert ours[name][q] == pytest.approx(expected, abs=1e-6), (q, name, k)
    # means: over our evaluated queries, with trec_eval's per-query values (and 0 for the missing one)
    for name, key in keys.items():
        expected = sum(ref[q][key] if q in ref else 0.0 for q in evaluated) / len(evaluated)
        got = {"ndcg": M.ndcg_at_k, "recall": M.recall_at_k, "rr": M.mrr}[name](
            RUN, QRELS, *([k] if name != "rr" else [])
        )
        assert got == pytest.approx(expected, abs=1e-6), (name, k)


@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_mrr_at_k_agrees_with_trec_eval_on_truncated_run(k: int) -> None:
    truncated = {q: {d: s for d, s in RUN[q].items() if d in M.ranked_ids(RUN[q])[:k]} for q in RUN}
    ref = _trec(truncated, QRELS, {"recip_rank"})
    ours = M.mrr_per_query(RUN, QRELS, k)
    for q in ours:
        assert ours[q] == pytest.approx(ref[q]["recip_rank"] if q in ref else 0.0, abs=1e-6)


def test_ranked_lists_equal_score_dicts() -> None:
    as_lists = {q: M.ranked_ids(r) for q, r in RUN.items()}
    for fn, kw in ((M.ndcg_at_k, {"k": 10}), (M.recall_at_k, {"k": 3}), (M.mrr, {})):
        assert fn(as_lists, QRELS, **kw) == pytest.approx(fn(RUN, QRELS, **kw), abs=1e-12)
    # a ranked list keeps its order, whatever trec_eval would do with scores: evaluate it via rank-derived scores
    lists = {"q4": ["x0", "d2", "d1", "x9", "d3"], "q1": ["d2", "x1", "d1"]}
    by_rank = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in lists.items()}
    ref = _trec(by_rank, QRELS, {"ndcg_cut.3", "recip_rank"})
    for q in lists:
        assert M.ndcg_query(lists[q], QRELS[q], 3) == pytest.approx(ref[q]["ndcg_cut_3"], abs=1e-6)
        assert M.reciprocal_rank_query(lists[q], QRELS[q]) == pytest.approx(ref[q]["recip_rank"], abs=1e-6)


def test_evaluate_bundle() -> None:
    out = M.evaluate(RUN, QRELS, ndcg_k=10, recall_k=100, mrr_k=None)
    assert out["n_queries"] == 6
    assert out["ndcg@10"] == pytest.approx(M.ndcg_at_k(RUN, QRELS, 10))
    assert out["recall@100"] == pytest.approx(M.recall_at_k(RUN, QRELS, 100))
    assert out["mrr"] == pytest.approx(M.mrr(RUN, QRELS))
    assert set(out["per_query"]) == {"ndcg@10", "recall@100", "mrr"}  # type: ignore[arg-type]
