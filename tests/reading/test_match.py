"""Answer matching: exact, contains, numeric and date equivalence, and the near misses that must not match."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragpipe.reading import answer_matches, dates, is_refusal, numbers

REFUSALS = ("not in documents", "not in the documents", "i don't know", "cannot be answered")


@pytest.mark.parametrize(
    ("answer", "expected", "how"),
    [
        ("$48.7 million", "$48.7 million", "exact"),
        ("  $48.7   Million. ", "$48.7 million", "exact"),
        ("Revenue was $48.7 million in Q3 2023.", "$48.7 million", "contains"),
        ("The notice period is 90 days.", "90 days", "contains"),
        ("It is \u201cAcme Corp\u201d.", "Acme Corp", "contains"),
        # currency with scale words and letters
        ("$12.4M", "12.4 million", "numeric"),
        ("12.4 million", "$12.4M", "numeric"),
        ("revenue of 12.4 mn", "$12.4M", "numeric"),
        ("$2.2 billion", "2.2bn", "numeric"),
        ("2,200,000,000", "$2.2 billion", "numeric"),
        ("2,200,000 dollars", "$2.2 million", "numeric"),
        ("\u20ac1.5k", "1,500", "numeric"),
        ("about 350 thousand", "$350k", "numeric"),
        # percentages
        ("18 percent", "18%", "numeric"),
        ("growth of 18.0%", "18%", "numeric"),
        # thousands separators
        ("1,234,567 units", "1234567 units", "numeric"),
        ("1234567", "1,234,567", "numeric"),
        # dates
        ("2024-03-03", "March 3, 2024", "date"),
        ("3 March 2024", "March 3, 2024", "date"),
        ("March 3, 2024", "3 March 2024", "date"),
        ("It was signed on Mar. 3rd, 2024.", "2024-03-03", "date"),
        ("effective 1 Sept 2025", "September 1, 2025", "date"),
    ],
)
def test_matches(answer: str, expected: str, how: str) -> None:
    m = answer_matches(answer, expected)
    assert (m.matched, m.how) == (True, how)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("90 days", "19 days"),
        ("19 days", "90 days"),
        ("190 days", "90 days"),
        ("$48.7 billion", "$48.7 million"),
        ("$48.7 million", "$48.7 billion"),
        ("$48.7 thousand", "$48.7 million"),
        ("48.7", "$48.7 million"),
        ("$12.4M", "$12.5M"),
        ("Revenue in Q3 2023 was $48.7 million.", "Q3 2022"),
        ("Q3 2023", "Q3 2022"),
        ("18%", "1.8%"),
        ("1,234,568", "1,234,567"),
        ("March 4, 2024", "March 3, 2024"),
        ("2024-03-03", "2023-03-03"),
        ("3 April 2024", "3 March 2024"),
        ("Acme Corporation Ltd", "Acme Corp"),
        ("anything", ""),
        ("anything", "  ..  "),
        ("", "$48.7 million"),
        # a month name only when it is a word of its own, a year only when it ends there
        ("to our dismay 5, 2024 was hard", "2024-05-05"),
        ("grammar 3, 2024", "March 3, 2024"),
        ("March 3, 20245", "March 3, 2024"),
    ],
)
def test_non_matches_stay_non_matches(answer: str, expected: str) -> None:
    m = answer_matches(answer, expected)
    assert (m.matched, m.how) == (False, "")


def test_numbers_and_dates_parse() -> None:
    assert numbers("$12.4M and 12.4 million and 18% and 2,200,000") == [12.4e6, 12.4e6, 18.0, 2.2e6]
    assert numbers("Q3 and v2.1") == []  # glued to a word: not a quantity
    assert dates("2024-03-03, March 3, 2024 and 3 March 2024") == [dates("2024-03-03")[0]] * 3
    assert dates("2024-13-45") == []


@pytest.mark.parametrize(
    "answer",
    [
        "not in documents",
        "That is NOT in the documents.",
        "I don\u2019t know.",
        "I don't know",
        "Sorry \u2014 this cannot be answered from the context.",
        "The answer is not   in\nthe documents",
    ],
)
def test_refusals(answer: str) -> None:
    assert is_refusal(answer, REFUSALS)


def test_curly_apostrophe_in_the_phrase_too() -> None:
    assert is_refusal("I don't know", ("I don\u2019t know",))
    assert is_refusal("I DON\u2018T KNOW", ("i don't know",))


@pytest.mark.parametrize("answer", ["Revenue was $48.7 million.", "", "I know: $48.7 million", "documents show 42"])
def test_not_refusals(answer: str) -> None:
    assert not is_refusal(answer, REFUSALS)


printable = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(
    lambda s: s.isprintable() and any(c.isalnum() for c in s)
)


@settings(max_examples=300, deadline=None)
@given(printable)
def test_property_text_matches_itself(x: str) -> None:
    assert answer_matches(x, x).matched


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False))
def test_property_millions_written_two_ways_match(d) -> None:
    assert answer_matches(f"${d}M", f"{d} million").matched
    assert answer_matches(f"{d} million dollars", f"${d}M").matched


def test_binary_prefixes_are_exact_byte_counts_and_decimal_ones_stay_apart() -> None:
    from ragpipe.reading import answer_matches

    assert answer_matches("It reads 1,048,576 bytes at a time.", "1 MiB").matched
    assert answer_matches("2 KiB", "2048 bytes").matched and answer_matches("1024 KiB", "1 MiB").matched
    assert not answer_matches("64 KiB", "1 MiB").matched
    assert not answer_matches("1 MB", "1 MiB").matched  # a megabyte is 1,000,000 or 1,048,576 by convention


def test_a_time_of_day_beside_a_date_is_part_of_the_date() -> None:
    expected = "1970-01-01 00:00:01 through 2106-02-07 06:28:15 UTC"
    assert answer_matches('{"min": "1970-01-01T00:00:01Z", "max": "2106-02-07T06:28:15Z"}', expected).matched
    assert not answer_matches("From 1970-01-01 00:00:00 through 2106-02-07 06:28:16 UTC.", expected).matched
    assert answer_matches("At midnight UTC on 1 January 1970.", "January 1st, 1970, 00:00:00 UTC").matched
    assert not answer_matches("At noon on 1 January 1970, 12:00:00.", "January 1st, 1970, 00:00:00 UTC").matched


def test_a_short_option_of_the_expected_answer_is_stated_only_as_written() -> None:
    expected = "bug-tarpit@example.org; run 'tarpit -V'"
    assert answer_matches('{"report_to": "bug-tarpit@example.org", "version": "tarpit -V"}', expected).matched
    assert not answer_matches("Mail bug-tarpit@example.org with the output of tarpit -v.", expected).matched
    assert answer_matches("Pipe zcat file.gz into wc -c.", "zcat file.gz | wc -c").matched
    assert not answer_matches("Pipe zcat file.gz into wc -l.", "zcat file.gz | wc -c").matched
