"""Near-miss tests read from a report's table of measures: the row "Emergency attendances | 141,250 | 149,830" under
the header "Measure | 2021/22 | 2022/23" states its measure as a series, so a period before or after the table's is
a fair negative ("In 2020/21, how many emergency attendances were there?"), with the row as the trap. The table is
read from the parser's own cells (unstructured's `text_as_html`), never guessed from a flattened line. Only tables
whose rows are measures (the first header cell says so: "Measure", "Indicator", a unit such as "£m", or nothing),
whose period columns are periods alone, and whose row names read as a measure (no verb, no "our", no bracket, not a
name) are read: a table read wrongly would ask a wrong question, so one that does not read cleanly asks nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Iterable

from ragpipe.golden.asking import _NAMES
from ragpipe.golden.near_miss import Candidate, Sentence, Span, qualifiers
from ragpipe.golden.prose import english
from ragpipe.golden.subjects import _REFERRING
from ragpipe.reading import content_words

ROWS_ASKED = 3  # rows of one table asked at most: a reviewer reads a sample of it, not the whole table again
# what the first header cell of a table with a period per row says
PERIOD_HEADERS = frozenset({"year", "years", "census", "census year", "season", "edition", "financial year"})
# what the first header cell of a table of measures says (its rows are measures, its columns periods)
MEASURE_HEADERS = frozenset({"", "measure", "measures", "indicator", "indicators", "metric", "metrics", "key figures"})
_MONEY_HEADER = re.compile(
    r"^(?:[$\u20ac\u00a3]\s?(?:m|bn|k|000|millions?|billions?|thousands?)|\([$\u20ac\u00a3]000\))$"
)
_CELL = re.compile(r"^[-\u2212+]?[$\u20ac\u00a3]?\d[\d,]*(?:\.\d+)?(?:%|m|bn|k|\s(?:million|billion))?$", re.I)
# what a count named in the singular counts ("Population", "Attendance"): a count of what is counted
MEASURE_NOUNS = frozenset(
    "population attendance headcount output production circulation membership turnover capacity traffic reach "
    "catch intake throughput ridership enrolment enrollment tonnage volume usage footfall patronage workforce "
    "yield harvest size".split()
)
# what a row of money names: a measure of money, not a part of a total ("Tractors") the table's header would name
MONEY_WORDS = frozenset(
    "sales revenue revenues income cost costs expenditure spend spending profit profits loss losses ebitda earnings "
    "budget funding grant grants subsidy reserves surplus deficit debt capital investment dividend dividends price "
    "prices fee fees eps margin cash turnover pay salary wages precept charge charges value receipts deposits assets "
    "takings donations rent rents".split()
)


@dataclass(frozen=True)
class Table:
    doc_id: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


class _Cells(HTMLParser):
    """The rows of an HTML table as lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_startendtag(self, tag: str, attrs: object) -> None:
        if tag in ("td", "th") and self.rows:
            self.rows[-1].append("")  # "<th/>": an empty cell

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables_of(doc_id: str, elements_json: str) -> list[Table]:
    """The tables a document's parse kept with their cells (`text_as_html`); none where it kept none."""
    try:
        elements = json.loads(elements_json).get("elements", [])
    except (ValueError, AttributeError):
        return []
    out = []
    for e in elements:
        html = (e.get("metadata") or {}).get("text_as_html") if e.get("type") == "Table" else None
        if html:
            cells = _Cells()
            cells.feed(html)
            if len(cells.rows) > 1:
                out.append(Table(doc_id, tuple(cells.rows[0]), tuple(tuple(r) for r in cells.rows[1:])))
    return out


def measure_columns(table: Table) -> list[tuple[int, Span]]:
    """The period columns of a table of measures, with their places: the first run of header cells that are a period
    and nothing else, two at least, of one kind ("| Measure | Target | Q2 2021-22 | Q2 2022-23 | Status |"), or []
    when the table is not one. Its first header cell names measures ("Measure"), a unit of money ("£m"), nothing,
    or kinds of a counted thing ("Incident type": its rows are counts of each kind)."""
    head = table.header[0].strip().lower() if table.header else "x"
    if head not in MEASURE_HEADERS and not _MONEY_HEADER.match(head) and head.split()[-1:] != ["type"]:
        return []
    periods: list[tuple[int, Span]] = []
    for i, cell in enumerate(table.header[1:], 1):
        found = qualifiers(cell, ("periods",))
        if len(found) == 1 and found[0].text == cell.strip() and (not periods or found[0].kind == periods[0][1].kind):
            if periods and periods[-1][0] != i - 1:
                break  # a second run: the first is the table's
            periods.append((i, found[0]))
        elif periods:
            break
    return periods if len(periods) >= 2 else []


