"""Which periods a negative may move: a fair negative asks for a value under a sibling period only where the corpus
shows the statement as a series. Either the corpus states the same attribute (the content words of the asking
clause) under two or more periods of the same kind (an acceptance rate for two class years, revenue for Q1 and Q2),
or the period recurs by its nature (a quarter, a fiscal year, a month) and what is stated of it is a measure (an
amount, a share, a count). A one-off event's year (a treaty, a founding, an invention) is no series: moved by one, the
question reads as a typo of the real fact, and a good system answers it by correcting the year, not by refusing.
Such a false-premise question is proposed only when asked for (`--kinds false-premise`), as its own kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ragpipe.golden.near_miss import Candidate

RECURRING = frozenset({"quarter", "q", "fy", "month"})  # periods that recur by their nature
MEASURES = frozenset({"money", "percent", "count"})  # values that recur by their nature
SAME_ATTRIBUTE = 0.6  # the share of content words two attributes have in common to be one series
FALSE_PREMISE = "false-premise"


@dataclass
class SeriesIndex:
    """Period statements of the corpus by the period's kind: (attribute, period as written)."""

    by_kind: dict[str, list[tuple[frozenset[str], str]]] = field(default_factory=dict)


def series_index(cands: Iterable[Candidate]) -> SeriesIndex:
    index = SeriesIndex()
    for c in cands:
        if c.qualifier.group == "periods":
            index.by_kind.setdefault(c.qualifier.kind, []).append((c.attribute, c.qualifier.text))
    return index


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= SAME_ATTRIBUTE


def fair_period(c: Candidate, index: SeriesIndex) -> str:
    """Why moving this candidate's period makes a fair negative ('' when it is a one-off statement): the sibling
    periods the corpus states the same attribute for, or the period's recurring nature and the measure."""
    stated = sorted(
        {
            q
            for attribute, q in index.by_kind.get(c.qualifier.kind, [])
            if q != c.qualifier.text and _same(attribute, c.attribute)
        }
    )
    if stated:
        shown = ", ".join(repr(q) for q in stated[:3]) + (f" (+{len(stated) - 3} more)" if len(stated) > 3 else "")
        return f"a series: the corpus states the same of {shown}"
    if c.qualifier.kind in RECURRING and c.value.kind in MEASURES:
        return f"a recurring period ({c.qualifier.kind}) and a measure ({c.value.kind}): stated once a period"
    return ""
