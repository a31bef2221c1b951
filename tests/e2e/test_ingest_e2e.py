"""The ingestion graph end to end on the bundled corpus: real unstructured, sentence-transformers, LanceDB, DuckDB."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Project, make_project

from ragpipe.embed import store, table_name

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]

INGEST = ["corpus", "documents", "chunks", "embeddings"]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, dict]:
    p = make_project(tmp_path_factory.mktemp("ingest") / "proj", with_golden=False)
    result = p.materialize(INGEST)
    return p, {a: p.metadata(result, a) for a in INGEST}


def test_whole_graph_row_counts(ingested: tuple[Project, dict]) -> None:
    p, meta = ingested
    n_files = sum(1 for f in p.corpus.rglob("*") if f.is_file())
    assert meta["corpus"]["files"] == n_files >= 30
    assert meta["documents"]["documents"] == n_files
    assert meta["documents"]["ingest_errors"] == 0
    formats = dict(p.sql("SELECT format, count(*) FROM documents GROUP BY 1"))
    assert set(formats) == {"markdown", "html", "text", "pdf"}
    n_chunks = p.sql("SELECT count(*) FROM chunks")[0][0]
    assert meta["chunks"]["chunks"] == n_chunks > n_files
    assert meta["embeddings"]["vectors"] == n_chunks
    e = meta["embeddings"]  # each text embedded once: while the documents stage parsed, or in the embeddings stage
    assert (
        e["embedded"] + e["precomputed"] == n_chunks - e["reused"]
        and e["precomputed"] <= meta["documents"]["embedded_while_parsing"]
    )
    db = store.open_store(p.settings())
    table = db.open_table(table_name(meta["embeddings"]["embedder_tag"]))
    assert table.count_rows() == n_chunks
    # every chunk has its vector, and the DuckDB mirror says the same
    missing = p.sql("SELECT count(*) FROM chunks c LEFT JOIN embeddings e USING (chunk_id) WHERE e.chunk_id IS NULL")
    assert missing == [(0,)]


def test_spans_slice_document_text_back_to_chunk_text(ingested: tuple[Project, dict]) -> None:
    p, _ = ingested
    rows = p.sql("SELECT d.text, c.text, c.start_char, c.end_char FROM chunks c JOIN documents d USING (doc_id)")
    assert rows
    for doc_text, chunk_text, start, end in rows:
        assert doc_text[start:end] == chunk_text


def test_chunks_keep_sections_pages_and_tokens(ingested: tuple[Project, dict]) -> None:
    p, _ = ingested
    assert p.sql("SELECT count(*) FROM chunks WHERE section IS NOT NULL")[0][0] > 0
    pdf_pages = p.sql("SELECT DISTINCT c.page FROM chunks c JOIN documents d USING (doc_id) WHERE d.format = 'pdf'")
    assert all(pg is not None and pg >= 1 for (pg,) in pdf_pages)
    assert p.sql("SELECT min(n_tokens) > 0 FROM embeddings")[0][0]


def test_pdf_yields_elements(ingested: tuple[Project, dict]) -> None:
    """Catches unstructured's offline spaCy regression, where PDF parsing silently returns nothing."""
    p, _ = ingested
    rows = p.sql("SELECT n_elements FROM documents WHERE format = 'pdf'")
    assert rows and all(n > 0 for (n,) in rows)


def test_chunk_ids_deterministic_across_runs(ingested: tuple[Project, dict], tmp_path: Path) -> None:
    p, _ = ingested
    other = make_project(tmp_path / "again", with_golden=False)
    other.materialize(["corpus", "documents", "chunks"])
    q = "SELECT chunk_id, doc_id, seq, start_char, end_char FROM chunks ORDER BY doc_id, seq"
    assert other.sql(q) == p.sql(q)