def period_rows(table: Table) -> tuple[list[tuple[int, Span]], list[int]]:
    """A table with a period per row ("| Census year | Population |", "| Season | Skier days |"): the rows whose first
    cell is a period alone, with their places, and the columns that have a header (whether it reads as a measure is
    read with its values); ([], []) when the table is not one."""
    head = table.header[0].strip().lower() if table.header else ""
    if head not in PERIOD_HEADERS:
        return [], []
    rows = []
    for i, row in enumerate(table.rows):
        found = qualifiers(row[0], ("periods",)) if row else []
        if len(found) == 1 and found[0].text == row[0].strip():
            rows.append((i, found[0]))
    columns = [i for i, h in enumerate(table.header[1:], 1) if _plain(h)]
    return (rows, columns) if len(rows) >= 2 and columns else ([], [])


def _plain(header: str) -> str:
    """A column's measure without the word that says it was estimated ("Estimated visitors": visitors)."""
    return re.sub(r"^(?:estimated|approximate|approx\.)\s+", "", header.strip(), flags=re.I)


def _reads_as_measure(label: str, kind: str) -> bool:
    """A short noun phrase that names a measure on its own, or things counted and what was done to them ("Planning
    applications decided", asked "how many ... were decided?"): no other verb ("Money saved or recovered"), nothing
    pointing back ("Visits to our visitor centres"), no bracket, comma or footnote mark ("Peatland restored
    (hectares)", "Weekly reach, ABS Radio Aldmoor", "EPS*"), not a name alone, five words at most; an amount of money names what it is ("Net sales", "Admissions
    income"; not "Tractors", a segment of a total the header names)."""
    if not label or len(label.split()) > 5 or re.search(r"[()\[\]:;,/*.\u2014\u2020]|\d|^[-\u2013]", label):
        return False
    if kind == "money" and not set(re.findall(r"[a-z]+", label.lower())) & MONEY_WORDS:
        return False
    doc = _parsed(label)
    if kind == "count" and done_to(label):
        return True  # "Noise complaints received": asked "how many noise complaints were received?"
    if kind == "count" and not _plural(doc) and doc[-1].lower_ not in MEASURE_NOUNS:
        return False  # "Container", "Weekday": a count of what? ("Population", "Births" say it)
    if kind == "percent" and _plural(doc):
        return False  # "Heavy vehicles" at 27%: a share of what?
    if any(t.pos_ in ("VERB", "AUX", "PRON") or t.lower_ in _REFERRING for t in doc):
        return False
    if doc[0].pos_ == "ADP" or doc[0].lower_ in ("all", "other", "others", "remaining"):
        return False  # "Within four hours" (of what?), "All fires", "Other incidents": a row read beside the others
    named = english()(label)
    if any(e.start == 0 and e.end == len(named) and e.label_ in _NAMES for e in named.ents):
        return False  # "Thornby": a row per place, the measure is elsewhere (read in its own case, as written)
    return any(t.pos_ == "NOUN" for t in doc)


def done_to(label: str) -> tuple[str, str] | None:
    """(things, participle) of a row that counts things something was done to ("Noise complaints received",
    "Prosecutions concluded", "Defects repaired"): plural nouns, then one past participle; else None."""
    doc = _parsed(label)
    if len(doc) < 2 or doc[-1].pos_ != "VERB" or not (doc[-1].tag_ == "VBN" or doc[-1].lower_.endswith("ed")):
        return None
    things = doc[:-1]
    if things[-1].tag_ != "NNS" or any(t.pos_ not in ("NOUN", "PROPN", "ADJ") for t in things):
        return None
    return things.text, doc[-1].text


def _parsed(label: str) -> Any:
    """A row's or a column's name parsed as the noun phrase it is (a header's capital is no name's: "Population")."""
    return english()(label if label[:2].isupper() else label[:1].lower() + label[1:])


def _plural(doc: Any) -> bool:
    """The phrase names things counted ("Births", "e-book and e-audio loans": the last noun where nothing follows
    it; "Pupils in school groups": the head)."""
    head = next((t for t in doc if t.dep_ == "ROOT"), doc[-1])
    joined = not any(t.pos_ == "ADP" for t in doc)
    return head.tag_ in ("NNS", "NNPS") or (joined and doc[-1].tag_ in ("NNS", "NNPS"))


# a row that names an amount of money ("Non-pay costs", "Capital spending", "Savings delivered") under a header that
# names no currency: its plain numbers are money, asked "what were", never "how many"
_MONEY_LABEL = re.compile(
    r"\b(?:costs?|spending|spend|expenditure|income|revenue|budget|outturn|pay|payroll|savings|reserves?|grants?|"
    r"fees|prices?|funding)\b",
    re.I,
)


