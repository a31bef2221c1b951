"""Chunk parsed documents with unstructured's chunkers and give every chunk a deterministic id and exact span."""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable

from ragpipe.settings import ChunkerSettings

Spans = list[tuple[int, int]]  # (start, end) character offsets into the document text

IMPL_VERSION = "1"  # bump when chunking produces other chunks (part of `chunks`' code version)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    seq: int
    text: str
    start_char: int
    end_char: int
    section: str | None
    page: int | None
    content_hash: str


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id_for(doc_id: str, text: str, occurrence: int) -> str:
    """Content-addressed id: the same text in the same document gets the same id on every run and machine.

    `occurrence` tells apart identical chunks within one document. Edits elsewhere in a document do not
    move an id; an id changes only when the chunk's own text (or its repeat index) changes.
    """
    key = f"{doc_id}\x00{occurrence}\x00{text}".encode("utf-8")
    return "ch_" + hashlib.sha256(key).hexdigest()[:16]


def run_chunker(elements: list[Any], cfg: ChunkerSettings) -> list[Any]:
    if cfg.strategy == "by_title":
        from unstructured.chunking.title import chunk_by_title

        return chunk_by_title(
            elements,
            max_characters=cfg.max_characters,
            new_after_n_chars=min(cfg.new_after_n_chars, cfg.max_characters),
            overlap=cfg.overlap,
            combine_text_under_n_chars=min(cfg.combine_text_under_n_chars, cfg.max_characters),
        )
    from unstructured.chunking.basic import chunk_elements

    return chunk_elements(
        elements,
        max_characters=cfg.max_characters,
        new_after_n_chars=min(cfg.new_after_n_chars, cfg.max_characters),
        overlap=cfg.overlap,
    )


def _locate(doc_text: str, piece: str, cursor: int) -> tuple[int, int] | None:
    """Find `piece` in the document at or after `cursor`, tolerating whitespace differences."""
    at = doc_text.find(piece, cursor)
    if at < 0:
        at = doc_text.find(piece)
    if at >= 0:
        return at, at + len(piece)
    words = piece.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    m = pattern.search(doc_text, cursor) or pattern.search(doc_text)
    return (m.start(), m.end()) if m else None


def _sentence_spans(doc_text: str, elements: list[Any], offsets: list[tuple[int, int]], cfg: ChunkerSettings) -> Spans:
    return sentence_pack_spans(doc_text, cfg.max_characters, cfg.new_after_n_chars, cfg.overlap)


def chunk_document(
    doc_id: str,
    doc_text: str,
    elements: list[Any],
    offsets: list[tuple[int, int]],
    cfg: ChunkerSettings,
) -> list[Chunk]:
    """Chunk one document. Every chunk's text is exactly doc_text[start_char:end_char]."""
    spans = CHUNKERS[cfg.strategy](doc_text, elements, offsets, cfg)
    starts = [s for s, _ in offsets]
    title_positions = [(s, e.text) for (s, _), e in zip(offsets, elements) if getattr(e, "category", "") == "Title"]
    title_starts = [s for s, _ in title_positions]
    pages = [getattr(e.metadata, "page_number", None) for e in elements]

    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for start, end in spans:
        text = doc_text[start:end]
        elem_idx = max(0, bisect.bisect_right(starts, start) - 1)
        t_idx = bisect.bisect_right(title_starts, start) - 1
        # The section is the title in force where the chunk starts.
        section = title_positions[t_idx][1] if t_idx >= 0 else None
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        chunks.append(
            Chunk(
                chunk_id=chunk_id_for(doc_id, text, occurrence),
                doc_id=doc_id,
                seq=len(chunks),
                text=text,
                start_char=start,
                end_char=end,
                section=section,
                page=pages[elem_idx] if elements else None,
                content_hash=content_hash(text),
            )
        )
    return chunks


