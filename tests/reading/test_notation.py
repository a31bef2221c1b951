"""Scientific notation as people type it equals the decimal it stands for, in the expected answer, the answer and the
retrieved text alike; each case has its twin with another exponent, which must not match (made-up sentences)."""

from __future__ import annotations

import pytest

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import answer_matches, notations, with_carets
from ragpipe.verdicts import decide


def _test(kind: str, expected: str, quote: str, trap: str | None = None) -> GoldenTest:
    return GoldenTest("q", "What value is given?", expected, kind, 1, ["a"], quote, "x.md", trap, "t", "2026-01-01")


def _verdict(test: GoldenTest, answer: str) -> tuple[str, str]:
    v = decide(
        test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), ("not in documents",), "t", contexts=[test.quote]
    )
    return v.verdict, v.reason


FORMS = [
    ("0.0025 m", "The gap is 2.5 \u00d7 10^-3 m.", "The gap is 2.5 \u00d7 10^-4 m."),
    ("0.0025 m", "The gap is 2.5 x 10^-3 m.", "The gap is 2.5 x 10^-2 m."),
    ("0.0025 m", "The gap is 2.5*10^-3 m.", "The gap is 2.5*10^3 m."),
    ("0.0025 m", "The gap is 2.5e-3 m.", "The gap is 2.5e-5 m."),
    ("0.0025 m", "The gap is 2.5 \u00d7 10\u207b\u00b3 m.", "The gap is 2.5 \u00d7 10\u207b\u2074 m."),
    ("60,000 feet", "It flew at 6 \u00d7 10^4 feet.", "It flew at 6 \u00d7 10^5 feet."),
    ("200 thousand to 31 million", "from 2 \u00d7 10^5 to 3.1 \u00d7 10^7", "from 2 \u00d7 10^5 to 3.1 \u00d7 10^6"),
    ("1,000,000", "10 to the 6th", "10 to the 7th"),
    ("1,000,000", "ten to the sixth power", "ten to the fifth power"),
    ("30,000", "3 times 10 to the power of 4", "3 times 10 to the power of 5"),
    # powers of another base and hexadecimal literals are their decimals too
    ("1048576 bytes", "The buffer holds 2^20 bytes.", "The buffer holds 2^21 bytes."),
    ("1048576 bytes", "The buffer holds 0x100000 bytes.", "The buffer holds 0x10000 bytes."),
    ("65535", "The cap is 2^16 - 1.", "The cap is 2^15 - 1."),
    ("4294967296", "It counts up to 2**32.", "It counts up to 2**31."),
]


@pytest.mark.parametrize(("expected", "right", "wrong"), FORMS)
def test_a_value_in_notation_is_its_decimal(expected: str, right: str, wrong: str) -> None:
    assert answer_matches(right, expected).matched
    assert not answer_matches(wrong, expected).matched


@pytest.mark.parametrize(("expected", "right", "wrong"), FORMS)
def test_the_answer_in_notation_passes_and_its_twin_fails(expected: str, right: str, wrong: str) -> None:
    """Read as one value, the notation is grounded by the decimal the retrieved text gives; read as three numbers
    ("2.5", "10", "-3"), the right answer would wait for a reviewer."""
    quote = f"The figure given is {expected}."
    assert _verdict(_test("positive", expected, quote), right)[0] == "pass"
    assert _verdict(_test("positive", expected, quote), wrong)[0] == "fail"


def test_a_notation_is_grounded_by_the_value_either_side_writes() -> None:
    from ragpipe.reading.grounding import Fact, grounded, grounds

    plain, written = grounds(("The gap is 0.0025 m.",), ""), grounds(("The gap is 2.5 \u00d7 10\u207b\u00b3 m.",), "")
    assert grounded(Fact("2.5 x 10^-3", "number", 0, 11), plain)
    assert not grounded(Fact("2.5 x 10^-4", "number", 0, 11), plain)
    assert grounded(Fact("0.0025", "number", 0, 6), written)
    assert not grounded(Fact("0.025", "number", 0, 5), written)


