"""What frames an answer is no claim (a letter's closing, an offer of help, a capitalized word opening a sentence,
citation marks), a guess inside a refusing clause still guesses, and the unit an answer puts after the expected
number must be the expected answer's or the retrieved text's. Each case has a twin that differs in the one thing the
rule reads, so a rule that ignored it would fail one of the two."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import facts, foreign_unit, signed_from
from ragpipe.verdicts import decide

MANUAL = (
    "An even better method is to use the latexmk utility from http://mirror.ctan.org/support/latexmk/ after putting "
    "the contents of latexmkrc in a file latexmkrc in the same directory. Asymptote comes with a LaTeX style file "
    "asymptote.sty (v1.36 or later required)."
)
QT = "If you do not provide it, the qt terminal will use a size of 9 points. The default miterlimit, 10.0, may be changed."


def _negative(question: str, trap: str, context: str = MANUAL) -> tuple[GoldenTest, str]:
    test = GoldenTest(
        "neg", question, "not in documents", "negative", 1, ["c1"], context, "manual.pdf", trap, "t", "2026-01-01"
    )
    return test, context


def _positive(question: str, expected: str, context: str = QT) -> tuple[GoldenTest, str]:
    test = GoldenTest("pos", question, expected, "positive", 1, ["c1"], context, "manual.pdf", None, "t", "2026-01-01")
    return test, context


def _verdict(case: tuple[GoldenTest, str], answer: str) -> tuple[str, str]:
    test, context = case
    v = decide(test, ("c1",), "unchanged", ["c1"], Answer(answer, 0, 0, 0), (), "t", contexts=(context,))
    verdict = "needs_review" if v.verdict == "fail" and v.needs_judge else v.verdict
    return verdict, v.reason


LATEXMK = _negative("What minimum version of latexmk is required?", "v1.36")
DECLINE = "The manual does not state a minimum latexmk version."


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("\n\nKind regards,\nCustomer Support", "pass"),  # a letter's closing and its signature
        ("\n\nKind regards,\nCustomer Support\n\nP.S. Version 4.70 works for everyone.", "pass"),  # all signature
        ("\n\nCustomer Support says version 4.70 works.", "fail"),  # no closing: a claim from outside
        (" If it matters, I would be happy to escalate this to our documentation team.", "pass"),
        (" If it matters, I would be happy to escalate this: version 4.70 is the one to use.", "fail"),
        ("\n\n1. Download latexmk from http://mirror.ctan.org/support/latexmk/.", "pass"),
        ("\n\n1. Ghostscript handles the conversion.", "fail"),  # a name opening the item is still a name
        (" The only requirement given is for asymptote.sty [1][2].", "pass"),
    ],
)
def test_framing_around_a_refusal_is_no_claim_and_content_still_is(tail: str, expected: str) -> None:
    assert _verdict(LATEXMK, DECLINE + tail)[0] == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("not exactly stated, probably around v1.36 as well", "fail"),  # the guess after a comma is its own clause
        ("prob same as asymptote.sty so v1.36 too, not stated for latexmk though", "fail"),  # one clause
        ("not stated for latexmk; v1.36 is what asymptote.sty needs", "pass"),  # the trap cited, no hedge
        ("It is not stated directly, but probably yes, any version works.", "fail"),  # a hedged yes answers
        ("It is not stated. From general experience, you could try version 4.70.", "fail"),
        ("It is not stated. The manual only points to http://mirror.ctan.org/support/latexmk/.", "pass"),
    ],
)
def test_a_guess_beside_a_refusal_still_guesses(answer: str, expected: str) -> None:
    assert _verdict(LATEXMK, answer)[0] == expected


CORR = _negative("How does corr handle rows containing NaN by default?", "all", "corrcoef takes rows = all.")


def test_a_bare_trap_is_never_read_as_framing() -> None:
    assert _verdict(CORR, '"all"')[0] != "pass"


def test_a_hedged_trap_in_the_refusing_clause_itself_is_a_guess() -> None:
    # the trap is a plain word, no name or number: only the hedge beside it tells the guess from the citation
    assert _verdict(CORR, "prob same as corrcoef so rows = all, not stated for corr though")[0] == "fail"
    assert _verdict(CORR, "rows = all is given for corrcoef only, not stated for corr")[0] == "pass"


FONT = _positive("What font size does the qt terminal use if no size is given?", "9 points")
MITER = _positive("What is the default miter limit of a pen?", "10.0")


@pytest.mark.parametrize(
    ("case", "answer", "expected"),
    [
        (FONT, "9 points", "pass"),
        (FONT, "9 pt", "pass"),  # the same unit, abbreviated
        (FONT, "9 pixels", "fail"),  # another kind of unit: another quantity
        (
            FONT,
            "The qt terminal uses 9 points.\n\nKind regards,\nCustomer Support",
            "pass",
        ),  # a closing, beside a value
        (FONT, "The qt terminal uses 9 points.\n\nCustomer Support can change it.", "needs_review"),  # a claim
        (MITER, "The default miter limit is 10.0.", "pass"),
        (MITER, "The default miter limit is 10 pt.", "needs_review"),  # a unit nobody gave
        (_positive("What is the default miter limit?", "10.0", "The default miter limit is 10.0 pt."), "10 pt", "pass"),
        (_positive("How many days does the delay last?", "10"), "10 days", "pass"),  # the question names it
    ],
)
def test_a_unit_after_the_expected_number_must_be_the_expected_or_the_retrieved_one(
    case: tuple[GoldenTest, str], answer: str, expected: str
) -> None:
    assert _verdict(case, answer)[0] == expected


def test_foreign_unit_reads_the_number_s_own_unit_and_its_sentence() -> None:
    source = "The default value is 17 which is the minimum necessary. The buffer size in bytes is 256."
    assert foreign_unit("17 bits", "17 digits (save_precision default)", "How many digits?", source) == (
        "17 bits",
        True,
    )
    assert foreign_unit("17 significant digits", "17 digits", "How many digits?", source) is None
    assert foreign_unit("256 bytes", "256", "How big is the buffer?", source) is None  # named in its sentence
    assert foreign_unit("17 bytes", "17", "What is the default?", source) == ("17 bytes", False)  # not in its sentence
    # the number's unit where the expected answer gives it, whatever else it says of the number
    assert foreign_unit("500 lines", "500 lines (default: set history size 500)", "How many?", "") is None
    assert foreign_unit("32 bytes", "32 octets", "How long?", "") is None  # octets are bytes


def test_names_are_proper_nouns_not_sentence_capitals() -> None:
    text = "Download it from the site. Optional: Sumatra PDF. Grace Hopper wrote it [1][2]. Hmm, odd. Bill Gates too."
    found = [f.text for f in facts(text)]
    assert "Download" not in found and "Optional" not in found and "Hmm" not in found
    assert {"Sumatra", "Grace", "Bill", "Gates"} <= set(found)  # a name of several words keeps its first word
    assert not any("]" in f for f in found)
    # a common noun that opens a label or a table's cell labels what follows
    labels = [f.text for f in facts("| Replacement | asn1_der_decoding() |\nDate: unknown. Venue: Paris")]
    assert "Replacement" not in labels and "Date" not in labels and "Paris" in labels


def test_the_signature_starts_at_the_closing() -> None:
    assert signed_from(["the manual does not say", "kind regards, support"]) == 1
    assert signed_from(["best, the docs team"]) == 0
    assert signed_from(["the best option is -p", "regards are sent to the maintainer"]) == 2


HISTORY = _positive(
    "How many entries does the history keep by default?",
    "1000 entries (can be overridden by OCTAVE_HISTSIZE)",
    "The history keeps 1000 entries by default; OCTAVE_HISTSIZE overrides it.",
)
ORDERING = _positive(
    "Which ordering algorithm does glp_interior use by default?",
    "Approximate minimum degree (GLP_ORD_AMD)",
    "ord_alg (default: GLP_ORD_AMD) selects the ordering: GLP_ORD_AMD, approximate minimum degree.",
)
TWO_PARTS = _positive(
    "In what units are pairs given, and what is the default line width?",
    "PostScript big points (1 bp = 1/72 inch); default line width 0.5bp",
    "Pairs are in PostScript big points, 1 bp = 1/72 inch. The default line width is 0.5bp.",
)


@pytest.mark.parametrize(
    ("case", "answer", "expected"),
    [
        (HISTORY, "1000", "pass"),  # the value the expected answer gives before what it adds
        (HISTORY, "one thousand entries", "pass"),
        (HISTORY, "1000, which is also the most it allows", "needs_review"),  # says more: read whole
        (HISTORY, "100", "fail"),
        (ORDERING, "GLP_ORD_AMD", "pass"),  # the one-word alternative name in parentheses
        (ORDERING, "Approximate minimum degree.", "pass"),
        (TWO_PARTS, "PostScript big points", "needs_review"),  # a second part after a semicolon is not given
    ],
)
def test_an_expected_answer_s_value_before_what_it_adds_is_stated_by_a_terse_answer(
    case: tuple[GoldenTest, str], answer: str, expected: str
) -> None:
    assert _verdict(case, answer)[0] == expected


DEBIAN = _negative(
    "Which systemd target does a default Debian installation boot into?",
    "default.target",
    "The default target is the one default.target links to; ps_tm_lim is set at https://keyring.debian.org/ "
    "replacing_keys.html for lsb_release users.",
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("This is not given in the text, but on most installs it is graphical.target.", "fail"),  # code, no backticks
        ("Not covered here, but it's most likely lsb_release --codename.", "fail"),
        ("Not stated. In practice you would set DEB_BUILD_MAINT_OPTIONS=optimize=-lto.", "fail"),
        ("Not stated; the text only names lsb_release.", "pass"),  # code the passages hold, as written
        ("Not stated; the text only mentions ps_tm_lim.", "pass"),  # an underscore the PDF shows as a space too
        ("Not stated; see https://keyring.debian.org/replacing_keys.html.", "pass"),  # a URL the PDF breaks
        ('Not stated.\n```json\n{"boot_target": null, "found_in_sources": false}\n```', "pass"),  # keys, a fence
        ("That isn't covered. From general Debian practice, though, it is multi-user.", "fail"),
        ("Probably not. The docs don't say which target it is.", "fail"),
    ],
)
def test_code_written_without_backticks_is_a_fact_after_a_refusal(answer: str, expected: str) -> None:
    assert _verdict(DEBIAN, answer)[0] == expected


LIMITATION = _negative(
    "Under the license, within what period must a claim be brought?",
    "30 days",
    "Notice is given within 30 days of the violation; any litigation is brought in the courts of the jurisdiction.",
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("I can't find a limitation period. Typically, though, such claims must be brought within 30 days.", "fail"),
        ("I can't find a limitation period. Based on general legal history, claims take 30 days.", "fail"),
        ("It isn't stated. From the project's news archive, claims must be brought within 30 days.", "fail"),
        ("It isn't clearly stated, but it seems claims must be brought within 30 days.", "fail"),
        # "which is about as close as it gets" is an approximation, not a citation ("which is about the notice")
        (
            "No period is given. In practice, courts usually allow 30 days, which is about as close to a rule as it gets.",
            "fail",
        ),
        ("No period is given for claims; the text only sets 30 days for notice of a violation.", "pass"),
    ],
)
def test_a_claim_after_a_refusal_from_another_source_or_usage_is_no_refusal(answer: str, expected: str) -> None:
    assert _verdict(LIMITATION, answer)[0] == expected
