"""What the answer says beside a right value, held against where the retrieved text says it: a number taken from
another statement of the text, the value denied after it is given, a second value for what was asked. Each case
has a near twin that must come out the other way (the sentences are made up for these tests)."""

from __future__ import annotations

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import answer_matches, grounds, read_answer, standing, swapped
from ragpipe.verdicts import decide
from ragpipe.verdicts.positives import denied_after, second_value

MUSEUM = (
    "The Harbour Museum, founded in 1872, holds about 40,000 objects. Its new wing was designed by Ana Ruiz and "
    "opened on 3 May 2004. The roof terrace covers 900 square metres."
)
DEPOT = (
    "The depot sent 120 trucks under Marta Lind, who left the north yard on 9 March. They reached the coast on "
    "21 March, where the crews rested for two days."
)


def _test(question: str, expected: str) -> GoldenTest:
    return GoldenTest("t1", question, expected, "positive", 1, ["a"], "q", "doc.md", None, "tag", "2026-01-01")


def _verdict(test: GoldenTest, answer: str, context: str) -> tuple[str, str]:
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=(context,))
    return v.verdict, v.reason


OBJECTS = _test("How many objects does the Harbour Museum hold?", "about 40,000")
TRUCKS = _test("How many trucks did the depot send?", "120")


def test_a_number_taken_from_another_statement_of_the_text_is_never_a_pass() -> None:
    verdict, reason = _verdict(OBJECTS, "About 40,000 objects; it was founded in 2004.", MUSEUM)
    assert verdict == "needs_review" and "1872" in reason
    assert _verdict(OBJECTS, "About 40,000 objects; it was founded in 1872.", MUSEUM)[0] == "pass"
    verdict, reason = _verdict(TRUCKS, "120 trucks, which left the north yard on 21 March.", DEPOT)
    # the words on both sides of "21" are the sentence's own: a rival number in its place, a sure contradiction
    assert verdict == "fail" and "'21' where the retrieved text says '9'" in reason
    assert _verdict(TRUCKS, "120 trucks, which left the north yard on 9 March.", DEPOT)[0] == "pass"


def test_a_number_the_text_pairs_with_nothing_else_or_gives_nowhere_is_not_swapped() -> None:
    g = grounds((MUSEUM,), "")
    # the restated sentence holds the number: said where the text says it
    assert swapped("Its new wing opened in 2004.", "its new wing opened in 2004", "", g, "When?", "x") is None
    # a number the retrieved text does not hold at all is ungrounded, not swapped (the outside check reads it)
    assert swapped("Founded in 1999.", "founded in 1999", "", g, "When?", "x") is None
    # arithmetic and tables are working, not statements
    assert swapped("2004 - 1872 = 132 years.", "2004 - 1872 = 132 years", "", g, "How old?", "x") is None


def test_a_short_clause_is_read_with_the_clause_before_it() -> None:
    g = grounds((MUSEUM,), "")
    for year, swap in (("1872", False), ("2004", True)):  # "it was founded in ..." alone says too little
        answer = f"The Harbour Museum holds about 40,000 objects; it was founded in {year}."
        readings = read_answer(answer)
        found = swapped(answer, readings[1].clause, readings[0].clause, g, "How many?", "40,000")
        assert (found is not None) == swap
        assert swapped(answer, readings[1].clause, "", g, "How many?", "40,000") is None


def test_a_plain_word_choice_has_the_words_joined_by_or_as_its_options() -> None:
    choice = _test("Are the units fixed or free?", "fixed")
    text = "The units are fixed once the law is written as an equality."
    assert _verdict(choice, "They are fixed.", text)[0] == "pass"  # "the" in "They" is no option
    assert _verdict(choice, "Free, or rather fixed.", text)[0] == "needs_review"


def test_the_value_given_then_denied_is_never_a_pass() -> None:
    fixed = _test("Are the units of force and mass fixed or free?", "fixed")
    text = "The units of force and mass are fixed once the law is written as an equality."
    answer = "They're fixed, though strictly they are not fixed at small scales."
    readings = read_answer(answer)
    stating = [0, 1]
    assert denied_after(readings, stating, "fixed", fixed.question) is not None
    assert _verdict(fixed, answer, text)[0] == "needs_review"
    assert _verdict(fixed, "They're fixed, so the units are fixed.", text)[0] == "pass"
    assert denied_after(read_answer("Not fixed. Well, fixed."), [0, 1], "fixed", fixed.question) is None