def _element_chunk_spans(
    doc_text: str, elements: list[Any], offsets: list[tuple[int, int]], cfg: ChunkerSettings
) -> list[tuple[int, int]]:
    """Spans of unstructured's chunks (by_title / basic) located back in the document text."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for raw in run_chunker(elements, cfg):
        piece = (raw.text or "").strip()
        if not piece:
            continue
        span = _locate(doc_text, piece, cursor)
        if span is None:
            # A chunker that rewrote text beyond whitespace: fall back to the span of its source elements.
            span = _span_of_orig_elements(raw, elements, offsets) or (cursor, min(len(doc_text), cursor + len(piece)))
        spans.append(span)
        cursor = span[0] + 1
    return spans


# A sentence ends at . ! ? (or their CJK forms), optionally followed by closing quotes/brackets, before whitespace;
# a line break always ends a unit (titles, list items and table rows carry no full stop).
_CLOSERS = "\"'\u201d\u2019)]"
_UNIT_BREAK = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])[\"'\u201d\u2019)\]]*\s+|\s*\n\s*")


def _units(doc_text: str, max_chars: int) -> list[tuple[int, int]]:
    """Sentence (or line) spans without surrounding whitespace; a unit over max_chars is cut at spaces, then hard."""
    units: list[tuple[int, int]] = []
    pos = 0
    for m in _UNIT_BREAK.finditer(doc_text):
        closers = len(m.group(0)) - len(m.group(0).lstrip(_CLOSERS))  # a closing quote belongs to its sentence
        _add_unit(doc_text, pos, m.start() + closers, max_chars, units)
        pos = m.end()
    _add_unit(doc_text, pos, len(doc_text), max_chars, units)
    return units


def _add_unit(doc_text: str, start: int, end: int, max_chars: int, out: list[tuple[int, int]]) -> None:
    while start < end and doc_text[start].isspace():
        start += 1
    while end > start and doc_text[end - 1].isspace():
        end -= 1
    while end - start > max_chars:
        cut = doc_text.rfind(" ", start + 1, start + max_chars + 1)
        piece_end = cut if cut > start else start + max_chars
        _add_unit(doc_text, start, piece_end, max_chars, out)
        start = piece_end
        while start < end and doc_text[start].isspace():
            start += 1
    if end > start:
        out.append((start, end))


def sentence_pack_spans(doc_text: str, max_chars: int, new_after: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Pack whole sentences into chunks of at most max_chars, across element boundaries (strategy "sentences").

    Greedy: a chunk takes the next sentence while it stays within max_chars and is shorter than new_after; a
    sentence longer than max_chars is cut at spaces. With overlap > 0 a chunk starts with the previous chunk's last
    sentences that fit in `overlap` characters. Fewer, fuller chunks than by_title (so fewer embeddings), at the
    price of chunks that may straddle a section title.
    """
    units = _units(doc_text, max_chars)
    spans: list[tuple[int, int]] = []
    first = 0  # index of the current chunk's first unit
    while first < len(units):
        i = first + 1
        while (
            i < len(units)
            and units[i][1] - units[first][0] <= max_chars
            and units[i - 1][1] - units[first][0] < new_after
        ):
            i += 1
        spans.append((units[first][0], units[i - 1][1]))
        if i >= len(units):
            break
        nxt = i
        if overlap > 0:  # step back over whole sentences that fit in the overlap, always keeping one new sentence
            while (
                nxt - 1 > first
                and units[i - 1][1] - units[nxt - 1][0] <= overlap
                and units[i][1] - units[nxt - 1][0] <= max_chars
            ):
                nxt -= 1
        first = nxt
    return spans


def _span_of_orig_elements(raw: Any, elements: list[Any], offsets: list[tuple[int, int]]) -> tuple[int, int] | None:
    orig = getattr(raw.metadata, "orig_elements", None) or []
    ids = {getattr(o, "id", None) for o in orig}
    idx = [i for i, e in enumerate(elements) if getattr(e, "id", None) in ids]
    if not idx:
        return None
    return offsets[idx[0]][0], offsets[idx[-1]][1]


# The chunkers by [chunker].strategy (the names and their descriptions: ragpipe.settings.CHUNKER_STRATEGIES): each
# gives (start, end) spans of the document text.
CHUNKERS: dict[str, Callable[[str, list[Any], list[tuple[int, int]], ChunkerSettings], Spans]] = {
    "by_title": _element_chunk_spans,
    "basic": _element_chunk_spans,
    "sentences": _sentence_spans,
}
