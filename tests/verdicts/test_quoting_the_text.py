"""An answer that quotes or restates the retrieved text speaks in the text's words: a negation the text itself writes
("if none is specified", "without any error indication") is no refusal, and "so it replaces just the first" after a
quote draws the quote's conclusion, it does not turn away from it. Each case has a twin that must come out the other
way (made-up documents and answers)."""

from __future__ import annotations

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide

MANUAL = (
    "The default signal to send if none is specified is TERM. Without the g modifier, the s command replaces only the "
    "first instance on each line. With the g modifier it replaces every instance."
)


def _verdict(question: str, expected: str, answer: str) -> tuple[str, str]:
    test = GoldenTest("t1", question, expected, "positive", 1, ["a"], MANUAL, "m.md", None, "tag", "2026-01-01")
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=(MANUAL,))
    return v.verdict, v.reason


def test_a_negation_the_retrieved_text_writes_is_no_refusal() -> None:
    ask = ("Which signal does kill send by default?", "TERM (SIGTERM)")
    assert _verdict(*ask, 'Per the docs: "The default signal to send if none is specified is TERM."')[0] == "pass"
    refused = _verdict(*ask, "The docs do not specify a default signal. TERM, maybe.")
    assert refused[0] != "pass", refused


def test_a_conclusion_drawn_from_a_quote_is_no_turn_away_from_it() -> None:
    ask = ("How many matches does s/a/b/ replace on a line?", "Only the first instance on each line")
    quoted = 'The manual says: "Without the g modifier, the s command replaces only the first instance on each line."'
    assert _verdict(*ask, f"{quoted} So s/a/b/ replaces just the first match on each line.")[0] == "pass"
    turned = _verdict(*ask, f"{quoted} But that is outdated, so it actually replaces every instance.")
    assert turned[0] == "fail", turned
