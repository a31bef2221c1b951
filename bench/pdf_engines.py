"""PDF parsing: pages/s of bare pdfium, pdfminer, ragpipe's pdfium engine and unstructured's partition_pdf, in one run,
and the PDF golden set's anchor hit@k and quotes found under each engine.

    .venv/bin/python bench/pdf_engines.py                      # realdocs PDFs up to 1 MB (16 files), then quality
    .venv/bin/python bench/pdf_engines.py --max-mb 0           # every realdocs PDF (octave.pdf alone: minutes)
    .venv/bin/python bench/pdf_engines.py --skip-quality       # speed only

Speed: every file is read by each method in turn, in this process, one after the other (text extraction only for
pdfium and pdfminer; elements for the two ragpipe engines). Quality: for each engine, a warehouse over the PDFs that
bench/data/pdf_golden.jsonl quotes (24 tests over 12 PDFs), chunked by_title 800/600, embedded with minilm, stamped,
retrieved (hybrid top-5): hit@5 and MRR of the quote's anchor chunks, and how many quotes were found in the chunks.
Results: bench/results/pdf_engines.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from _common import DEFAULT_DOCS, RESULTS, ROOT, machine, write_json

GOLDEN = ROOT / "bench" / "data" / "pdf_golden.jsonl"


def pdf_files(docs: Path, max_mb: float) -> list[Path]:
    files = sorted(docs.rglob("*.pdf"), key=lambda p: p.stat().st_size)
    return [p for p in files if not max_mb or p.stat().st_size <= max_mb * 1e6]


def pdfium_text(path: Path) -> int:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    n = sum(len(doc[i].get_textpage().get_text_range()) for i in range(len(doc)))
    doc.close()
    return n


def pdfminer_text(path: Path) -> int:
    from pdfminer.high_level import extract_text

    return len(extract_text(str(path)))


def ragpipe_engine(engine: str) -> Callable[[Path], int]:
    from ragpipe.ingest import parse_file

    return lambda path: len(parse_file(path, pdf_engine=engine, timeout_s=0).text)


def speed(files: list[Path], docs: Path) -> dict[str, Any]:
    import pypdfium2 as pdfium

    methods = {
        "pdfium (bare text)": pdfium_text,
        "pdfminer extract_text": pdfminer_text,
        "ragpipe pdfium engine": ragpipe_engine("pdfium"),
        "ragpipe unstructured engine (fast)": ragpipe_engine("unstructured"),
    }
    for fn in methods.values():  # imports and spaCy loaded before timing
        fn(ROOT / "examples/corpus/reports/q2-2024.pdf")
    rows = []
    for path in files:
        pages = len(pdfium.PdfDocument(str(path)))
        row: dict[str, Any] = {"file": str(path.relative_to(docs)), "pages": pages, "bytes": path.stat().st_size}
        for name, fn in methods.items():
            t0 = time.perf_counter()
            chars = fn(path)
            row[name] = {"s": time.perf_counter() - t0, "chars": chars}
        rows.append(row)
        print(
            f"{row['file']:<48} {pages:>5} p  "
            + "  ".join(
                f"{name.split(' ')[0] + ('/' + name.split(' ')[1] if name.startswith('ragpipe') else '')}"
                f" {row[name]['s']:.2f}s"
                for name in methods
            ),
            flush=True,
        )
    pages = sum(r["pages"] for r in rows)
    totals = {name: sum(r[name]["s"] for r in rows) for name in methods}
    slowest = max(rows, key=lambda r: r["ragpipe unstructured engine (fast)"]["s"])
    return {
        "files": len(rows),
        "pages": pages,
        "seconds": totals,
        "pages_per_s": {name: pages / s for name, s in totals.items()},
        "new_vs_bare_pdfium": totals["ragpipe pdfium engine"] / totals["pdfium (bare text)"],
        "old_vs_new": totals["ragpipe unstructured engine (fast)"] / totals["ragpipe pdfium engine"],
        "slowest_old": {
            "file": slowest["file"],
            "pages": slowest["pages"],
            **slowest["ragpipe unstructured engine (fast)"],
        },
        "rows": rows,
    }


def quality(docs: Path, engine: str, work: Path) -> dict[str, Any]:
    from ragpipe import embed, evaluate, ingest
    from ragpipe.settings import load_settings
    from ragpipe.warehouse import connect

    sources = sorted({json.loads(line)["evidence_source"] for line in GOLDEN.read_text().splitlines() if line})
    corpus = work / "corpus"
    for rel in sources:
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(docs / rel, corpus / rel)  # a temporary copy: the corpus scan refuses symlinks leaving it
    (work / "ragpipe.toml").write_text(
        f'[warehouse]\ndir = "{work / "warehouse"}"\n[corpus]\ndir = "{corpus}"\n'
        f'[parser]\npdf_engine = "{engine}"\ntimeout_s = 3600.0\n[golden]\npath = "{GOLDEN}"\n'
        '[retriever]\nmode = "hybrid"\nk = 5\n',
        encoding="utf-8",
    )
    s = load_settings(work / "ragpipe.toml")
    t0 = time.perf_counter()
    with connect(s.duckdb_path) as con:
        rid = f"pdf-{engine}"
        ingest.sync_corpus(s, con, rid)
        parsed = ingest.parse_documents(s, con, rid)
        chunks = ingest.chunk_documents(s, con, rid)
        embed.embed_chunks(s, con, rid)
        evaluate.load_golden_stage(s, con, rid)
        stamps = evaluate.stamp_stage(s, con, rid)
        r = evaluate.retrieve_stage(s, con, rid)
        found = con.execute(
            "SELECT count(*) FROM latest_stamps WHERE new_ids IS NOT NULL AND len(new_ids) > 0"
        ).fetchone()[0]
    return {
        "engine": engine,
        "documents": parsed["documents"],
        "elements": parsed["elements"],
        "chunks": chunks["chunks"],
        "tests": stamps["tests"],
        "quotes_found": found,
        "hit_at_k": r["hit_at_k"],
        "hit_at_k_all_tests": r["hit_at_k"] * r["n"] / stamps["tests"],  # a quote not found is a miss
        "mrr": r["mrr"],
        "k": r["k"],
        "n_scored": r["n"],
        "seconds": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--max-mb", type=float, default=1.0, help="only PDFs up to this size (0: all)")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-quality", action="store_true")
    args = ap.parse_args()
    out: dict[str, Any] = {"machine": machine()}
    if not args.skip_speed:
        out["speed"] = sp = speed(pdf_files(args.docs, args.max_mb), args.docs)
        print(f"\n{sp['files']} PDFs, {sp['pages']} pages:")
        for name, pps in sp["pages_per_s"].items():
            print(f"  {name:<36} {sp['seconds'][name]:8.2f} s  {pps:8.1f} pages/s")
        print(f"  ragpipe pdfium engine / bare pdfium: {sp['new_vs_bare_pdfium']:.2f}x the time")
        print(f"  unstructured engine / pdfium engine: {sp['old_vs_new']:.1f}x the time")
        so = sp["slowest_old"]
        print(f"  slowest under the unstructured engine: {so['file']} ({so['pages']} pages) {so['s']:.1f} s")
    if not args.skip_quality:
        out["quality"] = []
        for engine in ("unstructured", "pdfium"):
            with tempfile.TemporaryDirectory() as tmp:
                q = quality(args.docs, engine, Path(tmp))
            out["quality"].append(q)
            print(
                f"quality {engine:<13} {q['documents']} PDFs, {q['chunks']} chunks; quotes found "
                f"{q['quotes_found']}/{q['tests']}; hit@{q['k']} {q['hit_at_k_all_tests']:.3f} over all tests "
                f"({q['hit_at_k']:.3f}, MRR {q['mrr']:.3f} over the {q['n_scored']} with an anchor); {q['seconds']:.0f} s",
                flush=True,
            )
    write_json(RESULTS / "pdf_engines.json", out)


if __name__ == "__main__":
    main()
