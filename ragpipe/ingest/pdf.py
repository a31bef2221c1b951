"""PDF text through pdfium, turned into unstructured elements (titles, narrative text, list items, page numbers).

pdfium (pypdfium2) extracts a page's text ~50-100x faster than pdfminer, which unstructured's `fast` strategy uses.
Its text page gives lines in reading order and, per character, the font size and origin; from those this module
rebuilds what chunking needs:

- a **Title** is a short line set larger than the body text (the most common size, by characters, in the document);
- a **ListItem** starts with a bullet or an enumerator ("1.", "a)", "(iv)");
- a paragraph ends at a vertical gap larger than the page's usual line spacing, at a change of font size, or after a
  short line that ends a sentence; its lines are joined with one space, and a word hyphenated at a line end is
  joined back (pdfium marks those hyphens);
- a bare number (or roman numeral) alone on the first or last line of a page is the printed page number: it is left
  out of the text (every element carries `metadata.page_number`, 1-based).

Tables are not detected: their cells come out as lines of text. Scanned pages (no text layer) yield nothing, which
parse_file reports as a PDF that needs OCR.
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as raw
from unstructured.documents.elements import (
    ElementMetadata,
    ListItem,
    NarrativeText,
    Text,
    Title,
    assign_and_map_hash_ids,
)

IMPL_VERSION = "1"  # bump when this engine yields other elements or text (re-parses the PDFs only)

TITLE_SIZE_RATIO = 1.15  # a line this much larger than the body size is a heading
TITLE_MAX_CHARS = 200
PARAGRAPH_GAP_RATIO = 1.45  # a vertical gap this many times the usual line spacing ends a paragraph
SHORT_LINE_RATIO = 0.75
MAX_UNLOADABLE_PAGES = 10  # this many pages in a row that pdfium cannot load: the file is damaged, not a page  # a line shorter than this share of the page's long lines may end a paragraph

_LINE_RE = re.compile(r"[^\r\n]*")
_BULLET_RE = re.compile(
    r"^(?:[\u2022\u25e6\u25aa\u25cf\u2023\u2043\u2219\u00b7*\u2013\u2014-]\s+|\(?(?:\d{1,3}|[a-zA-Z]|[ivxlc]{1,5})[.)]\s+)"
)
_PAGE_NUMBER_RE = re.compile(r"^(?:\d{1,4}|[ivxlcdm]{1,7}|[IVXLCDM]{1,7})$")
_SENTENCE_END = (".", "!", "?", ":", ";")
_SOFT_HYPHENS = ("\ufffe", "\x02", "\u00ad")  # pdfium's marks for a hyphen that breaks a word at a line end


@dataclass(frozen=True)
class Line:
    page: int  # 1-based
    text: str
    size: float  # font size of its first character (points)
    x: float
    y: float  # baseline, from the page bottom
    hyphenated: bool  # ends with a word broken by a hyphen


class PdfError(Exception):
    """The file is not a PDF pdfium can open (damaged, encrypted with a password, not a PDF)."""


def read_lines(path: Path) -> list[Line]:
    """Every non-empty text line of the document, in pdfium's reading order, with its size and position."""
    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise PdfError(f"pdfium cannot open it ({exc})") from None
    lines: list[Line] = []
    x, y = ctypes.c_double(), ctypes.c_double()
    unloadable: list[int] = []  # consecutive pages pdfium could not load
    try:
        for index in range(len(doc)):
            try:
                page = doc[index]
            except pdfium.PdfiumError:
                unloadable.append(index + 1)
                if len(unloadable) >= MAX_UNLOADABLE_PAGES:
                    raise PdfError(
                        f"pages {unloadable[0]}-{unloadable[-1]} cannot be loaded (the file claims {len(doc)} pages)"
                    ) from None
                continue  # one damaged page is skipped; the rest of the document is kept
            unloadable.clear()
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
                aligned = len(text) == textpage.count_chars()  # char i of the page is text[i]
                for m in _LINE_RE.finditer(text):
                    line = m.group(0)
                    stripped = line.strip()
                    if not stripped:
                        continue
                    first = m.start() + (len(line) - len(line.lstrip()))
                    size, px, py = 0.0, 0.0, 0.0
                    if aligned:
                        size = float(raw.FPDFText_GetFontSize(textpage.raw, first))
                        if raw.FPDFText_GetCharOrigin(textpage.raw, first, x, y):
                            px, py = x.value, y.value
                    hyphenated = stripped.endswith(_SOFT_HYPHENS)
                    for mark in _SOFT_HYPHENS:
                        stripped = stripped.replace(mark, "")
                    if stripped:
                        lines.append(Line(index + 1, stripped, round(size, 1), px, py, hyphenated))
            finally:
                textpage.close()
                page.close()
    finally:
        doc.close()
    return lines


