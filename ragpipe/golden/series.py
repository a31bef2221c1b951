"""Which periods a negative may move: a fair negative asks for a value under a sibling period only where the corpus
shows the statement as a series. Either the corpus states the same attribute (the content words of the asking
clause) under two or more periods of the same kind (an acceptance rate for two class years, revenue for Q1 and Q2),
or the period recurs by its nature (a quarter, a fiscal year) and what is stated of it is a measure (an amount, a
share, a count). A one-off event's year (a treaty, a founding, an invention), an act done once, an event's figure
is no series: moved by one, the question reads as a typo of the real fact, and a good system answers it by
correcting the year, not by refusing.
Such a false-premise question is proposed only when asked for (`--kinds false-premise`), as its own kind."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ragpipe.golden.clauses import decided, governing_verb, names_event
from ragpipe.golden.near_miss import YEAR, Candidate, Sentence, Span, qualifiers
from ragpipe.golden.titles import titled_sentence
from ragpipe.reading import content_words

# Periods that recur by their nature (a month recurs too, but "in February 1954" in prose mostly dates an event)
RECURRING = frozenset({"quarter", "q", "fy", "split"})
MEASURES = frozenset({"money", "percent", "count"})  # values that recur by their nature
CADENCE = 0.6  # the share of a series' stated years that must fall on a step for the step to be its cadence
SAME_ATTRIBUTE = 0.6  # the share of the asked attribute's words another period's sentence must state
FALSE_PREMISE = "false-premise"
# Acts done once: the price of a contract awarded, of a company acquired, the name of who was appointed or what was
# opened. Stated under a period, their value is the act's, not a measure of the period.
ONE_OFF_ACTS = frozenset(
    "award sign acquire buy purchase sell found establish open close complete finish begin start launch announce "
    "approve appoint elect build construct inaugurate merge win donate grant raise borrow issue settle commission "
    "demolish rename adopt ratify enact introduce discover invent name hire succeed replace create form".split()
)
_PLACED = re.compile(r"\b(?:at|in|into|to|from|near|on)\s+(?:the\s+)?$", re.I)  # a name after it: where, not who
_DAY_OF_EVENT = re.compile(r"\b(?:on|by)\s+(?:the\s+)?(?:(?:night|morning|evening|afternoon)\s+of\s+)?$", re.I)


@dataclass
class SeriesIndex:
    """The corpus's sentences that state a number under a period, by the period's kind: (their content words less
    the periods', the period as written). Any sentence counts, short or long, not only those a question is made of."""

    by_kind: dict[str, list[tuple[frozenset[str], str]]] = field(default_factory=dict)


def series_index(sentences: Iterable[Sentence], titled: dict[str, Span] | None = None) -> SeriesIndex:
    """`titled`: the period each document's title names, for its sentences that say "in the quarter"."""
    index = SeriesIndex()
    for s in sentences:
        text = s.text.rstrip(".")  # a year that ends the sentence ("... in 2021.") is a period too
        periods = qualifiers(text, ("periods",))
        if not periods and titled and s.doc_id in titled and titled_sentence(text, titled[s.doc_id]):
            periods = [titled[s.doc_id]]
            text += " " + titled[s.doc_id].text
        rest = text
        for q in reversed(periods):
            rest = rest[: q.start] + rest[q.end :]
        if not periods or not re.search(r"\d", rest):
            continue
        words = frozenset(s.words - content_words(" ".join(q.text for q in periods)))
        for q in periods:
            index.by_kind.setdefault(q.kind, []).append((words, q.text))
    return index


def _same(attribute: frozenset[str], words: frozenset[str]) -> bool:
    """The other sentence states most of what is asked: at least two of the attribute's words (its one word when it
    has one) and SAME_ATTRIBUTE of them."""
    shared = len(attribute & words)
    return shared >= min(2, len(attribute)) and shared >= SAME_ATTRIBUTE * len(attribute)


def one_off(c: Candidate) -> bool:
    """A value stated of an event (its subject "the fire", "a breach", or an event its clause names), of an act done
    once (a price, a name, a date of an act in ONE_OFF_ACTS; a named thing's amount set by a decision; where it was
    done), or of the day something happened ("peaked ... on August 11, 2020"; a balance "at March 31, 2022" is a
    period's)."""
    day = c.qualifier.kind == "month" and re.search(r"\d{1,2},? \d{4}|^\d{1,2} ", c.qualifier.text)
    if day and _DAY_OF_EVENT.search(c.sentence.text[: c.qualifier.start]):
        return True
    text = c.sentence.text
    if c.value.kind not in MEASURES and _PLACED.search(text[: c.value.start]):
        return True  # "was stationed at Carrigmore in 1998": where an act took place
    set_once = c.value.kind in ("money", "percent") and decided(text, (c.value.start, c.value.end))
    if set_once or names_event(text, (c.value.start, c.value.end)):
        return True  # "The fire destroyed 40 homes in 1921"; "the Tenancy Fund was increased to £250,000"
    return c.value.kind != "count" and governing_verb(text, c.value.start, c.value.end) in ONE_OFF_ACTS


def cadence(c: Candidate, index: SeriesIndex) -> int:
    """The step of a series of years the corpus states what the figure is of for (its subject, `c.core`, or else
    the asked words; a table's row, its table's columns): 10 where censuses are 1871, 1881 and 1891, in sentences or
    a table (a sibling 1890 would be a typo, 1861 a census that may have been held); 1 where it is not regular."""
    if c.qualifier.kind != "year":
        return 1
    of, year = c.core or c.attribute, int(c.qualifier.text)
    # a table's row: its own columns are the series (another article's "population" is another town's)
    stated = list(c.columns) or [q for words, q in index.by_kind.get("year", []) if _same(of, words)]
    years = {year} | {int(y) for q in stated for y in re.findall(YEAR, q)}
    latest = sorted(years)[-2:]  # the series as it stands now: 2015, 2020, 2023 is no longer five-yearly
    for step in (10, 5, 4, 2):  # most of the stated years on the step, the latest two too (a stray year aside)
        on = [y for y in years if (y - year) % step == 0]
        if len(on) >= 3 and len(on) >= CADENCE * len(years) and all((y - year) % step == 0 for y in latest):
            return step
    return 1


def fair_period(c: Candidate, index: SeriesIndex) -> str:
    """Why moving this candidate's period makes a fair negative ('' when it is a one-off statement): the sibling
    periods the corpus states the same attribute for, or the period's recurring nature and the measure."""
    if one_off(c):
        return ""
    stated = sorted(
        {
            q
            for words, q in index.by_kind.get(c.qualifier.kind, [])
            if q != c.qualifier.text and _same(c.attribute, words)
        }
    )
    if stated:
        shown = ", ".join(repr(q) for q in stated[:3]) + (f" (+{len(stated) - 3} more)" if len(stated) > 3 else "")
        return f"a series: the corpus states the same of {shown}"
    if c.qualifier.kind in RECURRING and c.value.kind in MEASURES:
        return f"a recurring period ({c.qualifier.kind}) and a measure ({c.value.kind}): stated once a period"
    return ""
