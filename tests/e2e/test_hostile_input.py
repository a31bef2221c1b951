"""Hostile input, for real: a zip bomb, 100,000 nested <div>s, entity expansion, control characters in file names,
a symlink loop, a PDF claiming a million pages and a 50 MB single line, next to good files, through the real
documents stage (parser worker processes under [parser].timeout_s and [parser].max_memory_mb). Plus property tests
of the chunker over random documents.
"""

from __future__ import annotations

import resource
import shutil
import struct
import time
import zipfile
import zlib
from pathlib import Path

import pytest
from conftest import EXAMPLES, Project, make_project
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ragpipe.ingest import ELEMENT_SEPARATOR, chunk_document, element_offsets, failed_under_lower_limits, run_chunker
from ragpipe.settings import ChunkerSettings

pytestmark = [pytest.mark.slow, pytest.mark.dagster]

TIMEOUT_S = 20
MEMORY_MB = 512
STAGE_BUDGET_S = 180

DOCX_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
DOCX_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)
W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def zip_bomb_docx(path: Path, gib: int = 2) -> None:
    """A DOCX whose word/document.xml inflates to `gib` GiB: one text run of "0"s (a 2 MB file).

    Deflating GiBs through zipfile takes a minute on a busy machine, so the deflate stream is assembled from one
    compressed 16 MiB block of zeros repeated: after a full flush a deflate stream restarts from a clean state,
    so every such block compresses to the same bytes. The archive is then written by hand (no zip64 needed).
    """
    zeros, n = b"0" * (16 << 20), gib * 64
    head = f'<?xml version="1.0"?><w:document {W_NS}><w:body><w:p><w:r><w:t>'.encode()
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    last = c.compress(tail) + c.flush()
    crc = zlib.crc32(head)
    for _ in range(n):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(tail, crc)
    members = [
        (name, zlib.crc32(data), len(data), [zlib.compress(data, 9)[2:-4]])
        for name, data in (("[Content_Types].xml", DOCX_TYPES.encode()), ("_rels/.rels", DOCX_RELS.encode()))
    ]
    members.append(("word/document.xml", crc, len(head) + n * len(zeros) + len(tail), [first, *[block] * n, last]))
    central, offset = b"", 0
    with open(path, "wb") as fh:
        for name, crc32, size, parts in members:
            csize = sum(len(part) for part in parts)
            fields = struct.pack("<HHHHHIIIH", 20, 0, 8, 0, 0x21, crc32, csize, size, len(name))
            fh.write(b"PK\x03\x04" + fields + b"\x00\x00" + name.encode())
            for part in parts:
                fh.write(part)
            central += (
                b"PK\x01\x02"
                + struct.pack("<H", 20)
                + fields
                + struct.pack("<HHHHII", 0, 0, 0, 0, 0, offset)
                + name.encode()
            )
            offset = fh.tell()
        fh.write(
            central + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(members), len(members), len(central), offset, 0)
        )


def laughs(levels: int = 9) -> str:
    """The "billion laughs" DOCTYPE: &lol9; expands to 10**9 "lol"s in a parser that resolves entities."""
    decl = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, levels + 1)]
    return "<!DOCTYPE lolz [\n " + "\n ".join(decl) + "\n]>"


def laughs_docx(path: Path) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", DOCX_TYPES)
        z.writestr("_rels/.rels", DOCX_RELS)
        z.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?>\n{laughs()}\n<w:document {W_NS}><w:body>'
            "<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p><w:p><w:r><w:t>Entities stay unexpanded.</w:t></w:r></w:p>"
            "</w:body></w:document>",
        )


def million_page_pdf(path: Path) -> None:
    """A valid little PDF whose page tree claims /Count 1000000 over one real page."""
    stream = b"BT /F1 12 Tf 72 720 Td (One real page out of a claimed million.) Tj ET"
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1000000 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))


def good_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_heading("Good Word document", level=1)
    d.add_paragraph("This DOCX is perfectly ordinary and must be ingested next to the hostile files.")
    d.save(str(path))


