"""Declines that describe the source and the conversation around the question. Each case has a twin that must come
out the other way (made-up documents and answers)."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide

TEXT = (
    "The cache simulator charges an L1 miss about 10 cycles and an LL miss up to 200 cycles. "
    "Mispredicted branches cost 10 to 30 cycles. Use --branch-sim=yes to turn on branch simulation; it is "
    "disabled by default because it slows the tool by about 25%. The suppression types are Value1, Value2, Value4, "
    "Value8 and Value16, and Cond (also written Value0)."
)
NEG = GoldenTest(
    "n", "How many cycles does a TLB miss cost in the cache simulator?", "not in documents", "negative", 1, ["a"],
    TEXT, "x.md", "up to 200 cycles", "t", "2026-01-01",
)  # fmt: skip


def _verdict(test: GoldenTest, answer: str, text: str = TEXT) -> tuple[str, str]:
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), ("not in documents",), "t", contexts=[text])
    return v.verdict, v.reason


@pytest.mark.parametrize(
    ("declines", "guesses"),
    [
        (  # the ticket restates the request: words of the conversation, not facts about the subject
            "Ticket update: Customer asked about the TLB miss cost. The manual gives L1 and LL miss costs only; "
            "no TLB figure is stated.",
            "Ticket update: Customer asked about the TLB miss cost. The manual does not state it; Intel documents "
            "put it at 30 cycles.",
        ),
        (  # advice on where to look names a source, not an answer
            "The documents don't give a TLB miss cost. I'd recommend asking the tool's maintainers on their "
            "mailing list.",
            "The documents don't give a TLB miss cost. From experience it is around 30 cycles on x86.",
        ),
        (  # a pointer to where else to look (a release-notes file, --help) answers nothing; a version stated does
            "No TLB figure is documented. You may want to check the release notes (NEWS file) or "
            "`valgrind --help` for that detail.",
            "No TLB figure is documented. The NEWS file for 3.19 says it is 30 cycles.",
        ),
        (  # advice on how to find out, in other words: "you may be able to check", "would be where to look"
            "No TLB figure is documented. You may be able to check with `perf stat` on your own machine.",
            "No TLB figure is documented. You may be able to check, but it is 45 cycles on most machines.",
        ),
        (
            "No TLB figure is documented; the processor vendor's manuals would be where to look.",
            "No TLB figure is documented; the processor vendor's manuals put it at 45 cycles.",
        ),
        (
            "The passages give no TLB cost. For the exact figure, check the simulator's source.",
            "The passages give no TLB cost. For the exact figure, it is 45 cycles in the simulator's source.",
        ),
        (  # code named with a kind suffix is the code of the text
            "No TLB figure is documented; the passages only cover Value16-style suppression types and cache misses.",
            "No TLB figure is documented; it is probably like the Value32-style cost of 40 cycles.",
        ),
    ],
)
def test_a_decline_that_describes_the_source_passes_and_its_twin_guessing_fails(declines: str, guesses: str) -> None:
    assert _verdict(NEG, declines)[0] == "pass"
    assert _verdict(NEG, guesses)[0] == "fail"


def test_the_trap_listed_under_its_own_label_beside_a_refusal_is_cited() -> None:
    listed = (
        "The passages do not give a cost for a TLB miss.\n\n- L1 miss: about 10 cycles\n- LL miss: up to 200 cycles"
    )
    assert _verdict(NEG, listed)[0] == "pass"
    as_json = '{"tlb_miss_cycles": null, "documented": {"ll_miss": "up to 200 cycles"}}'
    assert _verdict(NEG, as_json)[0] == "pass"
    # the same value under a label that names what was asked states it: never a pass
    asked = "The passages do not give a cost for a TLB miss.\n\n- TLB miss: up to 200 cycles"
    assert _verdict(NEG, asked)[0] != "pass"
    assert _verdict(NEG, "The documents don't say. A TLB miss costs up to 200 cycles.")[0] != "pass"


def test_a_denial_about_the_subject_is_an_answer_not_a_refusal_in_other_words() -> None:
    verdict, reason = _verdict(NEG, "There is no extra cost: TLB misses are absorbed by the page walker.")
    assert verdict == "fail" and reason.startswith("answered instead of refusing")
    # a denial that speaks of the source may be a refusal in other words: for a reviewer
    assert _verdict(NEG, "Nothing in the manual about TLB misses, there is no figure at all.")[0] != "fail"


DATED = (
    "DebConf10 was held in New York City from August 1st to 7th, 2010, with over 200 people attending. Version 3 of "
    "the GNU Affero General Public License may be combined with the work. Its signing keys were rsa2048 or dsa2048."
)
WHEN = GoldenTest(
    "w", "How many people attended DebConf11?", "not in documents", "negative", 1, ["a"], DATED, "x.md",
    "over 200 people", "t", "2026-01-01",
)  # fmt: skip


@pytest.mark.parametrize(
    ("described", "invented"),
    [
        (  # a date written ISO-style is the text's date; another day is not
            '{"debconf11_attendance": null, "known": {"debconf10_dates": "2010-08-01 to 2010-08-07"}}',
            '{"debconf11_attendance": null, "known": {"debconf11_dates": "2011-07-24 to 2011-07-30"}}',
        ),
        (  # number words are one number: "two hundred" is 200
            "The passages don't give a DebConf11 figure; DebConf10 had over two hundred attendees.",
            "The passages don't give a DebConf11 figure; DebConf10 had over three hundred attendees.",
        ),
        (  # a licence's abbreviation with its version, the initials of the text's words
            "No DebConf11 attendance is documented; the excerpt only covers DebConf10 and the AGPLv3.",
            "No DebConf11 attendance is documented; the excerpt only covers DebConf10 and the LGPLv2.",
        ),
        (  # alternatives joined by a slash, each as the text writes it
            "No DebConf11 attendance is documented; the excerpt covers DebConf10 and its rsa2048/dsa2048 keys only.",
            "No DebConf11 attendance is documented; the excerpt covers DebConf10 and its rsa4096/dsa2048 keys only.",
        ),
        (  # advice to look elsewhere, anywhere in the sentence
            "DebConf11 attendance isn't stated. For DebConf11, please check the conference's FAQ or wiki.",
            "DebConf11 attendance isn't stated. From memory, though, around 300 people attended in Banja Luka.",
        ),
    ],
)
def test_what_the_source_says_in_other_forms_is_grounded_and_its_twin_is_not(described: str, invented: str) -> None:
    assert decide(WHEN, ("a",), "unchanged", ["a"], Answer(described, 0, 0, 0), (), "t", contexts=[DATED]).verdict == (
        "pass"
    )
    v = decide(WHEN, ("a",), "unchanged", ["a"], Answer(invented, 0, 0, 0), (), "t", contexts=[DATED])
    assert v.verdict == "fail" and "outside the context" in v.reason


def test_a_decline_listing_what_the_text_covers_in_its_own_words_is_no_answer_from_outside() -> None:
    """The entailment reader finds the listed clause supported by the retrieved text, though a word of it ("Applies",
    written as a name) is not there; its twin lists a claim the text does not make."""
    text = (
        "The --compress-level option sets the compression level for the ZIP and ZLIB algorithms. The default is "
        "zlib's default level, normally 6. A value of 0 disables compression."
    )
    test = GoldenTest(
        "n2", "What is the maximum compression level for BZIP2?", "not in documents", "negative", 1, ["a"], text,
        "x.md", "6", "t", "2026-01-01",
    )  # fmt: skip

    lead = "The documents don't give a maximum for BZIP2. What they cover for --compress-level:\n"
    said = lead + "- Applies to the ZIP and ZLIB algorithms\n- 0 switches compression off"
    assert _verdict(test, said, text)[0] == "pass"
    more = lead + "- Applies to BZIP2 and LZMA as well, up to level 9\n- 0 switches compression off"
    assert _verdict(test, more, text)[0] == "fail"


def test_a_clause_beside_a_refusal_that_restates_a_retrieved_sentence_reports_it() -> None:
    """ "usually ... within a day" restated from the text, beside a refusal, cites the trap; its twin says something
    usual that the text does not say."""
    text = (
        "You do not need to subscribe to post to the list. Unsubscribed messages are moderated and usually reach the "
        "list within a day. Subscribers' messages show up immediately."
    )
    test = GoldenTest(
        "n3", "How long do the developers take to answer a bug report?", "not in documents", "negative", 1, ["a"],
        text, "x.md", "within a day", "t", "2026-01-01",
    )  # fmt: skip

    lead = "The passages don't say how long the developers take to answer.\n"
    said = _verdict(test, lead + "- Unsubscribed messages are moderated and usually reach the list within a day", text)
    assert said == ("pass", "refused; cites the trap's value 'within a day' only as what the documents say")
    usual = _verdict(test, lead + "- Developers usually answer bug reports within a week", text)
    assert usual[0] == "fail" and "outside the context" in usual[1]


LIST = (
    "You do not need to subscribe to report a bug. Reports sent by non-subscribers are moderated and usually reach "
    "the list within about a day. The list archive is kept for five years."
)
NEG_LIST = GoldenTest(
    "n2", "How long do the developers take to fix a reported bug?", "not in documents", "negative", 1, ["a"],
    LIST, "x.md", "five years", "t", "2026-01-01",
)  # fmt: skip


def test_what_the_text_itself_calls_usual_is_reported_and_its_twin_from_elsewhere_fails() -> None:
    """The word "usually" is the text's word where one retrieved sentence has it with most of the clause's other words; a
    clause that calls something usual in words of its own answers from outside the text."""
    reports = (
        "The documents don't say how long a fix takes. What they cover: reports from non-subscribers are moderated "
        "and usually reach the list within about a day."
    )
    assert _verdict(NEG_LIST, reports, LIST)[0] == "pass"
    assert _verdict(NEG_LIST, reports.replace("What they cover:", "They say"), LIST)[0] == "pass"
    elsewhere = "The documents don't say how long a fix takes. Developers usually fix reported bugs within 7 days."
    assert _verdict(NEG_LIST, elsewhere, LIST)[0] == "fail"


@pytest.mark.parametrize(
    "guess",
    [
        "The passages do not give a TLB miss cost, but it is probably just a few cycles.",
        # the trap cited first, then a guess of the answerer's own: the guess is offered, the trap is not
        "It isn't stated, but since the docs say an LL miss costs up to 200 cycles, it is presumably a few cycles "
        "for the TLB.",
    ],
)
def test_the_asked_thing_put_forward_as_likely_beside_a_refusal_is_a_guess(guess: str) -> None:
    verdict, reason = _verdict(NEG, guess)
    assert (verdict, reason.split(":")[0]) == ("fail", "answered anyway (hedged)")
    # its twin says where the answer may be, and guesses nothing
    twin = "It isn't stated; the docs say an LL miss costs up to 200 cycles, and it is possibly covered elsewhere."
    assert _verdict(NEG, twin)[0] == "pass"


def test_a_source_named_with_its_modifiers_cites_and_its_hedge_is_the_sources() -> None:
    cited = (
        'The cache simulator section says an LL miss costs "up to 200 cycles" and that branch costs may be '
        "10 to 30 cycles. Nothing there covers the TLB, so I can't give a TLB figure."
    )
    assert _verdict(NEG, cited)[0] == "pass"
    guessed = "Nothing covers the TLB, so I can't give a TLB figure; it may be up to 200 cycles."
    assert _verdict(NEG, guessed)[0] == "fail"