def test_a_second_value_for_what_was_asked_is_never_a_pass() -> None:
    version = _test("What is the current protocol version?", "3.2")
    text = "The current protocol version is 3.2. Versions in the 3.x series stay compatible."
    answer = "The current protocol version is 3.2, but the current version you should send is 3.0."
    readings = read_answer(answer)
    assert second_value(answer, readings, [0], "3.2", version.question, grounds((text,), "")) is not None
    assert _verdict(version, answer, text)[0] == "needs_review"
    assert (
        _verdict(version, "The current protocol version is 3.2; versions in the 3.x series stay compatible.", text)[0]
        == "pass"
    )
    said = text + " The first protocol version, from 2019, was numbered 1."
    assert (
        _verdict(
            version, "The current protocol version is 3.2. The first protocol version, from 2019, was numbered 1.", said
        )[0]
        == "pass"
    )
    assert (
        _verdict(
            version,
            "The current protocol version is 3.2. The first protocol version, from 2019, was numbered 2.",
            said + " Two clients exist.",
        )[0]
        != "pass"
    )
    table = "| Event | Version |\n|---|---|\n| First protocol version | 1.0 |\n| Current protocol version | 3.2 |"
    assert _verdict(version, table, text + " The first protocol version was 1.0.")[0] == "pass"


def test_a_name_taken_from_another_statement_is_never_a_pass() -> None:
    depot = DEPOT + " Later, Pavel Ek ran the repair shop."
    verdict, reason = _verdict(TRUCKS, "120 trucks under Pavel Ek, who left the north yard on 9 March.", depot)
    assert verdict == "needs_review" and ("marta" in reason or "lind" in reason)
    assert _verdict(TRUCKS, "120 trucks under Marta Lind, who left the north yard on 9 March.", depot)[0] == "pass"
    # a name in parentheses glosses; it makes no claim of its own
    assert (
        _verdict(TRUCKS, "120 trucks left the north yard on 9 March (Pavel Ek fixed them later).", depot)[0] == "pass"
    )


def test_a_number_word_that_counts_is_held_against_the_text_too() -> None:
    depot = DEPOT + " Four trucks stayed behind."
    verdict, reason = _verdict(TRUCKS, "120 trucks; the crews rested at the coast for four days.", depot)
    assert verdict == "needs_review" and "where the retrieved text says" in reason
    assert _verdict(TRUCKS, "120 trucks; the crews rested at the coast for two days.", depot)[0] == "pass"


def test_a_value_with_the_verb_of_another_sentence_is_swapped() -> None:
    verdict, reason = _verdict(OBJECTS, "About 40,000 objects. The museum was founded in 2004 by Ana Ruiz.", MUSEUM)
    assert verdict == "needs_review" and "1872" in reason
    assert _verdict(OBJECTS, "About 40,000 objects. Its new wing opened in 2004.", MUSEUM)[0] == "pass"


def test_code_giving_a_parameter_another_parameters_value_is_never_a_pass() -> None:
    doc = "isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0): rel_tol is the relative tolerance."
    tol = _test("What is the default relative tolerance of isclose?", "1e-09")
    verdict, reason = _verdict(tol, "`rel_tol=1e-09` and `abs_tol=1e-09` by default.", doc)
    assert verdict == "needs_review" and "abs_tol=0.0" in reason
    assert _verdict(tol, "`rel_tol=1e-09` and `abs_tol=0.0` by default.", doc)[0] == "pass"


def test_a_number_beside_a_name_is_stated_only_with_that_name() -> None:
    assert not answer_matches("The field must be set to EDSP 0.1.", "EIPP 0.1").matched
    assert answer_matches("The field must be set to EIPP 0.1.", "EIPP 0.1").matched
    assert answer_matches("A 1024 KiB buffer.", "1 MiB").matched  # a unit is no name


def test_a_contrast_right_before_the_value_says_it_of_something_else() -> None:
    assert standing("On Windows it uses a 64 KiB buffer instead of 1 MiB.", "1 MiB") == "contrasted"
    assert standing("On Windows it uses 1 MiB instead of 64 KiB.", "1 MiB") == "asserted"
    assert standing("Any value other than 0 enables it.", "0") == "contrasted"
