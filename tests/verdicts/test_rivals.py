"""What an answer puts in the expected value's place: code of the expected answer's family fails where a rewording
stays for a reviewer; values swapped between the subjects the expected answer pairs them with fail, the same pairs in
another order or form keep their verdict (made-up answers)."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.verdicts import decide
from ragpipe.verdicts.rivals import swapped_pairs, swapped_words

TEXT = "The maximum socket path length is 107 bytes on Linux and 103 bytes on macOS."
POS = GoldenTest(
    "p", "What is the maximum socket path length?", "107 bytes on Linux and 103 bytes on macOS", "positive", 1,
    ["a"], TEXT, "x.md", None, "t", "2026-01-01",
)  # fmt: skip


def _verdict(answer: str) -> tuple[str, str]:
    v = decide(POS, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[TEXT])
    return v.verdict, v.reason


@pytest.mark.parametrize(
    ("kept", "swapped"),
    [
        ("107 bytes on Linux and 103 bytes on macOS.", "103 bytes on Linux and 107 bytes on macOS."),
        ("On macOS it is 103 bytes, and on Linux 107.", "On macOS it is 107 bytes, and on Linux 103."),
        ("Linux: 107 bytes; macOS: 103 bytes", "Linux: 103 bytes; macOS: 107 bytes"),
    ],
)
def test_values_swapped_between_their_subjects_fail_and_the_pairs_kept_pass(kept: str, swapped: str) -> None:
    assert _verdict(kept)[0] == "pass"
    verdict, reason = _verdict(swapped)
    assert verdict == "fail" and "pairs otherwise" in reason


def test_pairs_are_read_only_where_the_expected_answer_gives_one_value_per_part() -> None:
    assert swapped_pairs("They return 0 when run on Valgrind and -1 otherwise.", "-1 when run on Valgrind, 0 otherwise")
    assert (
        swapped_pairs("They return -1 under Valgrind and 0 otherwise.", "-1 when run on Valgrind, 0 otherwise") is None
    )
    # a date's parts are one value, and a single value has nothing to pair
    assert swapped_pairs("Git 2.11, from November 2016", "Git 2.11 (November 2016)") is None
    assert swapped_pairs("It is 300 seconds on Linux.", "300 seconds") is None


def test_the_words_of_two_parts_crossed_both_ways_are_a_swap_and_an_aside_is_not() -> None:
    expected = "Line buffered for interactive devices, fully buffered otherwise"
    assert swapped_words("It is fully buffered for interactive devices and line buffered otherwise.", expected)
    assert swapped_words("Line buffered for interactive devices; otherwise fully buffered.", expected) is None
    assert swapped_words("Line buffered when interactive (fully buffered otherwise).", expected) is None  # an aside
    two = "diagnostic messages to standard error and help messages to standard output"
    assert swapped_words("Diagnostic messages go to standard output and help messages to standard error.", two)
    assert swapped_words("Diagnostic messages go to standard error, help messages to standard output.", two) is None


OPTION_TEXT = (
    "Use --branch-sim=yes to turn on branch simulation; it is disabled by default because it slows the tool by about "
    "25%. Cache simulation is turned on with --cache-sim=yes."
)
OPTION = GoldenTest(
    "o", "Which option turns on branch simulation?", "--branch-sim=yes; it is disabled by default (it slows the tool "
    "by about 25%)", "positive", 1, ["a"], OPTION_TEXT, "x.md", None, "t", "2026-01-01",
)  # fmt: skip


def _verdict_of(test: GoldenTest, answer: str) -> tuple[str, str]:
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[OPTION_TEXT])
    return v.verdict, v.reason


def test_code_of_the_expected_family_in_its_place_fails_and_a_rewording_stays_for_a_reviewer() -> None:
    verdict, reason = _verdict_of(OPTION, "Use --cache-sim=yes; it is off by default.")
    assert verdict == "fail" and "--cache-sim" in reason and "--branch-sim" in reason
    assert _verdict_of(
        OPTION,
        "Branch simulation is switched on with an option, and by default it is disabled because it slows the tool.",
    )[0] == ("needs_review")


COVER = "A Front-Cover Text may be at most 5 words, and a Back-Cover Text may be at most 25 words."
COVERS = GoldenTest(
    "c", "How long may the cover texts be?", "Front-Cover Text at most 5 words; Back-Cover Text at most 25 words",
    "positive", 1, ["a"], COVER, "x.md", None, "t", "2026-01-01",
)  # fmt: skip


def test_a_quoted_sentence_keeps_the_sources_may_and_the_answerers_own_may_is_a_guess() -> None:
    def verdict(answer: str) -> tuple[str, str]:
        v = decide(COVERS, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[COVER])
        return v.verdict, v.reason

    assert verdict(f'The license says: "{COVER}"')[0] == "pass"
    verdict_, reason = verdict(
        "I think a Front-Cover Text may be at most 5 words and a Back-Cover Text at most 25 words."
    )
    assert verdict_ == "fail" and "only as a guess" in reason


def test_a_number_changed_in_a_rewording_fails_and_the_same_numbers_in_other_words_stay() -> None:
    from ragpipe.verdicts.rivals import rival_number

    expected = "Either zero or a number from 101 to 200"
    assert rival_number("Zero, or any number in the range 100 to 200.", expected, "Which klass values?") == (100, 101)
    assert (
        rival_number("Zero, or anything from one hundred one to two hundred.", expected, "Which klass values?") is None
    )
    # a fraction for a percentage, an example quoted, a form with placeholders: no rival
    assert rival_number("A threshold of 0.50, inclusive.", "fifty percent (50%) or more", "What share?") is None
    assert rival_number('As in "1.4-5~bpo9u1".', "~bpoNuX (N = the release, X = a counter from 1)", "Form?") is None
    verdict, reason = _verdict_of(
        OPTION, "--branch-sim=yes; it is disabled by default because it slows the tool by 50%."
    )
    assert verdict == "fail" and "gives 50" in reason


def test_code_whose_case_is_part_of_it_is_matched_in_its_case_and_a_stated_null_is_no_refusal() -> None:
    from ragpipe.reading import cased

    assert cased("-lexpat") and cased("BZh") and cased("XML_SetHashSalt")
    assert not cased("Scandinavia") and not cased("GLP_ON") and not cased("expat")
    link = "Link with -lexpat; the headers are in /usr/include."
    test = GoldenTest(
        "l", "Which linker flag links Expat?", "-lexpat", "positive", 1, ["a"], link, "x.md", None, "t", "2026-01-01"
    )
    assert decide(
        test, ("a",), "unchanged", ["a"], Answer("Use -lexpat.", 0, 0, 0), (), "t", contexts=[link]
    ).verdict == ("pass")
    assert decide(
        test, ("a",), "unchanged", ["a"], Answer("Use -Lexpat.", 0, 0, 0), (), "t", contexts=[link]
    ).verdict == ("fail")
    trap = GoldenTest(
        "t", "What is the default of format.useAutoBase?", "not in documents", "negative", 1, ["a"], link, "x.md",
        "whenAble", "t", "2026-01-01",
    )  # fmt: skip
    v = decide(trap, ("a",), "unchanged", ["a"], Answer("whenAble", 0, 0, 0), (), "t", contexts=[link])
    assert v.verdict == "fail" and v.took_trap  # each clause is read lower-cased: its case says nothing
    ns = "For a default namespace declaration (xmlns='...'), the prefix will be null."
    null = GoldenTest(
        "n", "What prefix does the handler get for a default namespace?", "A null prefix", "positive", 1, ["a"], ns,
        "x.md", None, "t", "2026-01-01",
    )  # fmt: skip
    v = decide(null, ("a",), "unchanged", ["a"], Answer("The prefix is null.", 0, 0, 0), (), "t", contexts=[ns])
    assert v.verdict == "pass", v.reason


MAIL_TEXT = (
    "Please send bug reports to bug-tarpit@example.org and include the output of 'tarpit -V'. The rules are read "
    "from tarpit_rules.conf, installed under `$prefix/share/tarpit`."
)


@pytest.mark.parametrize(
    ("expected", "right", "rival"),
    [
        (
            "bug-tarpit@example.org; run 'tarpit -V'",
            "Report them to bug-tarpit@example.org, and run `tarpit -V` for the version.",
            "Report them to bug-gnu-tarpit@example.org, and run `tarpit -V` for the version.",
        ),
        ("tarpit_rules.conf", "They are read from tarpit_rules.conf.", "They are read from tarpit.rules.conf."),
        ("`$prefix/share/tarpit`", "Under `$prefix/share/tarpit`.", "Under `$prefix/lib/tarpit`."),
    ],
)
def test_an_address_file_or_path_of_the_expected_family_in_its_place_fails(
    expected: str, right: str, rival: str
) -> None:
    test = GoldenTest("m", "Where?", expected, "positive", 1, ["a"], MAIL_TEXT, "x.md", None, "t", "2026-01-01")

    def verdict(answer: str) -> tuple[str, str]:
        v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[MAIL_TEXT])
        return v.verdict, v.reason

    assert verdict(right)[0] == "pass"
    got, reason = verdict(rival)
    assert got == "fail" and "where the expected answer has" in reason


def test_an_option_named_by_its_short_form_is_the_expected_option() -> None:
    text = "'-q, --quiet' Do not print the normal welcome. POSIXLY_CORRECT is the same as the -s option."
    quiet = GoldenTest(
        "q", "Which option suppresses the welcome?", "-q (long form --quiet)", "positive", 1, ["a"], text, "x.md",
        None, "t", "2026-01-01",
    )  # fmt: skip
    standard = GoldenTest(
        "s", "Which option is POSIXLY_CORRECT equivalent to?", "the -s option (--standard)", "positive", 1, ["a"],
        text, "x.md", None, "t", "2026-01-01",
    )  # fmt: skip

    def verdict(test: GoldenTest, answer: str) -> str:
        return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text]).verdict

    assert verdict(quiet, "Use -q (or --quiet).") == "pass"
    assert verdict(quiet, "Use -w (or --warn).") == "fail"
    assert verdict(standard, "So the answer is -s.") == "pass"
    assert verdict(standard, "So the answer is -q.") == "fail"


@pytest.mark.parametrize("expected", ["-l (long form --mathlib)", "-l, --mathlib", "--mathlib (short form -l)"])
def test_an_option_spelled_two_ways_is_named_by_either_spelling_alone_and_unpaired(expected: str) -> None:
    text = "'-l, --mathlib' Define the standard math library. '-s, --standard' Process exactly the POSIX language."
    test = GoldenTest(
        "l", "Which option loads the math library?", expected, "positive", 1, ["a"], text, "x.md", None, "t",
        "2026-01-01",
    )  # fmt: skip

    def verdict(answer: str) -> str:
        return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text]).verdict

    # either spelling, with words about its forms or a quote of the text beside it
    assert verdict("Use -l (long form: --mathlib).") == "pass"
    assert verdict("From the options list: \"'-l, --mathlib' Define the standard math library.\"") == "pass"
    assert verdict('{"short_option": "-l", "long_option": "--mathlib"}') == "pass"
    assert verdict("Start it with --mathlib.") == "pass"
    # another option, a longer one holding a spelling, a wrong pairing, a spelling denied
    assert verdict("Use -s (long form: --standard).") == "fail"
    assert verdict("Use --mathlib-extra.") == "fail"
    assert verdict("The option is --mathlib, the short form is -m.") == "fail"
    assert verdict("You need --mathlib; there is no short option for it.") == "fail"


def test_a_null_asked_of_or_written_as_code_is_no_refusal() -> None:
    text = "If an element is OPTIONAL and you want to delete it, you must use value=NULL and len=0."
    test = GoldenTest(
        "n", "How do I delete an OPTIONAL element with asn1_write_value?", "value=NULL and len=0", "positive", 1,
        ["a"], text, "x.md", None, "t", "2026-01-01",
    )  # fmt: skip

    def verdict(answer: str) -> str:
        return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text]).verdict

    assert verdict("Pass value=NULL and len=0:\n```c\nasn1_write_value(node, name, NULL, 0);\n```") == "pass"
    assert verdict("The docs don't say; maybe value=NULL and len=0.") != "pass"  # the refusal is not the null's


def test_a_command_matched_by_its_words_keeps_its_short_options() -> None:
    text = "To get the uncompressed size of all members, use: zcat file.gz | wc -c"
    test = GoldenTest(
        "z", "Which command gives the uncompressed size?", "zcat file.gz | wc -c", "positive", 1, ["a"], text,
        "x.md", None, "t", "2026-01-01",
    )  # fmt: skip

    def verdict(answer: str) -> str:
        return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text]).verdict

    assert verdict("Pipe zcat of file.gz into wc -c.") == "pass"
    assert verdict("Pipe zcat of file.gz into wc -l.") == "fail"


def test_that_would_be_the_value_answers_and_a_would_be_guess_does_not() -> None:
    text = "The -c option prints the byte code instead of running the program."
    test = GoldenTest(
        "c", "Which option prints the byte code?", "-c", "positive", 1, ["a"], text, "x.md", None, "t", "2026-01-01"
    )

    def verdict(answer: str) -> tuple[str, str]:
        v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text])
        return v.verdict, v.reason

    assert verdict("That would be -c! It prints the byte code instead of running the program.")[0] == "pass"
    got, reason = verdict("It could be -c, I suppose.")
    assert got == "fail" and "guess" in reason


def test_an_expected_answer_of_two_parts_with_asides_has_no_head_to_stand_for_it() -> None:
    text = "'r' Number of socket messages received by the process. 's' Number of socket messages sent by the process."
    test = GoldenTest(
        "r", "Which specifiers report socket messages received and sent?", "%r (received) and %s (sent)", "positive",
        1, ["a"], text, "x.md", None, "t", "2026-01-01",
    )  # fmt: skip

    def verdict(answer: str) -> str:
        return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=[text]).verdict

    from ragpipe.verdicts.positives import heads

    assert heads(test.expected_answer) == [] and heads("-q (long form --quiet)") == ["-q", "--quiet"]
    assert heads("'p' (print), 'l' (list) and 'n' (enumerate)") == []  # a list, each part with its aside
    assert heads("24 octets (192 bits), because parity bits are inserted") == ["24 octets"]  # an aside, then a reason
    assert verdict("Use %s for messages received and %r for messages sent.") != "pass"  # "%r" alone is not all of it