GOOD = {
    "zz-good/plain.md": "# Plain\n\nA perfectly good Markdown paragraph about the robots' warranty terms.\n",
    "zz-good/plain.txt": "Plain text that parses fine.\n\nA second paragraph about quarterly revenue.\n",
    "zz-good/plain.html": "<html><body><h1>Good HTML</h1><p>An ordinary paragraph of HTML text.</p></body></html>",
}
# Each hostile file: either ingested safely or exactly one clear ingest_errors row.
HOSTILE = [
    "bomb.docx",
    "laughs.docx",
    "laughs.html",
    "nested.html",
    "million.pdf",
    "huge.txt",
    "bad\x07name\x1b.md",
    "new\nline.md",
    "loop-a.md",
    "loop-b.md",
]
MUST_FAIL = {
    "bomb.docx": ("ParseMemoryLimit",),
    "huge.txt": ("ParseTimeout", "ParseMemoryLimit"),
    "loop-a.md": ("BrokenSymlink",),
    "loop-b.md": ("BrokenSymlink",),
}


def build_corpus(corpus: Path) -> list[str]:
    shutil.rmtree(corpus)
    corpus.mkdir()
    zip_bomb_docx(corpus / "bomb.docx")
    laughs_docx(corpus / "laughs.docx")
    (corpus / "laughs.html").write_text(
        f'<?xml version="1.0"?>\n{laughs()}\n<html><body><p>&lol9;</p>'
        "<p>Some real text after the entities.</p></body></html>\n"
    )
    n = 100_000
    (corpus / "nested.html").write_text(
        "<html><body>"
        + "<div>" * n
        + "deep text"
        + "</div>" * n
        + "<p>After the nest, a normal paragraph.</p></body></html>"
    )
    million_page_pdf(corpus / "million.pdf")
    with open(corpus / "huge.txt", "w", encoding="utf-8") as fh:  # 50 MB, not one newline
        word = "lorem ipsum dolor sit amet "
        for _ in range(50):
            fh.write(word * ((1 << 20) // len(word)))
    (corpus / "bad\x07name\x1b.md").write_text("# Bell and escape\n\nA file whose name holds control characters.\n")
    (corpus / "new\nline.md").write_text("# Newline\n\nA file whose name holds a newline.\n")
    (corpus / "loop-a.md").symlink_to("loop-b.md")
    (corpus / "loop-b.md").symlink_to("loop-a.md")
    good = list(GOOD)
    for rel, text in GOOD.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    good_docx(corpus / "zz-good/word.docx")
    shutil.copy(EXAMPLES / "corpus/reports/q2-2024.pdf", corpus / "zz-good/report.pdf")
    return good + ["zz-good/word.docx", "zz-good/report.pdf"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, list[str], float, dict, int]:
    p = make_project(tmp_path_factory.mktemp("hostile") / "proj", with_golden=False)
    good = build_corpus(p.corpus)
    with open(p.settings_file, "a", encoding="utf-8") as fh:
        fh.write(f"\n[parser]\ntimeout_s = {TIMEOUT_S}\nmax_memory_mb = {MEMORY_MB}\n")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    result = p.materialize(["corpus", "documents"])
    elapsed = time.monotonic() - t0
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    return p, good, elapsed, p.metadata(result, "documents"), grown_kb


def test_documents_stage_is_bounded_and_the_good_files_are_ingested(hostile: tuple) -> None:
    p, good, elapsed, meta, grown_kb = hostile
    assert elapsed < STAGE_BUDGET_S, f"documents stage took {elapsed:.0f} s"
    docs = {r[0]: r[1:] for r in p.sql("SELECT doc_id, n_elements, text FROM documents")}
    for rel in good:
        assert rel in docs and docs[rel][0] > 0, (rel, sorted(docs))
    assert "perfectly ordinary" in docs["zz-good/word.docx"][1]
    # The run's own process never held the bomb or the 50 MB line's parse: the workers did, under their limits.
    assert grown_kb < 1_000_000, f"the ingesting process grew by {grown_kb} KB"
    assert meta["failed_this_run"] >= 2


def test_each_hostile_file_is_ingested_safely_or_one_clear_error(hostile: tuple) -> None:
    p, _, _, _, _ = hostile
    docs = {r[0]: r[1] for r in p.sql("SELECT doc_id, text FROM documents")}
    errors: dict[str, list[tuple[str, str, str]]] = {}
    for path, stage, cls, msg in p.sql("SELECT path, stage, error_class, message FROM ingest_errors"):
        errors.setdefault(path, []).append((stage, cls, msg))
    for name in HOSTILE:
        rows = errors.get(name, [])
        assert (name in docs) != bool(rows), (name, name in docs, rows)
        assert len(rows) <= 1, rows
        if name in MUST_FAIL:
            assert rows, f"{name!r} was ingested: {docs.get(name, '')[:200]!r}"
            assert rows[0][1] in MUST_FAIL[name], rows
        for _, _cls, msg in rows:
            assert msg.startswith(name), msg  # names its file
            assert "Traceback" not in msg and len(msg) < 2000
        if name in docs:  # ingested safely: bounded text, no entity expansion
            assert len(docs[name]) < 100_000, (name, len(docs[name]))
            assert "lollollol" not in docs[name]
    bomb = errors["bomb.docx"][0]
    assert f"memory limit of {MEMORY_MB} MB" in bomb[2], bomb
    huge = errors["huge.txt"][0]
    assert f"longer than {TIMEOUT_S} s" in huge[2] or f"memory limit of {MEMORY_MB} MB" in huge[2], huge
    assert "loops" in errors["loop-a.md"][0][2]
    # nothing that is not in the corpus, nothing twice
    assert set(errors) | set(docs) <= set(HOSTILE) | {r for r in docs if r.startswith("zz-good/")}


def test_chunks_of_what_was_ingested_and_a_quiet_second_run(hostile: tuple) -> None:
    p, good, _, _, _ = hostile
    t0 = time.monotonic()
    result = p.materialize(["corpus", "documents", "chunks"])
    elapsed = time.monotonic() - t0
    meta = p.metadata(result, "documents")
    # failed files are not retried while they and the limits are unchanged: the second run is cheap
    assert meta["parsed_this_run"] == 0 and meta["failed_this_run"] == 0, meta
    assert elapsed < 60, elapsed
    for doc_text, chunk_text, start, end in p.sql(
        "SELECT d.text, c.text, c.start_char, c.end_char FROM chunks c JOIN documents d USING (doc_id)"
    ):
        assert doc_text[start:end] == chunk_text
    chunked = {r[0] for r in p.sql("SELECT DISTINCT doc_id FROM chunks")}
    assert set(good) <= chunked


def test_a_file_that_failed_under_a_lower_limit_is_retried() -> None:
    t = "huge.txt: parsing took longer than 20 s ([parser].timeout_s) and was stopped; ..."
    assert failed_under_lower_limits("ParseTimeout", t, 120.0, 2048)
    assert not failed_under_lower_limits("ParseTimeout", t, 20.0, 4096)
    m = "bomb.docx: parsing exceeded the memory limit of 1024 MB ([parser].max_memory_mb) and was stopped; ..."
    assert failed_under_lower_limits("ParseMemoryLimit", m, 20.0, 2048)
    assert not failed_under_lower_limits("ParseMemoryLimit", m, 999.0, 1024)
    assert not failed_under_lower_limits("ParseError", "x.md: empty file", 999.0, 99999)


# -- the chunker, property-based --------------------------------------------------------------------------------------

WORDS = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), min_size=1, max_size=12)
TEXT = st.lists(WORDS, min_size=1, max_size=60).map(" ".join).filter(lambda s: s.strip() != "")
KIND = st.sampled_from(["Title", "NarrativeText", "ListItem", "Text"])
DOC = st.lists(st.tuples(KIND, TEXT, st.integers(min_value=1, max_value=3)), min_size=1, max_size=25)
CFG = st.builds(
    lambda mx, after, combine, overlap, strategy: ChunkerSettings(
        strategy=strategy,
        max_characters=mx,
        new_after_n_chars=min(after, mx),
        combine_text_under_n_chars=combine,
        overlap=min(overlap, mx // 4),
    ),
    st.integers(min_value=50, max_value=600),
    st.integers(min_value=20, max_value=600),
    st.integers(min_value=0, max_value=300),
    st.integers(min_value=0, max_value=40),
    st.sampled_from(["by_title", "basic"]),
)


def make_elements(spec: list[tuple[str, str, int]]) -> list:
    from unstructured.documents import elements as el

    classes = {"Title": el.Title, "NarrativeText": el.NarrativeText, "ListItem": el.ListItem, "Text": el.Text}
    return [classes[kind](text=text, metadata=el.ElementMetadata(page_number=page)) for kind, text, page in spec]


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=DOC, cfg=CFG)
def test_chunk_spans_slice_back_and_ids_are_deterministic(
    spec: list[tuple[str, str, int]], cfg: ChunkerSettings
) -> None:
    elements = make_elements(spec)
    doc_text = ELEMENT_SEPARATOR.join(e.text for e in elements)
    chunks = chunk_document("docs/random.md", doc_text, elements, element_offsets(elements), cfg)
    assert chunks
    for c in chunks:
        assert 0 <= c.start_char < c.end_char <= len(doc_text)
        assert doc_text[c.start_char : c.end_char] == c.text
        assert c.text.strip() == c.text and c.text
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    # the span is the chunker's own text (up to whitespace), not a fallback somewhere else in the document
    raw = [" ".join(r.text.split()) for r in run_chunker(make_elements(spec), cfg) if r.text.strip()]
    if cfg.overlap == 0:
        assert [" ".join(c.text.split()) for c in chunks] == raw
    # same input, built afresh: same ids, spans and texts
    again = chunk_document("docs/random.md", doc_text, make_elements(spec), element_offsets(elements), cfg)
    assert [(c.chunk_id, c.start_char, c.end_char, c.text) for c in again] == [
        (c.chunk_id, c.start_char, c.end_char, c.text) for c in chunks
    ]


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=DOC,
    mx=st.integers(min_value=50, max_value=600),
    after=st.integers(min_value=20, max_value=600),
    overlap=st.integers(min_value=0, max_value=60),
)
def test_sentence_packing_bounds_covers_and_fills(
    spec: list[tuple[str, str, int]], mx: int, after: int, overlap: int
) -> None:
    """strategy "sentences": every chunk within max_characters, every non-space character in a chunk, in order; with
    no overlap the chunks are disjoint and a chunk ends only where the next sentence would not have fitted."""
    from ragpipe.ingest.chunk import _units

    elements = make_elements(spec)
    doc_text = ELEMENT_SEPARATOR.join(e.text for e in elements)
    cfg = ChunkerSettings(strategy="sentences", max_characters=mx, new_after_n_chars=min(after, mx), overlap=overlap)
    chunks = chunk_document("docs/random.md", doc_text, elements, element_offsets(elements), cfg)
    assert chunks
    covered = bytearray(len(doc_text))
    for c in chunks:
        assert doc_text[c.start_char : c.end_char] == c.text and c.text.strip() == c.text
        assert len(c.text) <= mx
        covered[c.start_char : c.end_char] = b"\x01" * (c.end_char - c.start_char)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(doc_text))
    starts = [c.start_char for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    if overlap == 0:
        units = _units(doc_text, mx)
        unit_at = {u[0]: u for u in units}
        for a, b in zip(chunks, chunks[1:]):
            assert a.end_char <= b.start_char
            nxt = unit_at[b.start_char]  # a chunk starts at a sentence, and that sentence did not fit in the one before
            assert nxt[1] - a.start_char > mx or a.end_char - a.start_char >= cfg.new_after_n_chars


def test_a_parse_past_timeout_s_is_stopped_and_its_worker_replaced(hostile: tuple) -> None:
    """The time limit on its own (the stage above may stop huge.txt on either limit, whichever comes first)."""
    from ragpipe.ingest import ParseTimeout, shared_pool

    p, _, _, _, _ = hostile
    pool = shared_pool()  # the stage's pool, its worker warm
    started = pool.started
    t0 = time.monotonic()
    with pytest.raises(ParseTimeout, match=r"huge\.txt: parsing took longer than 3 s"):
        pool.parse(p.corpus / "huge.txt", timeout_s=3, max_memory_mb=16384)
    assert time.monotonic() - t0 < 60
    doc = pool.parse(p.corpus / "zz-good/plain.md", timeout_s=60)
    assert "warranty terms" in doc.text
    assert pool.started - started in (1, 2)  # the overrunning worker was killed, a fresh one took the next file
