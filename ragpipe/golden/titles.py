"""A document's own period: the one its title names ("Quarterly Performance Report - Q1 2022/23"), and the sentences
of it that state their figures for that period ("... in the quarter", or nothing of time at all), so that a report's
figures can be asked of another period, and absence knows which periods a report speaks of."""

from __future__ import annotations

import re

from ragpipe.golden.near_miss import _FYEAR, _MONTHS, _ORDINALS, _YEAR, Span, qualifiers

# "the quarter" of a quarterly report, "the year" of an annual one: the period its title names
DEICTIC = re.compile(
    r"\b(?:in|during|for|over|across|throughout)\s+(the\s+(?:quarter|year|financial year|fiscal year|month|"
    r"period|half[- ]year))\b|\b(?:in\s+)?(this\s+(?:quarter|year|month))\b",
    re.I,
)


# A sentence that places its figure in time by itself ("a year earlier", "by March", "will"): not the title's period
_TIMED = re.compile(
    rf"\b(?:earlier|previous|prior|last|first|past|ago|since|until|next|following|later|will|would|should|could|now|"
    rf"currently|so far|to date|"
    rf"may|might|expected|projected|forecast|target|"
    rf"plan(?:s|ned)?|aim|goal|year|years|quarter|month|{'|'.join(_MONTHS)})\b|\d{{4}}",
    re.I,
)


_YEAR_ENDED = re.compile(rf"\byear (?:ended|ending|to) (?:\d{{1,2}} )?({'|'.join(_MONTHS)}),? ({_YEAR})\b", re.I)
_TERM = re.compile(r"\b(?:spring|summer|autumn|winter|michaelmas|lent|easter) (?:half[- ])?term\b", re.I)
_SAID = {"quarter": ("quarter", "q"), "year": ("year", "fy", "split"), "month": ("month",)}


def titled_spans(text: str, period: Span) -> list[Span]:
    """The title's period in a sentence of its document that names no period of its own: where the sentence says
    "in the quarter" (the span to replace), or, where it says nothing of time at all, asked before the question ("In
    Q2 2022/23, how many ...?", an empty span at 0)."""
    if qualifiers(text, ("periods",)):
        return []
    m = DEICTIC.search(text)
    if m:
        at = m.span(1) if m.group(1) else m.span(2)
        said = text[at[0] : at[1]].lower().split()[-1]  # "the quarter" is a quarter's; "the year" a year's
        if said in _SAID and period.kind not in _SAID[said]:
            return []
        return [Span(period.kind, period.text, at[0], at[1], "periods")]
    return [] if _TIMED.search(text) else [Span(period.kind, period.text, 0, 0, "periods")]


def titled_sentence(text: str, period: Span) -> bool:
    """The sentence is said of its document's title period (see _titled)."""
    return bool(titled_spans(text, period))


def document_title(text: str) -> str:
    """A document's first line, and the line after it where the first names no period and the second is a heading
    that does ("Fenmoor Learning Trust" above "Trustees' Annual Report for the year ended 31 August 2022")."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:2]
    if len(lines) < 2 or document_period(lines[0]) is not None:
        return lines[0] if lines else ""
    heading = len(lines[1].split()) <= 15 and not lines[1].endswith((".", ":"))
    return f"{lines[0]}: {lines[1]}" if heading and document_period(lines[1]) is not None else lines[0]


# A one-off thing named with its year: a law or an agreement, an event ("Saule Navigation and Drainage Act 1891",
# "Great Saule Flood of 1887", "Treaty of Ostrava 1856")
_NAMED_ONE_OFF = re.compile(
    r"\b(?:Act|Treaty|Charter|Statute|Ordinance|Edict|Accord|Convention|Agreement|Pact|Decree|Flood|Fire|War|Battle|"
    rf"Siege|Earthquake|Storm|Hurricane|Uprising|Rising|Revolution|Riot|Disaster|Explosion|Eruption)(?: of)? {_YEAR}\b"
)


def named_by_year(title: str) -> bool:
    """The title names a one-off thing by its year ("... Drainage Act 1891", "Great Saule Flood of 1887"): the year is
    part of the name, not a period the document's figures are for, so none of them is asked of another year."""
    return _NAMED_ONE_OFF.search(title) is not None


def termly(title: str) -> bool:
    """The title names a school's term ("Autumn Term 2022"): its year says where the figures stand, but "in the
    term" is no year, so none of its figures is asked of another year."""
    return _TERM.search(title) is not None


def document_period(title: str, text: str = "") -> Span | None:
    """The period a document's title names, a quarter first ("Performance Report - Q3 2022/23 (October-December
    2022)" is the organisation's Q3, not the calendar's fourth), written as in a sentence ("first quarter of 2023");
    a range of three months alone is that calendar quarter ("Report: January-March 2023"); a year that ends on a day
    is its financial year ("for the year ended 31 August 2022" is 2021-22, written as `text` writes one; "ended 31
    December 2022" is 2022). A day is the document's date ("Meeting of 15 March 2023"), not a period its figures
    are for."""
    ended = _YEAR_ENDED.search(title)
    if ended:
        end = int(ended.group(2))
        written = re.search(r"\b20\d\d([/-])\d\d\b", text)
        calendar = ended.group(1).lower() == "december"
        split = f"{end - 1}{written.group(1) if written else '/'}{end % 100:02d}"
        return Span("year", str(end), 0, 4, "periods") if calendar else Span("split", split, 0, len(split), "periods")
    numbered = re.search(rf"\bQuarter ([1-4]),? ({_FYEAR})\b", title)  # "Digest - Quarter 3 2023/24"
    if numbered:
        said = f"Q{numbered.group(1)} {numbered.group(2)}"
        return Span("q", said, 0, len(said), "periods")
    found = qualifiers(title, ("periods",))
    quarter = next((q for q in found if q.kind in ("quarter", "q")), None)
    if quarter is not None and quarter.kind == "quarter":
        ordinal, year = quarter.text.split()[0].lower(), _found_year(quarter.text)
        return Span("quarter", f"{ordinal} quarter of {year}", 0, 0, "periods")
    if quarter is not None:
        return quarter
    months = re.search(rf"\b({'|'.join(_MONTHS)})\s?[\u2013-]\s?({'|'.join(_MONTHS)}),? ({_YEAR})\b", title)
    if months:
        first, last = _MONTHS.index(months.group(1)), _MONTHS.index(months.group(2))
        if first % 3 or last != first + 2:
            return None
        text = f"{_ORDINALS[first // 3]} quarter of {months.group(3)}"
        return Span("quarter", text, 0, len(text), "periods")
    if not found or (found[0].kind == "month" and re.search(r"\d{1,2}\D+\d{4}", found[0].text)):
        return None
    return found[0]


def _found_year(text: str) -> str:
    m = re.search(_FYEAR, text)
    return m.group(0) if m else ""
