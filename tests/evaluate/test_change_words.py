"""How a change reads in logs and tables: both sides of a flag, and a status that its reason does not repeat."""

from ragpipe.evaluate import stamp_line
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer, Reply
from ragpipe.reports import Change, EvalSummary, changes_table, render_text
from ragpipe.verdicts import decide


def _change(old: bool | None, new: bool) -> Change:
    return Change("neg_01", "pass", "did_not_run", 3, None, old, new, "embedder a -> b")


def test_the_unverified_flag_reads_as_old_to_new() -> None:
    assert _change(False, True).flags == "verified -> unverified"
    assert _change(True, False).flags == "unverified -> verified"
    assert _change(True, True).flags == "" and _change(None, True).flags == ""
    assert "| verified -> unverified |" in changes_table([_change(False, True)])[-1]


def test_a_stamp_line_does_not_repeat_its_status() -> None:
    assert stamp_line("missing", "missing from corpus: a.md deleted") == "missing from corpus: a.md deleted"
    assert stamp_line("moved", "ch_a -> ch_b") == "moved ch_a -> ch_b"
    assert stamp_line("split", "3 parts", ": ") == "split: 3 parts" and stamp_line("moved", "") == "moved"


def test_the_ci_summary_names_a_missing_stamp_once() -> None:
    moved = [("neg_06", "trap", "missing", "missing from corpus: a.md deleted"), ("pos_01", "evidence", "moved", "x")]
    metrics = {"hit_at_k": 1.0, "mrr": 1.0, "recall_at_k": 1.0, "k": 5}
    text = render_text(EvalSummary("r1", "c", "e", "extractive", {}, metrics, [], stamp_changes=moved), ())
    assert "neg_06     trap missing from corpus: a.md deleted" in text and "missing: missing" not in text
    assert "pos_01     evidence moved: x" in text


def test_a_subject_test_whose_anchor_the_app_did_not_return_names_the_anchor_once() -> None:
    from ragpipe.evaluate.subject import _reason

    neg = GoldenTest("n", "What was Q3 revenue?", "not in documents", "negative", 1, ["a"], "Q2: 4 M", "x.md", "4 M",
                     "t", "2026-01-01")  # fmt: skip
    reason = _reason("none", 5, Reply(None, ()))
    verdict = decide(neg, (), "missing", ["b"], Answer("I cannot say.", 0, 0, 0), (), "t", stamp_reason=reason)
    assert verdict.verdict == "did_not_run"
    assert verdict.reason == "trap quote in none of the 5 contexts the app returned"


def test_hit_at_k_against_the_app_counts_the_anchors_it_did_not_return() -> None:
    from ragpipe.evaluate.subject import anchors_sought
    from ragpipe.rag import metrics

    def test(qid: str, quote: str) -> GoldenTest:
        return GoldenTest(qid, "q?", "x", "positive", 1, [], quote, "x.md", None, "t", "2026-01-01")

    tests = [test("found", "the warranty lasts two years"), test("missed", "refunds take 14 days"), test("noquote", "")]
    found = [(("c1",), "quote"), ((), "none"), ((), "none")]
    m = metrics([["c0", "c1"], ["c2", "c3"], ["c4"]], anchors_sought(tests, found), k=2)
    assert m["n"] == 2 and m["hit_at_k"] == 0.5 and m["mrr"] == 0.25  # one of the two tests with a quote was found
