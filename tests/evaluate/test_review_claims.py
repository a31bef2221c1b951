"""A person's decision reused for another answer to the same test that makes the same claims: courtesy, talk about
the sources, markup and citation marks aside. A real DuckDB warehouse with its migrations; the verdicts are made up."""

from __future__ import annotations

from pathlib import Path

from ragpipe.evaluate import answer_sha, apply_reviews, claims_key
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import Verdict
from ragpipe.warehouse import connect

TEST = GoldenTest(
    "q1", "Which release removes it?", "1.0", "positive", 1, ["a"], "q", "doc.md", None, "t", "2026-01-01"
)
DECIDED = "It is removed in 1.0, per the changelog."


def _unsure(question_id: str = "q1") -> Verdict:
    return Verdict(question_id, "positive", "needs_review", "states '1.0' and also refuses", ("a",), True, False,
                   False, "", False, True)  # fmt: skip


def _decide(con, answer: str, decision: str, note: str = "checked") -> None:  # type: ignore[no-untyped-def]
    con.execute(
        "INSERT INTO reviews (test_sha, answer_sha, question_id, decision, note, rule_verdict, answer, decided_at, "
        "rule_reason) VALUES ('sha-q1', ?, 'q1', ?, ?, 'needs_review', ?, now(), 'states it and also refuses')",
        [answer_sha(answer), decision, note, answer],
    )


def _apply(con, answer: str) -> tuple[Verdict, int]:  # type: ignore[no-untyped-def]
    out, applied = apply_reviews(con, [(TEST, _unsure())], {"q1": Answer(answer, 0, 0, 0)}, {"q1": "sha-q1"})
    return out[0][1], applied


def test_the_claims_key_leaves_out_framing_and_markup_and_keeps_every_other_sentence() -> None:
    key = claims_key(DECIDED)
    assert key is not None
    assert claims_key("Thanks for asking! **It is removed in 1.0**, per the changelog [1]. Hope this helps!") == key
    assert claims_key("It is removed in 1.0, per the changelog. Maybe.") != key  # a hedge, however short
    assert claims_key("It is removed in 1.1, per the changelog.") != key
    assert claims_key("Thanks for asking!") is None


def test_a_decision_is_reused_for_the_same_claims_and_recorded_for_the_new_answer(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as con:
        _decide(con, DECIDED, "pass")
        reworded = "Great question! It is removed in **1.0**, per the changelog [2]."
        v, applied = _apply(con, reworded)
        assert (v.verdict, v.matched_by, applied) == ("pass", "review", 1)
        assert v.reason == "reviewed (the same claims as an answer decided before): checked"
        row = con.execute(
            "SELECT decision, rule_verdict, same_claims_as, note FROM reviews WHERE answer_sha = ?",
            [answer_sha(reworded)],
        ).fetchone()
        assert row == (
            "pass",
            "needs_review",
            answer_sha(DECIDED),
            f"same claims as answer {answer_sha(DECIDED)[:12]}: checked",
        )
        # the reasons reviewers overrule count a person's decisions only
        assert con.execute("SELECT sum(decided) FROM corrections_by_reason").fetchone() == (1,)
        # another claim, or a hedge added, is judged afresh
        for other in ("It is removed in 1.0, per the changelog. Maybe.", "It is removed in 2.0, per the changelog."):
            v, applied = _apply(con, other)
            assert (v.verdict, applied) == ("needs_review", 0)


def test_claims_two_decisions_settled_differently_are_left_to_a_person(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as con:
        _decide(con, DECIDED, "pass")
        _decide(con, "It is removed in 1.0, per the changelog!", "fail", "the changelog is for another product")
        v, applied = _apply(con, "Sure! It is removed in 1.0, per the changelog.")
        assert (v.verdict, applied) == ("needs_review", 0)
        v, applied = _apply(con, DECIDED)  # the very answer decided on keeps its own decision
        assert (v.verdict, applied) == ("pass", 1)
