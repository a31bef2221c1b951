"""Build the PDF documents of the example corpus from their text sources.

Every ``examples/pdf_src/<folder>/<name>.txt`` becomes
``examples/corpus/<folder>/<name>.pdf``.  The output is byte-identical on every
run (reportlab ``invariant=1``), so regenerated PDFs do not show up as changes.

Source format (deliberately tiny):

* ``# Title``        -> document title (also the PDF metadata title)
* ``## Heading``     -> section heading
* ``| a | b``        -> table row; consecutive rows form one table, the first
                        row is the header
* any other lines    -> paragraph text; paragraphs are separated by blank lines

Usage:  python examples/make_pdfs.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape

from reportlab import rl_config

rl_config.invariant = 1

from reportlab.lib import colors  # noqa: E402
from reportlab.lib.pagesizes import LETTER  # noqa: E402
from reportlab.lib.styles import getSampleStyleSheet  # noqa: E402
from reportlab.lib.units import inch  # noqa: E402
from reportlab.platypus import (  # noqa: E402
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

HERE = Path(__file__).resolve().parent
SRC_DIR = HERE / "pdf_src"
OUT_DIR = HERE / "corpus"


def parse_source(text: str) -> list[tuple[str, object]]:
    """Split a source file into ("title"|"h2"|"p", str) and ("table", rows) blocks."""
    blocks: list[tuple[str, object]] = []
    para: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if para:
            blocks.append(("p", " ".join(para)))
            para.clear()
        if table:
            blocks.append(("table", [row[:] for row in table]))
            table.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("## "):
            flush()
            blocks.append(("h2", line[3:].strip()))
        elif line.startswith("# "):
            flush()
            blocks.append(("title", line[2:].strip()))
        elif line.startswith("|"):
            if para:
                flush()
            table.append([c.strip() for c in line.strip("|").split("|")])
        else:
            if table:
                flush()
            para.append(line)
    flush()
    return blocks


def build_pdf(src: Path, dst: Path) -> None:
    styles = getSampleStyleSheet()
    blocks = parse_source(src.read_text(encoding="ascii"))
    title = next((str(b) for k, b in blocks if k == "title"), src.stem)

    story = []
    for kind, body in blocks:
        if kind == "title":
            story.append(Paragraph(escape(str(body)), styles["Title"]))
        elif kind == "h2":
            story.append(Paragraph(escape(str(body)), styles["Heading2"]))
        elif kind == "p":
            story.append(Paragraph(escape(str(body)), styles["BodyText"]))
        elif kind == "table":
            rows = body  # type: ignore[assignment]
            width = max(len(r) for r in rows)
            rows = [r + [""] * (width - len(r)) for r in rows]
            tbl = Table(rows, hAlign="LEFT")
            tbl.setStyle(
                TableStyle(
                    [
                        ("FONTNAME", (0, 0), (-1, -1), "Helvetica"),
                        ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                        ("FONTSIZE", (0, 0), (-1, -1), 9),
                        ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                        ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                        ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ]
                )
            )
            story.append(Spacer(1, 4))
            story.append(tbl)
            story.append(Spacer(1, 8))

    dst.parent.mkdir(parents=True, exist_ok=True)
    doc = SimpleDocTemplate(
        str(dst),
        pagesize=LETTER,
        leftMargin=inch,
        rightMargin=inch,
        topMargin=inch,
        bottomMargin=inch,
        title=title,
        author="Halvorsen Robotics (fictional example corpus)",
        subject="ragpipe example corpus",
        creator="examples/make_pdfs.py",
        invariant=1,
    )
    doc.build(story)


def main() -> int:
    sources = sorted(SRC_DIR.rglob("*.txt"))
    if not sources:
        print(f"no sources found under {SRC_DIR}", file=sys.stderr)
        return 1
    for src in sources:
        rel = src.relative_to(SRC_DIR).with_suffix(".pdf")
        dst = OUT_DIR / rel
        build_pdf(src, dst)
        print(f"wrote {dst.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
