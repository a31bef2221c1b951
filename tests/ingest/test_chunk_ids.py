"""Chunk ids are content-addressed and stable; chunk text is located in the document despite whitespace changes."""

from __future__ import annotations

import hashlib
import re

from ragpipe.ingest.chunk import _locate, chunk_id_for, sentence_pack_spans


def test_chunk_id_is_deterministic_and_well_formed() -> None:
    a = chunk_id_for("reports/q3-2023.md", "Revenue was $48.7 million.", 0)
    assert a == chunk_id_for("reports/q3-2023.md", "Revenue was $48.7 million.", 0)
    assert re.fullmatch(r"ch_[0-9a-f]{16}", a)
    # A fixed value: the same text in the same document gets the same id on every run and machine.
    assert (
        chunk_id_for("d", "t", 0)
        == chunk_id_for("d", "t", 0)
        == "ch_" + hashlib.sha256(b"d\x000\x00t").hexdigest()[:16]
    )


def test_chunk_id_depends_on_doc_text_and_occurrence() -> None:
    base = chunk_id_for("a.md", "same text", 0)
    others = {
        chunk_id_for("b.md", "same text", 0),
        chunk_id_for("a.md", "same text.", 0),
        chunk_id_for("a.md", "Same text", 0),
        chunk_id_for("a.md", "same text", 1),
        chunk_id_for("a.md", "same  text", 0),
    }
    assert base not in others and len(others) == 5
    # The separator keeps doc id and text apart: ("a", "b c") and ("a b", "c") differ.
    assert chunk_id_for("a", "b c", 0) != chunk_id_for("a b", "c", 0)


DOC = "Title\n\nHalvorsen Robotics reported revenue of\n$48.7  million.\n\nLater: Halvorsen Robotics reported revenue of $50 million."


def test_locate_exact() -> None:
    piece = "Halvorsen Robotics reported revenue of"
    start, end = _locate(DOC, piece, 0)  # type: ignore[misc]
    assert DOC[start:end] == piece and start == DOC.index(piece)


def test_locate_prefers_the_occurrence_at_or_after_the_cursor() -> None:
    piece = "Halvorsen Robotics reported revenue of"
    first = DOC.index(piece)
    start, end = _locate(DOC, piece, first + 1)  # type: ignore[misc]
    assert start == DOC.index(piece, first + 1) and DOC[start:end] == piece
    # Past every occurrence it falls back to the first.
    assert _locate(DOC, piece, len(DOC))[0] == first  # type: ignore[index]


def test_locate_tolerates_whitespace_differences() -> None:
    start, end = _locate(DOC, "revenue of $48.7 million.", 0)  # type: ignore[misc]
    assert DOC[start:end] == "revenue of\n$48.7  million."
    start, end = _locate(DOC, "Title  Halvorsen\tRobotics", 0)  # type: ignore[misc]
    assert DOC[start:end] == "Title\n\nHalvorsen Robotics"


def test_locate_not_found() -> None:
    assert _locate(DOC, "revenue of $51.2 million", 0) is None
    assert _locate(DOC, "   ", 0) is None


def test_sentence_packing_crosses_element_boundaries_but_never_cuts_a_sentence() -> None:
    text = "Results\n\nRevenue grew 12%. Costs fell.\n\nOutlook\n\nWe expect more. Risks remain."
    spans = sentence_pack_spans(text, max_chars=45, new_after=45)
    pieces = [text[s:e] for s, e in spans]
    # Title + two sentences fill the first chunk; the next title starts a new one only because it did not fit.
    assert pieces == ["Results\n\nRevenue grew 12%. Costs fell.", "Outlook\n\nWe expect more. Risks remain."]
    # A sentence longer than the limit is cut at spaces, never inside a word.
    long = "alpha " * 20
    assert [long[s:e] for s, e in sentence_pack_spans(long, 50, 50)] == [
        "alpha " * 7 + "alpha",
        "alpha " * 7 + "alpha",
        "alpha " * 3 + "alpha",
    ]
    # Overlap repeats whole trailing sentences of the previous chunk.
    spans = sentence_pack_spans("One two. Three four. Five six. Seven.", 22, 22, overlap=12)
    assert ["One two. Three four.", "Three four. Five six.", "Five six. Seven."] == [
        "One two. Three four. Five six. Seven."[s:e] for s, e in spans
    ]