def test_incremental_reembedding(tmp_path: Path) -> None:
    p = make_project(tmp_path / "inc", with_golden=False)
    first = p.metadata(p.materialize(INGEST), "embeddings")
    tag = first["embedder_tag"]

    # nothing changed: nothing parsed, nothing embedded
    again = p.materialize(INGEST)
    assert p.metadata(again, "documents")["parsed_this_run"] == 0
    assert p.metadata(again, "embeddings")["embedded"] == 0

    # one edited document: only its new chunks are embedded
    doc = "policies/pto-policy.html"
    before = set(p.sql("SELECT chunk_id FROM chunks WHERE doc_id = ?", [doc]))
    path = p.corpus / doc
    path.write_text(
        path.read_text().replace(
            "</body>",
            "<h2>Carry-over</h2><p>Unused paid time off of up to five "
            "days carries over into the first quarter of the next year.</p></body>",
        )
    )
    edited = p.materialize(INGEST)
    assert p.metadata(edited, "documents")["parsed_this_run"] == 1
    after = set(p.sql("SELECT chunk_id FROM chunks WHERE doc_id = ?", [doc]))
    new_ids = after - before
    assert new_ids
    emb = p.metadata(edited, "embeddings")  # embedded while the documents stage parsed, or in the embeddings stage
    early = p.metadata(edited, "documents")["embedded_while_parsing"]
    assert 0 < emb["embedded"] + emb["precomputed"] <= len(new_ids) and emb["precomputed"] <= early
    assert p.sql(f"SELECT count(*) FROM embeddings WHERE run_id = '{edited.run_id}'")[0][0] == len(new_ids)

    # a deleted document loses its rows and its vectors
    gone = "contracts/veridian-nda.txt"
    ids = [r[0] for r in p.sql("SELECT chunk_id FROM chunks WHERE doc_id = ?", [gone])]
    (p.corpus / gone).unlink()
    p.materialize(INGEST)
    assert p.sql("SELECT count(*) FROM documents WHERE doc_id = ?", [gone]) == [(0,)]
    assert p.sql("SELECT count(*) FROM chunks WHERE doc_id = ?", [gone]) == [(0,)]
    table = store.open_store(p.settings()).open_table(table_name(tag))
    stored = set(table.to_arrow()["chunk_id"].to_pylist())
    assert ids and not stored & set(ids)
    assert len(stored) == p.sql("SELECT count(*) FROM chunks")[0][0]

    # another embedder: a second table; the first one is left as it was
    first_rows = table.count_rows()
    p.configure(embedder="minilm-static")
    static = p.metadata(p.materialize(["embeddings"]), "embeddings")
    assert static["embedder_tag"] != tag and static["embedder_tag"].startswith("minilm-static-")
    db = store.open_store(p.settings())
    assert {table_name(tag), table_name(static["embedder_tag"])} <= set(db.list_tables().tables)
    assert db.open_table(table_name(tag)).count_rows() == first_rows
    assert static["vectors"] == first_rows


def test_bad_files_are_recorded_and_skipped(tmp_path: Path) -> None:
    p = make_project(tmp_path / "bad", with_golden=False)
    shutil.rmtree(p.corpus)
    p.corpus.mkdir()
    (p.corpus / "good.md").write_text("# Title\n\nA perfectly good paragraph about robots and their arms.\n")
    (p.corpus / "good.txt").write_text("Plain text that parses fine.\n\nA second paragraph.\n")
    (p.corpus / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage garbage\n%%EOF")
    (p.corpus / "empty.md").write_bytes(b"")
    (p.corpus / "binary.md").write_bytes(bytes(range(256)) * 4)
    (p.corpus / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e, na\xefve r\xe9sum\xe9.".encode("latin-1"))
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nOutside the corpus.\n")
    (p.corpus / "escape.md").symlink_to(outside)
    result = p.materialize(["corpus", "documents", "chunks"])
    assert sorted(r[0] for r in p.sql("SELECT doc_id FROM documents")) == ["good.md", "good.txt"]
    errors = {r[0]: r[1:] for r in p.sql("SELECT path, stage, error_class, message FROM ingest_errors")}
    assert set(errors) == {"corrupt.pdf", "empty.md", "binary.md", "latin1.txt", "escape.md"}
    assert errors["escape.md"][0] == "corpus" and "outside the corpus" in errors["escape.md"][2]
    assert "empty file" in errors["empty.md"][2]
    assert "binary content" in errors["binary.md"][2]
    assert "UTF-8" in errors["latin1.txt"][2] and "line 1" in errors["latin1.txt"][2]
    assert errors["corrupt.pdf"][0] == "parse"
    for path, (_, _, message) in errors.items():
        assert message.startswith(path), message  # every message names its file
    assert p.metadata(result, "documents")["ingest_errors"] == 5
    assert p.sql("SELECT count(*) FROM chunks")[0][0] >= 2