def test_a_negative_that_gives_the_trap_in_notation_took_the_trap() -> None:
    neg = _test("negative", "not in documents", "In 1961 it flew at 60,000 feet.", trap="60,000 feet")
    verdict, reason = _verdict(neg, "It reached 6 x 10^4 ft in 1962.")
    assert verdict == "fail" and reason.startswith("took the trap")
    assert _verdict(neg, "Not in documents; the 6 \u00d7 10^4 ft figure is for 1961.")[0] == "pass"


def test_superscripts_become_carets_and_spans_cover_the_whole_notation() -> None:
    assert with_carets("2.5 \u00d7 10\u207b\u00b3 m") == "2.5 \u00d7 10^-3 m"
    [(start, end, value)] = notations("gap 2.5 x 10^-3 m")
    assert "gap 2.5 x 10^-3 m"[start:end] == "2.5 x 10^-3" and value == pytest.approx(0.0025)
    assert notations("version 10.3 of the spec") == []


def test_a_restatement_in_superscripts_is_checked_like_any_other() -> None:
    """A wrong restatement beside the right value waits for a reviewer; the right one passes."""
    test = _test("positive", "0.0025 m", "The gap is 0.0025 m.")
    assert _verdict(test, "The gap is 0.0025 m, i.e. 2.5 \u00d7 10\u207b\u00b3 m.")[0] == "pass"
    assert _verdict(test, "The gap is 0.0025 m, i.e. 2.5 \u00d7 10\u207b\u2074 m.")[0] == "needs_review"
    assert _verdict(test, "The gap is 2.5E-3 m.")[0] == "pass"


def test_an_exponent_out_of_range_reads_without_an_error() -> None:
    # commit hashes in release notes ("merge 719483e547 bc/x") have the shape of a notation; one raised OverflowError
    from ragpipe.reading import digits
    from ragpipe.reading.notation import notations

    assert notations("(merge 719483e547 bc/constant-memequal)")[0][2] == float("inf")
    assert notations("10^-400")[0][2] == 0.0
    assert len(digits("a 1e99999999 limit")) < 100  # written out it would be 100 million digits
    quote = "Use a constant-time comparison. (merge 719483e547 bc/constant-memequal later to maint)."
    assert _verdict(_test("positive", "719483e547", quote), "It was merge 719483e547.")[0] == "pass"
    assert _verdict(_test("negative", "not in documents", quote, "719483e547"), "Not stated.")[0] == "pass"


def test_a_hexadecimal_literal_is_one_number_and_a_bare_hex_value_is_met_with_its_prefix() -> None:
    assert [round(v) for _, _, v in notations("Set it to 0x7e, or 2^16 - 1.")] == [126, 65535]
    assert answer_matches("0xFFFFFFFF, all 32 bits set.", "ffffffff").matched
    assert not answer_matches("0xFFFFFFFE", "ffffffff").matched


def test_a_value_of_the_text_written_short_is_no_outside_claim_and_a_wrong_rounding_is() -> None:
    test = _test("positive", "23,860,929 digits", "Numbers above 23,860,929 digits may be multiplied wrongly.")
    assert _verdict(test, "23,860,929 digits (about 2.386e7).")[0] == "pass"
    assert _verdict(test, "23,860,929 digits (about 2.39 x 10^7).")[0] == "pass"
    assert _verdict(test, "23,860,929 digits (about 2.396e7).")[0] != "pass"
    assert _verdict(test, "23,860,929 digits (about 2.4 x 10^7).")[0] != "pass"  # two digits: not read as a rounding


def test_a_format_specifier_is_read_in_its_case_as_a_short_option_is() -> None:
    from ragpipe.reading import cased

    assert cased("%x") and cased("-l") and not cased("Scandinavia")
    assert not answer_matches("%X", "%x").matched
    assert answer_matches("The %x specifier.", "%x").matched
