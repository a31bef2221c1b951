"""Re-stamp golden-set anchors: find the chunk(s) of the current chunking that hold each test's quote.

Statuses: unchanged (same ids), moved (old id -> new id), split (the chunker cut through the quote: every part
is stamped, and the anchor counts as retrieved only when all parts are), missing (the quote is no longer in the
corpus), new (first stamping), no_quote (cannot re-stamp: the test has ids but no quote).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ragpipe.core import fold
from ragpipe.golden.file import GoldenTest
from ragpipe.golden.quotes import closest_passage, quote_forms

IMPL_VERSION = "1"  # loading and stamping the golden set (part of `golden_set` and `stamps`' code versions)

_WHITESPACE = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)


@dataclass(frozen=True)
class ChunkSpan:
    chunk_id: str
    doc_id: str
    start_char: int
    end_char: int


@dataclass(frozen=True)
class Stamp:
    question_id: str
    anchor: str  # "trap" | "evidence"
    status: str
    old_ids: tuple[str, ...]
    new_ids: tuple[str, ...]
    doc_id: str | None
    reason: str
    closest: str | None = None  # missing: the passage of the source most like the quote, for a person to accept


class _NormalizedDoc:
    """A document's whitespace-normalized text with a map back to original character offsets."""

    def __init__(self, text: str):
        text = fold(text)  # one-for-one swaps (curly quotes, dashes): offsets unchanged
        # Vectorized: word starts/ends in the original text, and where each word starts once every whitespace
        # run is one space. (str.split and str.isspace agree on what whitespace is, and so does re's \s.)
        self.text = " ".join(text.split())
        if not self.text:
            self._norm = self._orig = np.zeros(1, dtype=np.int64)
            return
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        is_ws = np.isin(cps, _WHITESPACE)
        edges = np.diff(np.concatenate(([True], is_ws, [True])).astype(np.int8))
        starts = np.flatnonzero(edges == -1)  # whitespace -> word
        ends = np.flatnonzero(edges == 1)  # word -> whitespace
        lengths = ends - starts
        norm = np.zeros(len(starts), dtype=np.int64)
        norm[1:] = np.cumsum(lengths[:-1] + 1)
        self._norm = norm
        self._orig = starts.astype(np.int64)

    def to_orig(self, norm_pos: int) -> int:
        i = max(0, int(np.searchsorted(self._norm, norm_pos, side="right")) - 1)
        return int(self._orig[i] + (norm_pos - self._norm[i]))

    def find(self, quote: str) -> tuple[int, int] | None:
        """Original-text span of the normalized quote, or None."""
        at = self.text.find(quote)
        if at < 0:
            return None
        end = at + len(quote) - 1  # last character, always inside a segment
        return self.to_orig(at), self.to_orig(end) + 1


