"""Which template a period's question of a prose sentence fills (ragpipe.golden.template): a measure's level, things
counted in a passive, an organisation's output; any other statement gives none and is not proposed by default."""

from __future__ import annotations

import pytest

from ragpipe.golden import TEMPLATES, template


def _shape(text: str, value: str) -> str:
    start = text.index(value)
    return template(text, (start, start + len(value)))


@pytest.mark.parametrize(
    "text, value, expected",
    [
        ("Capital spending was £2.1 million, mainly on refurbishing the site.", "£2.1 million", "level"),
        ("The general reserve rose to £8.6 million (4.0% of the budget).", "£8.6 million", "level"),
        ("The number of pages printed fell by about 4%.", "about 4%", "level"),
        ("The fast-track physiotherapy scheme had 87 referrals in the year.", "87 referrals", "level"),
        ("Tuition, room and board for 2023-24 were set at $79,460.", "$79,460", "level"),
        ("Fifty older vehicles were withdrawn and 61 entered service, taking the fleet to 409.", "61", ""),
        ("In the year 50 older vehicles were withdrawn.", "50 older vehicles", "count"),
        ("The £14,250 in surcharges was paid into the Community Fund.", "£14,250", "count"),
        ("The company shipped 1,184 robot arms in fiscal year 2023.", "1,184 robot arms", "output"),
        ("ABS Radio Aldmoor broadcast 6,420 hours of live local output.", "6,420 hours", "output"),
        ("Online, ABS Local published 21,400 news stories, about 59 a day.", "21,400 news stories", "output"),
    ],
)
def test_a_measure_a_passive_count_and_an_organisations_output_fill_a_template(
    text: str, value: str, expected: str
) -> None:
    assert _shape(text, value) == expected
    assert not expected or expected in TEMPLATES


@pytest.mark.parametrize(
    "text, value",
    [
        ("Ground movement in the clay soils caused 1,402 bursts in the quarter.", "1,402 bursts"),  # a cause
        ("Trading Standards officers removed 3,400 heaters from sale after broadcast.", "3,400 heaters"),  # people
        ("The Studio's Christmas show sold out all 30 performances.", "30 performances"),  # an event's
        ("The footway budget was reduced by £0.6m to pay for the bridge.", "£0.6m"),  # a decision
        ("Across the year the Main House was 58% full.", "58%"),  # inside another phrase
        ("Only 78% were answered within ten working days.", "78%"),  # a value subject of an active verb
        ("The network grew to 1,243 km of adopted road.", "1,243 km"),  # what the value is of: not "the network"
        ("Online and app reports rose to 74% of the total.", "74%"),
    ],
)
def test_what_a_cause_people_or_an_event_did_fills_none(text: str, value: str) -> None:
    assert _shape(text, value) == ""


def test_a_value_the_parse_does_not_find_fills_none() -> None:
    assert template("Revenue was $4 million.", (100, 104)) == ""
