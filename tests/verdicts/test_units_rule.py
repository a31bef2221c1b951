"""Units as dimensions in the verdict: another unit is another quantity, a conversion beside the value is computed."""

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide

CONTEXT = (
    "The line width defaults to 0.5bp, half a PostScript big point. Service ceilings of 60,000 feet were reached "
    "in the trials. The oven must reach 300 °F before the tray goes in.",
)


def _verdict(question: str, expected: str, answer: str) -> tuple[str, str]:
    t = GoldenTest("q", question, expected, "positive", 1, ["a"], None, None, None, "tag", None)
    v = decide(t, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=CONTEXT)
    return v.verdict, v.reason


@pytest.mark.parametrize(
    "question, expected, answer",
    [
        ("What is the default line width?", "0.5bp", "The default line width is 0.5 pt."),
        ("What temperature must the oven reach?", "300 °F", "It must reach 300 K first."),
    ],
)
def test_the_expected_number_in_another_unit_fails(question, expected, answer):
    verdict, reason = _verdict(question, expected, answer)
    assert verdict == "fail" and "another unit" in reason


def test_a_wrong_conversion_beside_the_value_fails():
    verdict, reason = _verdict("What ceiling was reached?", "60,000 feet", "60,000 ft (about 2 km).")
    assert verdict == "fail" and "converts it wrongly" in reason and "2 km" in reason


@pytest.mark.parametrize("answer", ["60,000 ft (about 18.3 km).", "A ceiling of 18.3 km was reached.", "6 × 10^4 ft."])
def test_a_right_conversion_is_the_value_itself(answer):
    verdict, reason = _verdict("What ceiling was reached in the trials?", "60,000 feet", answer)
    assert verdict == "pass", reason
