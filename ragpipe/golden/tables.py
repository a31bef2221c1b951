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
from typing import Iterable

from ragpipe.golden.near_miss import Candidate, Sentence, Span, qualifiers
from ragpipe.golden.prose import english
from ragpipe.reading import content_words

# what the first header cell of a table of measures says (its rows are measures, its columns periods)
MEASURE_HEADERS = frozenset({"", "measure", "measures", "indicator", "indicators", "metric", "metrics", "key figures"})
_MONEY_HEADER = re.compile(
    r"^(?:[$\u20ac\u00a3]\s?(?:m|bn|k|000|millions?|billions?|thousands?)|\([$\u20ac\u00a3]000\))$"
)
_CELL = re.compile(r"^[-\u2212+]?[$\u20ac\u00a3]?\d[\d,]*(?:\.\d+)?(?:%|m|bn|k|\s(?:million|billion))?$", re.I)
# what a row of money names: a measure of money, not a part of a total ("Tractors") the table's header would name
MONEY_WORDS = frozenset(
    "sales revenue revenues income cost costs expenditure spend spending profit profits loss losses ebitda earnings "
    "budget funding grant grants subsidy reserves surplus deficit debt capital investment dividend dividends price "
    "prices fee fees eps margin cash turnover pay salary wages precept charge charges value".split()
)
_NAMES = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "PRODUCT"}  # a row per named thing: not a measure
_POINTING = {"our", "its", "their", "this", "these", "those", "his", "her", "my", "we"}


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


def measure_columns(table: Table) -> list[Span]:
    """The period columns of a table of measures (the header cells after the first that are a period and nothing
    else, two at least, of one kind), or [] when it is not one."""
    head = table.header[0].strip().lower() if table.header else "x"
    if head not in MEASURE_HEADERS and not _MONEY_HEADER.match(head):
        return []
    periods: list[Span] = []
    for cell in table.header[1:]:
        found = qualifiers(cell, ("periods",))
        if len(found) != 1 or found[0].text != cell.strip() or (periods and found[0].kind != periods[0].kind):
            break
        periods.append(found[0])
    return periods if len(periods) >= 2 else []


def _reads_as_measure(label: str, kind: str) -> bool:
    """A short noun phrase that names a measure on its own: no verb ("Planning applications decided"), nothing
    pointing back ("Visits to our visitor centres"), no bracket or footnote mark ("Peatland restored (hectares)",
    "EPS*"), not a name alone, five words at most; an amount of money names what it is ("Net sales", "Admissions
    income"; not "Tractors", a segment of a total the header names)."""
    if not label or len(label.split()) > 5 or re.search(r"[()\[\]:;/*\u2014\u2020]|\d|^[-\u2013]", label):
        return False
    if kind == "money" and not set(re.findall(r"[a-z]+", label.lower())) & MONEY_WORDS:
        return False
    doc = english()(label)
    if any(t.pos_ in ("VERB", "AUX", "PRON") or t.lower_ in _POINTING for t in doc):
        return False
    if any(e.start == 0 and e.end == len(doc) and e.label_ in _NAMES for e in doc.ents):
        return False  # "Thornby": a row per place, the measure is elsewhere
    return any(t.pos_ == "NOUN" for t in doc)


def _kind(cell: str, header: str) -> str:
    if re.search(r"[$\u20ac\u00a3]", cell) or _MONEY_HEADER.match(header.strip().lower()):
        return "money"
    return "percent" if cell.endswith("%") else "count"


def row_candidates(tables: Iterable[Table], chunks: dict[str, list[tuple[str, str]]]) -> list[Candidate]:
    """One candidate per row of each table of measures: the row's cells as its sentence, located verbatim in a chunk
    of its document (a row no chunk holds is skipped), the first period column's value and period as the trap's, the
    row's name as what is asked."""
    out = []
    for table in tables:
        periods = measure_columns(table)
        for row in table.rows if periods else ():
            cells = row[: len(periods) + 1]
            if len(cells) <= len(periods) or not all(_CELL.match(c) for c in cells[1:]):
                continue
            kind = _kind(cells[1], table.header[0])
            if not _reads_as_measure(cells[0], kind):
                continue
            text = " ".join(row)
            chunk = next((cid for cid, t in chunks.get(table.doc_id, []) if text in t), None)
            if chunk is None:
                continue
            at = len(cells[0]) + 1
            value = Span(kind, cells[1], at, at + len(cells[1]))
            words = frozenset(content_words(cells[0]))
            out.append(
                Candidate(
                    Sentence(chunk, table.doc_id, text, frozenset(content_words(text))),
                    value,
                    Span(periods[0].kind, periods[0].text, 0, 0, "periods"),
                    words,
                    core=words,
                    label=cells[0],
                    columns=tuple(p.text for p in periods),
                )
            )
    return out


def row_question(c: Candidate, period: str, named: bool = False) -> str:
    """ "In 2020-21, what was car park income?"; a count of a plural measure asks how many ("In 2020-21, how many
    volunteer days were there?"). The measure's first word keeps its capital where it is an acronym ("NHS income")
    or `named` (the corpus writes it as a name: Corpus.written_as_name)."""
    doc = english()(c.label)
    keep = named or doc[0].text[1:].isupper() or doc[0].text.isupper()
    label = c.label if keep else c.label[:1].lower() + c.label[1:]
    head = next((t for t in doc if t.dep_ == "ROOT"), doc[-1])
    joined = not any(t.pos_ == "ADP" for t in doc)  # "e-book and e-audio loans": the last noun says how many
    plural = head.tag_ in ("NNS", "NNPS") or (joined and doc[-1].tag_ in ("NNS", "NNPS"))
    if plural and c.value.kind == "count":
        return f"In {period}, how many {label} were there?"
    return f"In {period}, what {'were' if plural else 'was'} {label}?"