def _kind(cell: str, header: str, label: str = "") -> str:
    if cell.endswith("%"):
        return "percent"
    money = _MONEY_HEADER.match(header.strip().lower()) or _MONEY_LABEL.search(label)
    return "money" if re.search(r"[$\u20ac\u00a3]", cell) or money else "count"


def row_candidates(
    tables: Iterable[Table], chunks: dict[str, list[tuple[str, str]]], titles: dict[str, str] | None = None
) -> list[Candidate]:
    """One candidate per measure of each table: a row of a table of measures (its first period column's value and
    period as the trap's), or a column of a table with a period per row, stated of its document's title (its last
    period's value as the trap's: a period after the table is asked first). The row's cells are the trap's sentence,
    located verbatim in a chunk of its document (a row no chunk holds is skipped)."""
    out = []
    for table in tables:
        periods = measure_columns(table)
        if periods:
            out += _row(table, chunks, periods[0][0], periods[0][1], [p.text for _, p in periods])
        rows, columns = period_rows(table)
        title = re.sub(r"^#+\s*|\s*\([^)]*\)$", "", (titles or {}).get(table.doc_id, "").strip())  # "(ski resort)"
        if not rows or not title:
            continue
        last, period = max(rows, key=lambda r: r[1].text)
        for col in columns:
            asked = _column(table, chunks, last, col, period, title, [p.text for _, p in rows])
            if asked:  # the table's first measure: the others are mostly its parts ("cars", "coaches" of traffic)
                out += asked
                break
    return out


def _row(
    table: Table, chunks: dict[str, list[tuple[str, str]]], at: int, period: Span, stated: list[str]
) -> list[Candidate]:
    out: list[Candidate] = []
    for row in table.rows:
        if len(out) == ROWS_ASKED:
            break
        if len(row) <= at + len(stated) - 1 or not all(_CELL.match(c) for c in row[at : at + len(stated)]):
            continue
        kind = _kind(row[at], table.header[0], row[0])
        typed = table.header[0].strip().lower().endswith("type")
        if not _reads_as_measure(row[0], kind) or (typed and kind != "count"):
            continue
        c = _candidate(table, chunks, row, at, kind, period, row[0], "", stated)
        out += [c] if c else []
    return out


def _column(
    table: Table,
    chunks: dict[str, list[tuple[str, str]]],
    last: int,
    col: int,
    period: Span,
    title: str,
    stated: list[str],
) -> list[Candidate]:
    row = table.rows[last]
    if len(row) <= col or not _CELL.match(row[col]):
        return []
    kind = _kind(row[col], table.header[col])
    if not _reads_as_measure(_plain(table.header[col]), kind) or done_to(_plain(table.header[col])):
        return []  # "Visitors counted" of an article's subject: no template asks it
    c = _candidate(table, chunks, row, col, kind, period, _plain(table.header[col]), title, stated)
    return [c] if c else []


def _candidate(
    table: Table,
    chunks: dict[str, list[tuple[str, str]]],
    row: tuple[str, ...],
    at: int,
    kind: str,
    period: Span,
    label: str,
    of: str,
    stated: list[str],
) -> Candidate | None:
    text = " ".join(row)
    chunk = next((cid for cid, t in chunks.get(table.doc_id, []) if text in t), None)
    if chunk is None:
        return None
    start = len(" ".join(row[:at])) + 1
    value = Span(kind, row[at], start, start + len(row[at]))
    words = frozenset(content_words(f"{label} {of}"))
    return Candidate(
        Sentence(chunk, table.doc_id, text, frozenset(content_words(text))),
        value,
        Span(period.kind, period.text, 0, 0, "periods"),
        words,
        core=frozenset(content_words(label)),
        label=label,
        columns=tuple(stated),
        of=of,
    )


def row_question(c: Candidate, period: str, named: bool = False) -> str:
    """ "In 2020-21, what was car park income?"; a count of a plural measure asks how many ("In 2020-21, how many
    volunteer days were there?"); a measure of an article's subject names it ("In 2021, what was the population of
    Skarvoy?", "In 2024, how many members did Kelverton Philosophical Society have?"). The measure's first word keeps
    its capital where it is an acronym ("NHS income") or `named` (the corpus writes it as a name:
    Corpus.written_as_name)."""
    keep = named or c.label[1:2].isupper()
    label = c.label if keep else c.label[:1].lower() + c.label[1:]
    done = done_to(label) if c.value.kind == "count" and not c.of else None
    if done:
        return f"In {period}, how many {done[0]} were {done[1]}?"
    plural = _plural(_parsed(c.label))
    if plural and c.value.kind == "count":
        return (
            f"In {period}, how many {label} did {c.of} have?" if c.of else f"In {period}, how many {label} were there?"
        )
    be = "were" if plural else "was"
    return f"In {period}, what {be} the {label}{f' of {c.of}' if c.of else ''}?"
