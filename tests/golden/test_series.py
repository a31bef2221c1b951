"""Which periods a negative may move: only along a series the corpus states, or a recurring period of a measure; a
one-off event's year is left alone unless false premises are asked for. Sentences written like encyclopedia prose
and like the bundled example's reports."""

from __future__ import annotations

from ragpipe.golden import candidates, fair_period, sentences_of, series_index


def _candidates(text: str):  # type: ignore[no-untyped-def]
    return [c for s in sentences_of("c0", "d.md", text) for c in candidates(s)]


def _one(text: str, *others: str):  # type: ignore[no-untyped-def]
    (c,) = _candidates(text)
    return c, series_index(s for i, t in enumerate((text, *others)) for s in sentences_of(f"c{i}", "d.md", t))


def test_a_one_off_events_year_is_no_series() -> None:
    c, index = _one(
        "Lumen Vision Systems was founded in 2017 by a group of engineers from the University of Michigan robotics "
        "program.",
        "The acceptance rate for the class of 2018 was 6.3 percent of applicants.",
    )
    assert c.qualifier.kind == "year" and fair_period(c, index) == ""


def test_the_same_attribute_under_two_years_is_a_series_and_names_them() -> None:
    text = "The acceptance rate for the class of 2019 was 5.2 percent, the lowest in its history."
    c, index = _one(text, "The acceptance rate for the class of 2018 was 6.3 percent of applicants.")
    fair = fair_period(c, index)
    assert fair.startswith("a series: the corpus states the same of ") and "'2018'" in fair


def test_another_attribute_under_another_year_makes_no_series() -> None:
    text = "The acceptance rate for the class of 2019 was 5.2 percent, the lowest in its history."
    c, index = _one(text, "The library acquired 4,000 manuscripts in 2018 from a private collection.")
    assert fair_period(c, index) == ""


def test_a_quarter_or_fiscal_year_of_a_measure_recurs_by_nature() -> None:
    c, index = _one("Revenue for the second quarter of 2023 was $44.8 million, a quarterly record for the company.")
    assert fair_period(c, index).startswith("a recurring period (quarter) and a measure (money)")
    c, index = _one("The company shipped 5,272 robot arms in fiscal year 2023, more than in any year.")
    assert fair_period(c, index).startswith("a recurring period (fy) and a measure (count)")


def test_a_release_date_is_a_one_off_even_on_a_recurring_day() -> None:
    c, index = _one("HaloOS 4.1 was released on May 9, 2023 and added a guided palletizing configuration wizard.")
    assert c.value.kind == "version" and fair_period(c, index) == ""


def test_a_short_sentence_no_question_is_made_of_still_shows_the_series() -> None:
    text = "The admission rate for the class of 2023 was 5.9 percent, a record low for the college."
    c, index = _one(text, "The admission rate was 7.2 percent in 2021.")  # too short to be asked, still a statement
    assert "'2021'" in fair_period(c, index)
    c, index = _one(text, "The college was founded in 2021.")  # no number besides the period: no series
    assert fair_period(c, index) == ""
