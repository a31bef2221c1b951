"""What the documents stage spends writing parses into DuckDB, apart from parsing: the parses already stored in a
warehouse are written again, through the stage's own `record_parses`, into fresh warehouses.

    .venv/bin/python bench/record_parses.py [--warehouse bench/results/suggest_realdocs/warehouse] [--repeats 2]

The default warehouse is the one `bench/suggest.py realdocs` leaves (all 188 realdocs files parsed). Prints the
documents, their text and stored elements (MB), and the seconds per repeat, whole and per document.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import duckdb

from ragpipe.ingest.stages import ParseResult, record_parses
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, default=Path("bench/results/suggest_realdocs/warehouse"))
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    with duckdb.connect(str(args.warehouse / "ragpipe.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT doc_id, sha256, parse_seconds, format, n_elements, text, elements_json FROM documents ORDER BY doc_id"
        ).fetchall()
    results = [ParseResult(*row) for row in rows]
    mb = sum(len(r.text) + len(r.elements_json) for r in results) / 1e6
    print(f"{len(results)} documents, {mb:.1f} MB of text and stored elements")
    work = Path(tempfile.mkdtemp(prefix="ragpipe-record-"))
    try:
        (work / "ragpipe.toml").write_text('[corpus]\ndir = "corpus"\n', encoding="utf-8")
        settings = load_settings(work / "ragpipe.toml")
        for rep in range(args.repeats):
            with connect(work / f"w{rep}.duckdb") as con:
                t0 = time.perf_counter()
                record_parses(settings, con, f"bench-{rep}", results, len(results))
                secs = time.perf_counter() - t0
            print(f"repeat {rep}: {secs:.2f} s, {secs / len(results) * 1000:.1f} ms per document")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
