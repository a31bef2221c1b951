"""The refusal grammar, trap cited versus trap taken, hedges, and equivalence of numbers, units, versions and dates."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import answer_matches, is_refusal
from ragpipe.verdicts import decide


@pytest.mark.parametrize(
    "answer",
    [
        "The documents don't say in which release that deprecation warning was introduced.",
        "I couldn't find that in the provided context.",
        "I'm sorry, but the documents don't mention which user an EIPP planner runs as.",
        "There is no information about the 2019 budget.",
        "That figure is not specified anywhere.",
        "Unknown.",
        "I can't answer that from the passages I was given.",
        "Nothing in the supplied excerpts covers the Lisbon office.",
        "Unfortunately this isn't something I have data on.",
        "No release date is given.",
        "The changelog does not list a version for that change.",
        '{"answer": null, "reason": "not in the provided context"}',
        "answer: null",
        "**Not available** in these sources.",
        "The passages give no TLB cost.",  # the source as subject, "gives / contains / lists no" what is asked
        "The retrieved release notes contain no byte length for object names.",
    ],
)
def test_paraphrased_refusals(answer: str) -> None:
    assert is_refusal(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The default timeout is five seconds.",
        "Revenue was $48.7 million.",
        "If no encoding declaration is found, UTF-8 is assumed.",
        "Yes, version 2 allows three days per week.",
        "The option gives no output when the file is empty.",  # a subject, not the source, that gives no X
        "The names OLD and NEW contain no slashes.",
        "VALUE is the null-terminated string TRUE or FALSE.",  # a null that qualifies a noun is no missing answer
        "grep stops after null input bytes.",
    ],
)
def test_statements_are_not_refusals(answer: str) -> None:
    assert not is_refusal(answer)


def _neg(trap: str = "1.0") -> GoldenTest:
    return GoldenTest(
        "n",
        "In which HTTPX release did the deprecation warning start?",
        "not in documents",
        "negative",
        1,
        ["a"],
        "The behaviour is expected to be fully removed in HTTPX 1.0.",
        "x.md",
        trap,
        "t",
        "2026-01-01",
    )


def _verdict(test: GoldenTest, answer: str):
    return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t")


@pytest.mark.parametrize(
    "answer",
    [
        "The docs don't give the release where the warning started; they only say the behaviour is expected to be fully "
        "removed in HTTPX 1.0.",
        "Not stated. The only version the context mentions is 1.0, for the removal.",
        "I can't tell from the documentation: 1.0 is named only as the release that removes the behaviour.",
        # "it also says" reports the source; "since 1.0" dates a fact, it reasons to nothing
        "The docs don't give the release where the warning started. It also says you must migrate before HTTPX 1.0.",
        "The docs don't give the release where the warning started; since 1.0 the behaviour is to be removed entirely.",
    ],
)
def test_a_refusal_citing_the_trap_passes(answer: str) -> None:
    v = _verdict(_neg(), answer)
    assert (v.verdict, v.matched_by, v.took_trap) == ("pass", "refusal_citing_trap", False), v.reason
    assert "cites the trap" in v.reason


@pytest.mark.parametrize(
    "answer,why",
    [
        ("Probably 1.0.", "took the trap (hedged)"),
        ("Likely 1.0, but it isn't stated.", "took the trap (hedged)"),
        ("The docs don't say, but it is probably 1.7.", "answered anyway (hedged)"),
        ("The documents do not say. That said, the answer is 0.28.", "answered anyway"),
        ("1.0", "took the trap"),
        ("It started in 0.24.", "answered instead of refusing"),
        # a hedge drawn from what the source says ("it says ..., so probably ...") is the answerer's guess
        (
            "doesnt say when it started but it says removal is in 1.0 so probably 1.0 is when it started",
            "took the trap",
        ),
    ],
)
def test_hedges_and_answers_fail(answer: str, why: str) -> None:
    v = _verdict(_neg(), answer)
    assert v.verdict == "fail" and v.reason.startswith(why), v.reason


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("Five seconds of network inactivity.", "5 seconds"),
        ("twenty", "20"),
        ("twenty-five", "25"),
        ("It is the second release.", "2nd"),
        ("5 s", "5 seconds"),
        ("5000 ms", "5 seconds"),
        ("APT 1.6", "v1.6"),
        ("version 1.6", "1.6"),
        ("March 5th, 2024", "2024-03-05"),
        ("the fifth of March 2024", "2024-03-05"),
        ("2022-12", "December 2022"),
        ("from 2.3 to 3.0", "2.3 to 3.0"),
        ("Bob and Alice", "Alice and Bob"),
        ("zero", "0"),
        ("three billion", "3 billion"),
        ("three and a half million dollars", "$3.5 million"),
        ("912 millimetres", "912 mm"),
        ("utf8", "UTF-8"),
        ("[0..100]", "0 to 100"),
    ],
)
def test_equivalent_forms_match(answer: str, expected: str) -> None:
    assert answer_matches(answer, expected).matched


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("5 minutes", "5 seconds"),
        ("1.7", "1.6"),
        ("2.3.4", "2.3.1"),
        ("May 2022", "December 2022"),
        ("twenty-four", "25"),
        ("Alice", "Alice and Bob"),
    ],
)
def test_different_values_do_not_match(answer: str, expected: str) -> None:
    assert not answer_matches(answer, expected).matched


def test_a_positive_disowned_or_guessed_fails() -> None:
    pos = GoldenTest(
        "p",
        "How many remote days does the current policy allow?",
        "three days",
        "positive",
        1,
        ["a"],
        "up to three days per week",
        "p.md",
        None,
        "t",
        "2026-01-01",
    )
    assert _verdict(pos, "Three days a week.").verdict == "pass"
    assert _verdict(pos, "Probably three days.").verdict == "fail"
    assert (
        _verdict(pos, "The documents say three days, but that is an older policy, so it is actually two.").verdict
        == "fail"
    )
