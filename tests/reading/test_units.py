"""Quantities as dimensions: another unit is another quantity, a conversion is the same one."""

import pytest

from ragpipe.reading.units import conversions, measures, states_converted, wrong_unit


@pytest.mark.parametrize(
    "answer, expected",
    [("300 K", "300 °F"), ("55 km/h", "55 mph"), ("0.5 pt", "0.5bp"), ("5 kg", "5 lb")],
)
def test_the_same_number_in_another_unit_is_wrong(answer, expected):
    assert wrong_unit(answer, expected) == answer


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("18.3 km", "60,000 feet"),
        ("6 × 10^4 ft", "60,000 feet"),
        ("about 0.18 mm", "0.5bp"),
        ("149 °C", "300 °F"),
        ("10 points", "10pt"),
        ("59 dots per cm", "150 dpi"),
    ],
)
def test_a_conversion_states_the_value(answer, expected):
    assert states_converted(answer, expected)
    assert wrong_unit(answer, expected) is None


def test_conversions_beside_the_value_are_checked():
    assert conversions("60,000 ft (about 18.3 km)", "60,000 feet") == (["18.3 km"], [])
    assert conversions("2 in. (about 2 mm)", "2 in") == ([], ["2 mm"])
    assert conversions("150 DPI (about 381 dots/cm)", "150 dpi") == ([], ["381 dots/cm"])
    assert conversions("0.5 bp (about 0.18 mm)", "0.5bp") == (["0.18 mm"], [])


def test_far_measures_are_no_conversion():
    far = (
        "The line is 0.5 bp wide. "
        + "Other settings are described in the chapter on styles. " * 2
        + "Margins are 2 mm."
    )
    assert conversions(far, "0.5bp") == ([], [])


def test_words_after_a_number_are_no_unit():
    assert measures("the 5 in the list") == []
    assert measures("pick 3 m of cable") != []
    assert [m.unit for m in measures("a 12pt font, 2 in. wide")] == ["pt", "in."]


def test_an_expected_answer_with_several_quantities_converts_none_of_them():
    expected = "PostScript big points (1 bp = 1/72 inch); default line width 0.5bp"
    answer = "Pairs are in big points (1 bp = 1/72 inch) and the default line width is 0.5 bp (about 0.18 mm)."
    assert conversions(answer, expected) == (["0.18 mm"], [])
    assert [m.raw for m in measures("1/72 inch")] == []  # a fraction's denominator is no quantity
