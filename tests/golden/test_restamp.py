"""Re-stamping: locate each test's quote in a hand-built chunking and check the status and the chunk ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragpipe.core import collapse_whitespace as normalize
from ragpipe.golden import ChunkSpan, GoldenTest, Restamper, id_value

REPORT = (
    "# Q3 2023 report\n\n"
    "Intro paragraph about the quarter.\n\n"
    "Halvorsen Robotics reported revenue of\n$48.7  million for the third quarter of 2023.\n\n"
    "Outlook:   growth continues\tinto 2024.\n"
)
POLICY = "Travel policy.\n\nEmployees may claim up to $75\nper day for meals.\n"
DOCS = {"reports/q3-2023.md": REPORT, "policies/travel.md": POLICY}


def _span(doc_id: str, cid: str, start_text: str, end_text: str) -> ChunkSpan:
    """A chunk from the first occurrence of start_text to the end of the first following end_text."""
    text = DOCS[doc_id]
    s = text.index(start_text)
    e = text.index(end_text, s) + len(end_text)
    return ChunkSpan(cid, doc_id, s, e)


def _contiguous(doc_id: str, *cut_texts: str) -> list[ChunkSpan]:
    """Chunks c0, c1, ... that tile the whole document, cut where each of cut_texts starts."""
    text = DOCS[doc_id]
    cuts = [0] + [text.index(c) for c in cut_texts] + [len(text)]
    return [ChunkSpan(f"c{i}", doc_id, a, b) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]


# c0: title + intro, c1: the revenue sentence, c2: outlook
CHUNKS = _contiguous("reports/q3-2023.md", "Halvorsen", "Outlook") + [
    ChunkSpan("t0", "policies/travel.md", 0, len(POLICY))
]
QUOTE = "Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023."


def _test(
    ids: list[str] | None = None,
    quote: str | None = QUOTE,
    source: str | None = "reports/q3-2023.md",
    kind: str = "negative",
) -> GoldenTest:
    return GoldenTest(
        question_id="t1",
        question="q",
        expected_answer="not in documents" if kind == "negative" else "x",
        kind=kind,
        line=1,
        anchor_ids=list(ids or []),
        quote=quote,
        source=source,
        trap_value=None,
        embedder_tag=None,
        last_validated=None,
    )


def test_new_when_the_test_had_no_id() -> None:
    s = Restamper(DOCS, CHUNKS).stamp(_test())
    assert (s.status, s.old_ids, s.new_ids, s.doc_id, s.anchor) == ("new", (), ("c1",), "reports/q3-2023.md", "trap")
    assert id_value(s.new_ids) == "c1"


def test_unchanged_when_the_same_chunk_holds_the_quote() -> None:
    s = Restamper(DOCS, CHUNKS).stamp(_test(["c1"]))
    assert (s.status, s.new_ids, s.reason) == ("unchanged", ("c1",), "")


def test_moved_when_the_old_id_differs() -> None:
    s = Restamper(DOCS, CHUNKS).stamp(_test(["ch_old"], kind="positive"))
    assert (s.status, s.old_ids, s.new_ids, s.anchor) == ("moved", ("ch_old",), ("c1",), "evidence")
    assert "ch_old -> c1" in s.reason


def test_split_gives_every_covering_id_in_order() -> None:
    # Cut through the quote twice: "... revenue of" | "$48.7 million for the" | "third quarter ..."
    chunks = _contiguous("reports/q3-2023.md", "Halvorsen", "$48.7", "third quarter", "Outlook")
    stamper = Restamper(DOCS, list(reversed(chunks)))  # the order chunks are given in does not matter
    s = stamper.stamp(_test())
    assert (s.status, s.new_ids) == ("split", ("c1", "c2", "c3"))
    assert id_value(s.new_ids) == ["c1", "c2", "c3"]
    # A quote crossing exactly one boundary gives the two parts.
    s = stamper.stamp(_test(["c1"], quote="revenue of $48.7 million"))
    assert (s.status, s.new_ids) == ("split", ("c1", "c2"))


def test_split_anchor_already_stamped_with_all_parts_is_unchanged() -> None:
    chunks = _contiguous("reports/q3-2023.md", "Halvorsen", "$48.7", "Outlook")
    stamper = Restamper(DOCS, chunks)
    assert stamper.stamp(_test(["c1"])).status == "split"  # single old id -> now two parts
    s = stamper.stamp(_test(["c1", "c2"]))  # the file already lists both parts
    assert (s.status, s.new_ids) == ("unchanged", ("c1", "c2"))
    assert stamper.stamp(_test(["c2", "c1"])).status == "split"  # wrong order is rewritten


def test_quote_ending_exactly_at_a_chunk_boundary_is_not_split() -> None:
    chunks = _contiguous("reports/q3-2023.md", "$48.7")
    s = Restamper(DOCS, chunks).stamp(_test(quote="reported revenue of"))
    assert (s.status, s.new_ids) == ("new", ("c0",))
    s = Restamper(DOCS, chunks).stamp(_test(quote="$48.7 million"))
    assert (s.status, s.new_ids) == ("new", ("c1",))


def test_missing_when_the_quote_is_absent() -> None:
    stamper = Restamper(DOCS, CHUNKS)
    s = stamper.stamp(_test(["c1"], quote="Halvorsen Robotics reported revenue of $51.2 million"))
    assert (s.status, s.old_ids, s.new_ids) == ("missing", ("c1",), ())
    assert "reports/q3-2023.md" in s.reason
    # A quote only in another document than the one named (which exists): missing from the named one.
    assert stamper.stamp(_test(quote="claim up to $75 per day")).status == "missing"
    # A source that is gone: deleted when the quote is nowhere; renamed, and followed, when it is in another document.
    gone = stamper.stamp(_test(["c1"], quote="nowhere at all", source="reports/q9.md"))
    assert gone.status == "missing" and "missing from corpus: reports/q9.md deleted" in gone.reason
    renamed = stamper.stamp(_test(source="reports/q9.md"))
    assert renamed.status in ("new", "moved", "unchanged") and renamed.doc_id == "reports/q3-2023.md"
    assert "now in reports/q3-2023.md (reports/q9.md is gone)" in renamed.reason
    # Without a source, a quote nowhere in the corpus.
    s = stamper.stamp(_test(quote="nowhere at all", source=None))
    assert (s.status, s.doc_id) == ("missing", None)
    assert "anywhere" in s.reason


def test_missing_when_no_chunk_covers_the_quote() -> None:
    chunks = [ChunkSpan("c0", "reports/q3-2023.md", 0, REPORT.index("Halvorsen"))]
    s = Restamper(DOCS, chunks).stamp(_test())
    assert (s.status, s.new_ids) == ("missing", ())


def test_no_quote_keeps_the_ids() -> None:
    stamper = Restamper(DOCS, CHUNKS)
    s = stamper.stamp(_test(["c1"], quote=None))
    assert (s.status, s.old_ids, s.new_ids) == ("no_quote", ("c1",), ("c1",))
    assert s.reason == "cannot re-stamp: no trap_quote"
    s = stamper.stamp(_test(["ch_gone"], quote=None, kind="positive"))
    assert s.status == "no_quote" and s.new_ids == ("ch_gone",)
    assert "no evidence_quote" in s.reason and "not in the current chunking" in s.reason


def test_whitespace_is_normalized_on_both_sides() -> None:
    stamper = Restamper(DOCS, CHUNKS)
    # The document has "of\n$48.7  million"; the quote single spaces. And the other way round.
    assert stamper.stamp(_test(["c1"])).status == "unchanged"
    assert stamper.stamp(_test(["c2"], quote="Outlook:\n growth  continues into\n2024.")).status == "unchanged"
    doc_id, start, end = stamper.locate(QUOTE, "reports/q3-2023.md")  # type: ignore[misc]
    assert REPORT[start:end] == "Halvorsen Robotics reported revenue of\n$48.7  million for the third quarter of 2023."
    doc_id, start, end = stamper.locate("  of  $48.7\nmillion ", None)  # type: ignore[misc]
    assert REPORT[start:end] == "of\n$48.7  million"


def test_smallest_holding_chunk_is_chosen_among_overlapping_chunks() -> None:
    big = ChunkSpan("big", "reports/q3-2023.md", 0, len(REPORT))
    mid = _span("reports/q3-2023.md", "mid", "Intro", "2023.")
    small = _span("reports/q3-2023.md", "small", "Halvorsen", "2023.")
    for order in ([big, mid, small], [small, mid, big], [mid, big, small]):
        s = Restamper(DOCS, order).stamp(_test())
        assert (s.status, s.new_ids) == ("new", ("small",)), order
    # When the smallest one does not hold the whole quote, the smallest one that does.
    part = _span("reports/q3-2023.md", "part", "Halvorsen", "million")
    s = Restamper(DOCS, [big, part, mid]).stamp(_test())
    assert s.new_ids == ("mid",)


def test_quote_without_source_is_searched_in_every_document() -> None:
    s = Restamper(DOCS, CHUNKS).stamp(_test(quote="Employees may claim up to $75 per day", source=None))
    assert (s.status, s.new_ids, s.doc_id) == ("new", ("t0",), "policies/travel.md")


# ----------------------------------------------------------------------------------------------- property test

WORDS = st.text(alphabet="abcdefgh", min_size=1, max_size=6)
SEPS = st.sampled_from([" ", "  ", "\n", "\n\n", " \t ", "\t"])


@st.composite
def documents_and_chunkings(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]], list[ChunkSpan]]:
    words = draw(st.lists(WORDS, min_size=1, max_size=40))
    seps = draw(st.lists(SEPS, min_size=len(words) + 1, max_size=len(words) + 1))
    lead = draw(st.booleans())
    text, spans = (seps[0] if lead else ""), []
    for w, sep in zip(words, seps[1:]):
        spans.append((len(text), len(text) + len(w)))
        text += w + sep
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=12))) if len(text) > 1 else []
    bounds = [0, *cuts, len(text)]
    chunks = [ChunkSpan(f"k{i}", "d", a, b) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    return text, spans, chunks


@settings(max_examples=300, deadline=None)
@given(data=documents_and_chunkings(), pick=st.data(), use_source=st.booleans(), renormalize=st.booleans())
def test_property_a_word_bounded_quote_is_always_found_and_covered(data, pick, use_source, renormalize) -> None:
    text, word_spans, chunks = data
    i = pick.draw(st.integers(0, len(word_spans) - 1))
    j = pick.draw(st.integers(i, len(word_spans) - 1))
    quote = text[word_spans[i][0] : word_spans[j][1]]
    if renormalize:
        quote = normalize(quote)
    documents = {"d": text, "other": "zzz unrelated"}
    stamper = Restamper(documents, chunks + [ChunkSpan("o0", "other", 0, 13)])
    test = _test(quote=quote, source="d" if use_source else None)
    s = stamper.stamp(test)
    assert s.status in ("new", "split"), s
    assert s.doc_id == "d"
    located = stamper.locate(quote, test.source)
    assert located is not None
    _, start, end = located
    assert normalize(text[start:end]) == normalize(quote)
    by_id = {c.chunk_id: c for c in chunks}
    got = [by_id[cid] for cid in s.new_ids]
    # In document order, adjacent (the chunking tiles the text), together covering the located quote.
    assert got == sorted(got, key=lambda c: c.start_char)
    assert all(a.end_char == b.start_char for a, b in zip(got, got[1:]))
    assert got[0].start_char <= start and got[-1].end_char >= end
    # Each part overlaps the quote (no extra chunks), and a split is reported only when no single chunk holds it.
    assert all(c.start_char < end and c.end_char > start for c in got)
    single = [c for c in chunks if c.start_char <= start and c.end_char >= end]
    assert (s.status == "new") == bool(single)
    # Re-stamping with the ids just found is unchanged.
    again = stamper.stamp(_test(ids=list(s.new_ids), quote=quote, source=test.source))
    assert (again.status, again.new_ids) == ("unchanged", s.new_ids)


@settings(max_examples=100, deadline=None)
@given(data=documents_and_chunkings(), absent=st.text(alphabet="xyz", min_size=1, max_size=6), use_source=st.booleans())
def test_property_a_word_not_in_the_document_is_missing(data, absent, use_source) -> None:
    text, _, chunks = data
    s = Restamper({"d": text}, chunks).stamp(_test(["k0"], quote=absent, source="d" if use_source else None))
    assert (s.status, s.new_ids) == ("missing", ())