def _body_size(lines: list[Line]) -> float:
    by_chars: Counter[float] = Counter()
    for ln in lines:
        by_chars[ln.size] += len(ln.text)
    return by_chars.most_common(1)[0][0] if by_chars else 0.0


def _drop_page_numbers(lines: list[Line]) -> list[Line]:
    """Leave out a bare number that is the first or last line of its page (the printed page number)."""
    edges: set[int] = set()
    start = 0
    for i in range(1, len(lines) + 1):
        if i == len(lines) or lines[i].page != lines[start].page:
            edges.update({start, i - 1})
            start = i
    return [ln for i, ln in enumerate(lines) if not (i in edges and _PAGE_NUMBER_RE.match(ln.text))]


def _spacing(lines: list[Line]) -> dict[float, float]:
    """Per font size, the usual distance between consecutive lines of a paragraph: the lower quartile of the gaps
    between consecutive lines of that size on one page (most consecutive lines are inside a paragraph); with few
    lines, the smallest gap."""
    gaps: dict[float, list[float]] = {}
    for a, b in zip(lines, lines[1:]):
        if a.page == b.page and a.size == b.size and 0 < a.y - b.y < 100:
            gaps.setdefault(a.size, []).append(a.y - b.y)
    return {size: sorted(g)[len(g) // 4 if len(g) >= 8 else 0] for size, g in gaps.items()}


def _full_lengths(lines: list[Line]) -> dict[int, float]:
    """Per page, the length of a full line of text (90th percentile), to tell a paragraph's short last line."""
    by_page: dict[int, list[int]] = {}
    for ln in lines:
        by_page.setdefault(ln.page, []).append(len(ln.text))
    return {page: float(sorted(n)[int(0.9 * (len(n) - 1))]) for page, n in by_page.items()}


def _is_title(ln: Line, body: float) -> bool:
    return (
        body > 0
        and ln.size >= body * TITLE_SIZE_RATIO
        and len(ln.text) <= TITLE_MAX_CHARS
        and any(c.isalpha() for c in ln.text)
    )


def _breaks(prev: Line, ln: Line, spacing: dict[float, float], full: dict[int, float]) -> bool:
    """Does `ln` start a new element after `prev`?"""
    if ln.page != prev.page or ln.size != prev.size:
        return True
    if _BULLET_RE.match(ln.text):
        return True
    usual, gap = spacing.get(ln.size, 0.0), prev.y - ln.y
    if usual and (gap > usual * PARAGRAPH_GAP_RATIO or gap < 0):
        return True
    short = len(prev.text) < full[ln.page] * SHORT_LINE_RATIO
    return not prev.hyphenated and prev.text.endswith(_SENTENCE_END) and short


def _join(lines: list[Line]) -> str:
    parts: list[str] = []
    for i, ln in enumerate(lines):
        parts.append(ln.text)
        if i + 1 < len(lines) and not ln.hyphenated:
            parts.append(" ")
    return "".join(parts)


def _element(kind: str, text: str, page: int) -> Any:
    cls = {"title": Title, "list": ListItem}.get(kind)
    if cls is None:
        words = text.split()
        cls = NarrativeText if len(words) >= 6 and any(c.islower() for c in text) else Text
    return cls(text=text, metadata=ElementMetadata(page_number=page))


def partition_pdfium(path: Path) -> list[Any]:
    """unstructured elements for a PDF, from pdfium's text (see the module docstring for the rules)."""
    lines = _drop_page_numbers(read_lines(path))
    if not lines:
        return []
    body = _body_size(lines)
    spacing, full = _spacing(lines), _full_lengths(lines)
    groups: list[list[Line]] = [[lines[0]]]
    for prev, ln in zip(lines, lines[1:]):
        if _breaks(prev, ln, spacing, full):
            groups.append([ln])
        else:
            groups[-1].append(ln)
    elements = []
    for group in groups:
        first = group[0]
        kind = "title" if _is_title(first, body) else "list" if _BULLET_RE.match(first.text) else "text"
        text = _join(group)
        if text.strip():
            elements.append(_element(kind, text, first.page))
    return assign_and_map_hash_ids(elements)  # ids from text, page and position, as unstructured's partitioners give