class Restamper:
    """Index the current chunking once; stamp any number of tests against it quickly."""

    def __init__(self, documents: dict[str, str], chunks: Iterable[ChunkSpan]):
        self.documents = documents
        self._norm: dict[str, _NormalizedDoc] = {}
        self._by_doc: dict[str, list[ChunkSpan]] = {}
        self._ids: set[str] = set()
        for c in chunks:
            self._by_doc.setdefault(c.doc_id, []).append(c)
            self._ids.add(c.chunk_id)
        self._starts: dict[str, list[int]] = {}
        for doc_id, cs in self._by_doc.items():
            cs.sort(key=lambda c: (c.start_char, c.end_char))
            self._starts[doc_id] = [c.start_char for c in cs]
        self._longest = {d: max(c.end_char - c.start_char for c in cs) for d, cs in self._by_doc.items()}

    def _doc(self, doc_id: str) -> _NormalizedDoc:
        nd = self._norm.get(doc_id)
        if nd is None:
            nd = self._norm[doc_id] = _NormalizedDoc(self.documents[doc_id])
        return nd

    def locate(self, quote: str, source: str | None) -> tuple[str, int, int] | None:
        """(document, start, end) of the quote: in its source, or anywhere when no source is named or the source
        is gone (a renamed document). Tried as written (folded), then with the markup of a source file removed."""
        forms = quote_forms(quote)
        candidates = [source] if source in self.documents else sorted(self.documents)
        for form in forms:
            for doc_id in candidates:
                span = self._doc(doc_id).find(form)
                if span:
                    return doc_id, span[0], span[1]
        return None

    def covering_chunks(self, doc_id: str, start: int, end: int) -> list[str]:
        """One chunk that holds the whole span if there is one; else the chunks that together cover it."""
        cs = self._by_doc.get(doc_id, [])
        starts = self._starts.get(doc_id, [])
        # Only chunks starting within one maximal chunk length before the span can reach into it.
        lo = bisect.bisect_left(starts, start - self._longest.get(doc_id, 0))
        hi = bisect.bisect_right(starts, start)
        holders = [c for c in cs[lo:hi] if c.end_char >= end]
        if holders:
            return [min(holders, key=lambda c: c.end_char - c.start_char).chunk_id]
        return [c.chunk_id for c in cs[lo : bisect.bisect_left(starts, end)] if c.end_char > start]

    def stamp(self, test: GoldenTest) -> Stamp:
        anchor = "trap" if test.kind == "negative" else "evidence"
        old = tuple(test.anchor_ids)
        if not test.quote:
            status = "no_quote"
            present = all(i in self._ids for i in old)
            reason = f"cannot re-stamp: no {anchor}_quote" + (
                "" if present else "; its chunk id is not in the current chunking"
            )
            return Stamp(test.question_id, anchor, status, old, old, test.source, reason)
        found = self.locate(test.quote, test.source)
        if found is None:
            return self._missing(test, anchor, old)
        doc_id, start, end = found
        new = tuple(self.covering_chunks(doc_id, start, end))
        if not new:
            return Stamp(
                test.question_id,
                anchor,
                "missing",
                old,
                (),
                doc_id,
                f"{anchor} quote found in {doc_id} but no chunk covers it",
            )
        if new == old:
            # Also for a split anchor already stamped with all its parts: the file is current.
            status, reason = "unchanged", "" if len(new) == 1 else f"split across {len(new)} chunks, all stamped"
        elif len(new) > 1:
            status, reason = "split", f"the chunker cut through the {anchor} quote: {len(new)} parts"
        elif not old:
            status, reason = "new", f"stamped {new[0]}"
        else:
            status, reason = "moved", f"{', '.join(old)} -> {new[0]}"
        if test.source and doc_id != test.source:
            reason = f"{reason}; the quote is now in {doc_id} ({test.source} is gone)".lstrip("; ")
        return Stamp(test.question_id, anchor, status, old, new, doc_id, reason)

    def _missing(self, test: GoldenTest, anchor: str, old: tuple[str, ...]) -> Stamp:
        """Why the quote is not found, in words a person acts on, with the closest passage where there is one."""

        def missing(reason: str, closest: str | None = None) -> Stamp:
            return Stamp(test.question_id, anchor, "missing", old, (), test.source or None, reason, closest=closest)

        if not test.source:
            return missing("missing from corpus: quote no longer found anywhere")
        if test.source not in self.documents:
            return missing(
                f"missing from corpus: {test.source} deleted (or renamed, and the quote is in no other document)"
            )
        near = closest_passage(test.quote or "", self.documents[test.source])
        if near is None:
            return missing(f"quote no longer in {test.source}")
        passage, similarity = near
        shown = passage if len(passage) <= 200 else passage[:197] + "..."
        return missing(
            f'quote no longer in {test.source}; closest passage now: "{shown}" (similarity {similarity:.2f})', passage
        )


def id_value(ids: tuple[str, ...]) -> str | list[str] | None:
    """How ids are written to the golden set file: a string, or a list for a split anchor."""
    if not ids:
        return None
    return ids[0] if len(ids) == 1 else list(ids)
