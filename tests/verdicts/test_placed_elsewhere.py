"""A refusal in other words: the trap's value placed under its own condition, the asked one denied ("the 12 % figure
is for 2019, not 2021"), or said to answer another comparison. Each case has its twin that must come out the other
way; and a value the retrieved text gives for something else, said of what was asked beside a refusal, never passes
(made-up sentences)."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide

TEXT = "In 2019 the fleet's fuel use fell by 12 % against 2018; in 2020 it fell 9 %."
NEG = GoldenTest(
    "n", "By how much did the fleet's fuel use fall in 2021?", "not in documents", "negative", 1, ["a"], TEXT, "x.md",
    "12 %", "t", "2026-01-01",
)  # fmt: skip


def _verdict(answer: str) -> tuple[str, str]:
    v = decide(NEG, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), ("not in documents",), "t", contexts=[TEXT])
    return v.verdict, v.reason


@pytest.mark.parametrize(
    ("cites", "takes"),
    [
        ("The 12 % figure is for 2019, not 2021.", "The 12 % figure is for 2021, not 2019."),
        ("The 12 % reduction refers to 2019 and not to 2021.", "The 12 % reduction refers to 2021 and not to 2019."),
        ("The 12 % figure is a different comparison.", "The 12 % figure is the 2021 comparison."),
    ],
)
def test_the_trap_placed_elsewhere_is_cited_and_its_twin_takes_it(cites: str, takes: str) -> None:
    verdict, reason = _verdict(cites)
    assert verdict == "pass" and reason.startswith("refused; cites the trap's value")
    verdict, reason = _verdict(takes)
    assert verdict == "fail" and reason.startswith("took the trap")


def test_a_value_of_the_text_said_of_what_was_asked_never_passes_beside_a_refusal() -> None:
    assert _verdict("Not in documents. In 2021 it fell 9 %.")[0] == "needs_review"  # 9 % is the 2020 figure
    assert _verdict("Not in documents; the 2020 figure was 9 %.")[0] == "pass"  # said of what the text says it of
    assert _verdict("The 12 % figure is for 2019, not 2021; in 2021 it fell 9 %.")[0] != "pass"
    verdict, reason = _verdict("The 12 % figure is for 2019, not 2021. In 2021 it fell 7 %.")
    assert verdict == "fail" and "outside the context" in reason  # 7 % is in no retrieved text


def test_another_comparison_is_said_of_the_value_itself() -> None:
    """ "is a different figure" about something else in the sentence is no refusal of the trap given first."""
    assert _verdict("Fuel use fell by 12 % in 2021, which is a different figure from 2019.")[0] == "fail"
