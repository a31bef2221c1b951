"""Chunk parsed documents with unstructured's chunkers and give every chunk a deterministic id and exact span."""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from ragpipe.settings import ChunkerSettings


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


def chunk_document(
    doc_id: str,
    doc_text: str,
    elements: list[Any],
    offsets: list[tuple[int, int]],
    cfg: ChunkerSettings,
) -> list[Chunk]:
    """Chunk one document. Every chunk's text is exactly doc_text[start_char:end_char]."""
    starts = [s for s, _ in offsets]
    title_positions = [(s, e.text) for (s, _), e in zip(offsets, elements) if getattr(e, "category", "") == "Title"]
    title_starts = [s for s, _ in title_positions]
    pages = [getattr(e.metadata, "page_number", None) for e in elements]

    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    cursor = 0
    for raw in run_chunker(elements, cfg):
        piece = (raw.text or "").strip()
        if not piece:
            continue
        span = _locate(doc_text, piece, cursor)
        if span is None:
            # A chunker that rewrote text beyond whitespace: fall back to the span of its source elements.
            span = _span_of_orig_elements(raw, elements, offsets) or (cursor, min(len(doc_text), cursor + len(piece)))
        start, end = span
        text = doc_text[start:end]
        cursor = start + 1
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


def _span_of_orig_elements(raw: Any, elements: list[Any], offsets: list[tuple[int, int]]) -> tuple[int, int] | None:
    orig = getattr(raw.metadata, "orig_elements", None) or []
    ids = {getattr(o, "id", None) for o in orig}
    idx = [i for i, e in enumerate(elements) if getattr(e, "id", None) in ids]
    if not idx:
        return None
    return offsets[idx[0]][0], offsets[idx[-1]][1]
