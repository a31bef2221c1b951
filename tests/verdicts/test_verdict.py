"""The verdict rule: an anchor that was not retrieved means the test did not run, whatever the answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide, took_trap

REFUSALS = ("not in documents", "not in the documents", "i don't know", "cannot be answered")
TAG = "minilm-bcfe46d6"


def _neg(trap_value: str | None = "$48.7 million", tag: str | None = TAG) -> GoldenTest:
    return GoldenTest(
        "neg_01",
        "What was revenue in Q3 2022?",
        "not in documents",
        "negative",
        1,
        ["ch_trap"],
        "Revenue was $48.7 million for Q3 2023.",
        "reports/q3-2023.md",
        trap_value,
        tag,
        "2026-01-01",
    )


def _pos(expected: str = "$48.7 million", tag: str | None = TAG) -> GoldenTest:
    return GoldenTest(
        "pos_01",
        "What was revenue in Q3 2023?",
        expected,
        "positive",
        2,
        ["ch_ev"],
        "Revenue was $48.7 million for Q3 2023.",
        "reports/q3-2023.md",
        None,
        tag,
        "2026-01-01",
    )


def _ans(text: str, error: str | None = None) -> Answer:
    return Answer(text=text, latency_s=0.01, input_tokens=10, output_tokens=3, error=error)


def _decide(
    test: GoldenTest,
    answer: str,
    retrieved: list[str],
    ids: tuple[str, ...] | None = None,
    status: str = "unchanged",
    error: str | None = None,
    tag: str = TAG,
):
    anchor = tuple(test.anchor_ids) if ids is None else ids
    return decide(test, anchor, status, retrieved, _ans(answer, error), REFUSALS, tag)


# --------------------------------------------------------------------------------------------------- did not run


@pytest.mark.parametrize("answer", ["not in documents", "I don\u2019t know.", "$48.7 million", "", "It was $12M."])
def test_negative_anchor_not_retrieved_never_passes(answer: str) -> None:
    v = _decide(_neg(), answer, ["ch_1", "ch_2", "ch_3"])
    assert v.verdict == "did_not_run"
    assert not v.anchor_retrieved
    assert "not retrieved" in v.reason and "ch_trap" in v.reason and "top 3" in v.reason


def test_positive_anchor_not_retrieved_even_with_the_right_answer() -> None:
    v = _decide(_pos(), "$48.7 million", ["ch_1"])
    assert v.verdict == "did_not_run" and "evidence chunk ch_ev not retrieved" in v.reason


def test_error_with_anchor_not_retrieved_is_did_not_run() -> None:
    assert _decide(_neg(), "", [], error="HTTP 500").verdict == "did_not_run"


def test_split_anchor_partly_retrieved_did_not_run() -> None:
    v = _decide(_neg(), "not in documents", ["ch_a", "ch_x"], ids=("ch_a", "ch_b"), status="split")
    assert v.verdict == "did_not_run"
    assert "split" in v.reason and "2 chunks" in v.reason and "only 1 retrieved" in v.reason
    # None of the parts retrieved: a plain "not retrieved".
    v = _decide(_neg(), "not in documents", ["ch_x"], ids=("ch_a", "ch_b"))
    assert v.verdict == "did_not_run" and "not retrieved" in v.reason
    # All parts retrieved, in any order: the test ran.
    v = _decide(_neg(), "not in documents", ["ch_b", "ch_x", "ch_a"], ids=("ch_a", "ch_b"))
    assert (v.verdict, v.anchor_retrieved) == ("pass", True)


def test_missing_from_corpus_did_not_run() -> None:
    v = _decide(_neg(), "not in documents", ["ch_1"], ids=(), status="missing")
    assert v.verdict == "did_not_run" and "missing from corpus" in v.reason
    assert v.reason.startswith("trap ")
    v = _decide(_pos(), "$48.7 million", ["ch_1"], ids=(), status="missing")
    assert v.verdict == "did_not_run" and v.reason.startswith("evidence missing from corpus")


def test_no_anchor_id_did_not_run() -> None:
    v = _decide(_neg(), "not in documents", ["ch_trap"], ids=(), status="no_quote")
    assert v.verdict == "did_not_run" and "restamp" in v.reason


# ------------------------------------------------------------------------------------------------ ran: the outcome


def test_answer_error() -> None:
    v = _decide(_neg(), "", ["ch_trap"], error="timeout after 2.0s")
    assert v.verdict == "error" and "timeout after 2.0s" in v.reason
    assert _decide(_pos(), "$48.7 million", ["ch_ev"], error="HTTP 500").verdict == "error"


@pytest.mark.parametrize(
    "answer",
    [
        "not in documents",
        "Not in the documents.",
        "I don\u2019t know",
        "This cannot be answered; the documents only cover 2023 at 15%.",
    ],
)
def test_negative_refusal_passes(answer: str) -> None:
    v = _decide(_neg(), answer, ["ch_1", "ch_trap"])
    assert (v.verdict, v.refused, v.took_trap, v.matched_by, v.anchor_retrieved) == (
        "pass",
        True,
        False,
        "refusal",
        True,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "$48.7 million",
        "Revenue was $48.7M.",
        "48.7 million dollars",
        "It was 48,700,000.",
    ],
)
def test_negative_stating_the_trap_fails_as_took_the_trap(answer: str) -> None:
    v = _decide(_neg(), answer, ["ch_trap"])
    assert (v.verdict, v.took_trap) == ("fail", True)
    assert "took the trap" in v.reason and "$48.7 million" in v.reason


@pytest.mark.parametrize(
    "answer", ["Not in documents, but it was $48.7 million.", "The documents don't say. Revenue was $48.7 million."]
)
def test_a_refusal_beside_the_plainly_stated_trap_is_never_a_pass(answer: str) -> None:
    """The rules cannot tell a citation from taking the trap here: needs_review (a judge or a person decides)."""
    v = _decide(_neg(), answer, ["ch_trap"])
    assert (v.verdict, v.took_trap, v.needs_judge) == ("needs_review", True, True)


def test_negative_answering_something_else_fails() -> None:
    v = _decide(_neg(), "Revenue was $51.2 million.", ["ch_trap"])
    assert (v.verdict, v.took_trap, v.refused) == ("fail", False, False)
    assert "answered instead of refusing" in v.reason
    # An empty answer is not a refusal.
    assert _decide(_neg(), "", ["ch_trap"]).verdict == "fail"
    # Without a trap_value the trap cannot be taken, but an answer still fails.
    v = _decide(_neg(trap_value=None), "$48.7 million", ["ch_trap"])
    assert (v.verdict, v.took_trap) == ("fail", False)


def test_took_trap_is_word_bounded() -> None:
    assert took_trap("It was $48.7M", "$48.7 million")
    assert not took_trap("It was $148.7 million", "48.7 million")
    assert not took_trap("the rate is now 15%", "5%")
    assert not took_trap("not in documents", "  ")
    assert not took_trap("not in documents", None)


@pytest.mark.parametrize(
    ("answer", "how"),
    [("$48.7 million", "exact"), ("Revenue was $48.7 million.", "contains"), ("About $48.7M", "numeric")],
)
def test_positive_matching_passes(answer: str, how: str) -> None:
    v = _decide(_pos(), answer, ["ch_ev"])
    assert (v.verdict, v.matched_by) == ("pass", how)


def test_positive_date_passes() -> None:
    v = _decide(_pos("March 3, 2024"), "It was signed on 2024-03-03.", ["ch_ev"])
    assert (v.verdict, v.matched_by) == ("pass", "date")


def test_positive_refusal_fails() -> None:
    v = _decide(_pos(), "not in documents", ["ch_ev"])
    assert (v.verdict, v.refused) == ("fail", True)
    assert "refused although the evidence was retrieved" in v.reason


def test_positive_wrong_answer_fails() -> None:
    v = _decide(_pos(), "$48.7 billion", ["ch_ev"])
    assert v.verdict == "fail" and "does not state" in v.reason


@pytest.mark.parametrize(
    ("test_tag", "current", "unverified"), [(TAG, TAG, False), ("minilm-00000000", TAG, True), (None, TAG, True)]
)
def test_unverified_iff_embedder_tag_differs(test_tag: str | None, current: str, unverified: bool) -> None:
    for retrieved in (["ch_trap"], []):
        v = _decide(_neg(tag=test_tag), "not in documents", retrieved, tag=current)
        assert v.unverified is unverified
    assert _decide(_pos(tag=test_tag), "$48.7 million", ["ch_ev"], tag=current).unverified is unverified


ids = st.text(alphabet="abcdef0123456789_", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    answer=st.text(max_size=80),
    negative=st.booleans(),
    anchor=st.lists(ids, min_size=1, max_size=4, unique=True),
    others=st.lists(ids, max_size=8),
    keep=st.data(),
    status=st.sampled_from(["new", "unchanged", "moved", "split", "missing", "no_quote"]),
    error=st.none() | st.text(min_size=1, max_size=10),
)
def test_property_anchor_not_all_retrieved_is_did_not_run(
    answer, negative, anchor, others, keep, status, error
) -> None:
    # Keep a strict subset of the anchor ids in the retrieved list (possibly none), shuffled among other ids.
    kept = (
        keep.draw(st.lists(st.sampled_from(anchor), unique=True, max_size=len(anchor) - 1)) if len(anchor) > 1 else []
    )
    retrieved = keep.draw(st.permutations([o for o in others if o not in anchor] + kept))
    test = _neg() if negative else _pos()
    v = decide(test, tuple(anchor), status, list(retrieved), _ans(answer, error), REFUSALS, TAG)
    assert v.verdict == "did_not_run"
    assert v.anchor_retrieved is False
