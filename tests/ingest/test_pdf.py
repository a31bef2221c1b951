"""The pdfium PDF engine: element types, page numbers, spans that slice back, and an engine switch that re-parses
exactly the PDFs (real pypdfium2, unstructured elements and DuckDB; PDFs drawn with reportlab or bundled)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, project_settings, write_settings

from ragpipe.ingest import (
    ParseError,
    chunk_documents,
    element_offsets,
    elements_from_json,
    parse_documents,
    parse_file,
    sync_corpus,
)
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect

BODY = (
    "The warranty covers parts and labour for twenty-four months from the date of delivery, provided the arm was "
    "installed by a certified integrator and serviced at the intervals in the maintenance schedule."
)


def draw_pdf(path: Path, pages: list[list[tuple[str, str]]]) -> Path:
    """A PDF with one entry per line: ("h", heading) in 18 pt, ("p", paragraph) wrapped in 10 pt, ("b", bullet),
    and each page's number printed alone at its foot."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    width, height = A4
    for number, page in enumerate(pages, 1):
        y = height - 72
        for kind, text in page:
            if kind == "h":
                y -= 12
                c.setFont("Helvetica-Bold", 18)
                c.drawString(72, y, text)
                y -= 26
                continue
            c.setFont("Helvetica", 10)
            lines = simpleSplit(text, "Helvetica", 10, width - 144 - (12 if kind == "b" else 0))
            for i, line in enumerate(lines):
                prefix = "\u2022 " if kind == "b" and i == 0 else ""
                c.drawString(72 + (0 if prefix or kind != "b" else 12), y, prefix + line)
                y -= 12
            y -= 10  # the gap between paragraphs
        c.setFont("Helvetica", 9)
        c.drawString(width / 2, 40, str(number))
        c.showPage()
    c.save()
    return path


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pages = [
        [
            ("h", "Warranty terms"),
            ("p", BODY),
            ("p", "Claims are made through the service portal."),
            ("h", "Exclusions"),
        ],
        [
            ("p", "The warranty does not cover:"),
            ("b", "damage from collisions with fixtures that were not in the validated cell layout"),
            ("b", "wear of the gripper fingers"),
            ("h", "Contact"),
            ("p", "Write to the service desk with the serial number printed on the base of the arm."),
        ],
    ]
    return draw_pdf(tmp_path_factory.mktemp("pdf") / "manual.pdf", pages)


def kinds(doc) -> list[tuple[str, str, int]]:
    return [(type(e).__name__, e.text, e.metadata.page_number) for e in doc.elements]


def test_titles_paragraphs_and_list_items(manual: Path) -> None:
    doc = parse_file(manual, pdf_engine="pdfium")
    got = kinds(doc)
    assert got[0] == ("Title", "Warranty terms", 1)
    assert ("NarrativeText", BODY, 1) in got  # a wrapped paragraph is one element, its lines joined by one space
    assert ("NarrativeText", "Claims are made through the service portal.", 1) in got
    titles = [t for k, t, _ in got if k == "Title"]
    assert titles == ["Warranty terms", "Exclusions", "Contact"]
    items = [(t, pg) for k, t, pg in got if k == "ListItem"]
    assert [t.lstrip("\u2022 ") for t, _ in items] == [
        "damage from collisions with fixtures that were not in the validated cell layout",
        "wear of the gripper fingers",
    ]
    assert {pg for _, pg in items} == {2}


def test_page_numbers_in_metadata_not_in_text(manual: Path) -> None:
    doc = parse_file(manual, pdf_engine="pdfium")
    assert [e.metadata.page_number for e in doc.elements] == sorted(e.metadata.page_number for e in doc.elements)
    assert {e.metadata.page_number for e in doc.elements} == {1, 2}
    assert all(e.text.strip() not in {"1", "2"} for e in doc.elements)  # the printed page numbers are left out


def test_spans_slice_back_through_the_stored_form(manual: Path) -> None:
    doc = parse_file(manual, pdf_engine="pdfium")
    for e, (start, end) in zip(doc.elements, doc.offsets):
        assert doc.text[start:end] == e.text
    again = elements_from_json(doc.elements_json(), doc.text)
    assert [(type(e).__name__, e.text, e.metadata.page_number) for e in again] == kinds(doc)
    assert element_offsets(again) == doc.offsets
    assert [e.id for e in parse_file(manual, pdf_engine="pdfium").elements] == [e.id for e in doc.elements]


def test_real_pdf_dehyphenates_and_keeps_every_page() -> None:
    """glpk's cnfsat.pdf (TeX, hyphenated): pdfium marks a word broken at a line end; it comes back whole."""
    path = Path(__file__).resolve().parents[3] / "shared/data/realdocs/docs/pdf/glpk/cnfsat.pdf"
    if not path.exists():
        pytest.skip("../shared/data/realdocs is not beside this checkout")
    import pypdfium2 as pdfium

    n_pages = len(pdfium.PdfDocument(str(path)))
    doc = parse_file(path, pdf_engine="pdfium")
    assert {e.metadata.page_number for e in doc.elements} == set(range(1, n_pages + 1))
    assert "Satisfiability Problem" in doc.text and "(cid:" not in doc.text
    assert "\ufffe" not in doc.text and "\x02" not in doc.text
    assert type(doc.elements[0]).__name__ == "Title"


def test_damaged_pdf_is_a_parse_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    with pytest.raises(ParseError, match="bad.pdf: pdfium cannot open it"):
        parse_file(bad, pdf_engine="pdfium")


def test_engine_switch_reparses_and_rechunks_exactly_the_pdfs(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "corpus", tmp_path / "corpus")
    n_pdfs = sum(1 for _ in (tmp_path / "corpus").rglob("*.pdf"))
    n_files = sum(1 for f in (tmp_path / "corpus").rglob("*") if f.is_file())
    assert 0 < n_pdfs < n_files

    def run(engine: str) -> tuple[dict, dict]:
        sections = project_settings()
        sections["parser"] = {"pdf_engine": engine}
        s = load_settings(write_settings(tmp_path / "ragpipe.toml", sections))
        with connect(s.duckdb_path) as con:
            sync_corpus(s, con, f"run-{engine}")
            return parse_documents(s, con, f"run-{engine}"), chunk_documents(s, con, f"run-{engine}")

    parsed, chunked = run("pdfium")
    assert parsed["parsed_this_run"] == n_files and chunked["rechunked_documents"] == n_files
    parsed, chunked = run("unstructured")
    assert parsed["parsed_this_run"] == n_pdfs and parsed["unchanged"] == n_files - n_pdfs
    assert chunked["rechunked_documents"] == n_pdfs
    parsed, chunked = run("unstructured")
    assert parsed["parsed_this_run"] == 0 and chunked["rechunked_documents"] == 0
    s = load_settings(tmp_path / "ragpipe.toml")
    with connect(s.duckdb_path, read_only=True) as con:
        tags = dict(
            con.execute("SELECT format = 'pdf', list(DISTINCT parser_tag) FROM documents GROUP BY 1").fetchall()
        )
    assert tags == {True: ["unstructured-fast"], False: [""]}
