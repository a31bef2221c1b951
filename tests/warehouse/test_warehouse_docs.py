"""docs/warehouse.md stays true: every SQL example runs on a real warehouse, and every table and view is documented.

The warehouse is built through the real CLI and Dagster graph with two eval runs under two embedders, so the queries
over time and across embedders have something to return.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT, make_project

from ragpipe.cli import main
from ragpipe.warehouse import SqlError, WarehouseBusy, run_sql

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]

DOC = ROOT / "docs" / "warehouse.md"

# Placeholders the docs tell readers to replace, mapped to values of the bundled example (identity when the docs already
# use those values; kept so a doc edit that switches to a placeholder style still runs).
PLACEHOLDERS = {
    ":question_id": "'neg_01'",
    ":doc_id": "'reports/q3-2023.md'",
    ":days": "30",
}

# Examples (by the heading above them) that must return at least two rows on a warehouse with two eval runs under
# two embedders.
AT_LEAST_TWO_ROWS = (
    "Verdicts over time",
    "The same test across embedders",
    "Retrieval metrics per embedder and chunker",
    "Tokens per embedder",
)


def sql_examples() -> list[tuple[str, str]]:
    """(heading, sql) for every ```sql block of the docs, the heading being the nearest one above it."""
    heading, out = "", []
    for m in re.finditer(r"^(#{1,6}) +(.+?)\s*$|^```sql\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S):
        if m.group(2) is not None:
            heading = m.group(2)
        else:
            sql = m.group(3)
            for key, value in PLACEHOLDERS.items():
                sql = sql.replace(key, value)
            out.append((heading, sql))
    return out


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example evaluated by `ragpipe ci` under minilm, then again under minilm-static."""
    root = tmp_path_factory.mktemp("warehouse_docs") / "proj"
    p = make_project(root)
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root))
    try:
        assert main(["--settings", str(p.settings_file), "ci"]) in (0, 1)
        p.configure(embedder="minilm-static")
        assert main(["--settings", str(p.settings_file), "ci"]) in (0, 1)
    finally:
        mp.undo()
    db = p.settings().duckdb_path
    with duckdb.connect(str(db), read_only=True) as con:
        assert (
            con.execute(
                "SELECT count(DISTINCT embedder_tag) FROM eval_runs WHERE verdict_run_id IS NOT NULL"
            ).fetchone()[0]
            == 2
        )
    return db


@pytest.fixture
def con(warehouse: Path):
    c = duckdb.connect(str(warehouse), read_only=True)
    yield c
    c.close()


def test_docs_have_the_required_examples() -> None:
    headings = {h for h, _ in sql_examples()}
    for required in (
        "Verdict counts of the latest run",
        "Verdicts over time",
        "The same test across embedders",
        "Flapping tests",
        "Tests that have not run for N days",
        "Retrieval metrics per embedder and chunker",
        "Stamp changes under the current chunker",
        "Ingest errors by stage",
        "The slowest answers",
        "Chunks of one document with spans",
        "Tokens per embedder",
    ):
        assert required in headings, f"docs/warehouse.md has no ```sql example under '### {required}'"


def test_every_sql_example_runs(con: duckdb.DuckDBPyConnection) -> None:
    examples = sql_examples()
    assert len(examples) >= 11
    failures, rows_by_heading = [], {}
    for heading, sql in examples:
        try:
            rows = con.execute(sql).fetchall()
        except duckdb.Error as exc:
            failures.append(f"[{heading}] {exc}\n{sql}")
            continue
        rows_by_heading.setdefault(heading, []).append(len(rows))
    assert not failures, "\n\n".join(failures)
    for heading in AT_LEAST_TWO_ROWS:
        assert all(n >= 2 for n in rows_by_heading[heading]), (heading, rows_by_heading[heading])
    # examples over the latest run and one document are not empty either
    for heading in ("Verdict counts of the latest run", "The slowest answers", "Chunks of one document with spans"):
        assert all(n >= 1 for n in rows_by_heading[heading]), (heading, rows_by_heading[heading])


def test_examples_agree_with_the_stored_figures(con: duckdb.DuckDBPyConnection) -> None:
    """The recomputed retrieval metrics equal the ones each run stored; spans cut chunk texts out of documents."""
    blocks = [s for h, s in sql_examples() if h == "Retrieval metrics per embedder and chunker"]
    assert len(blocks) == 2
    stored = {r[:3]: r[3:] for r in con.execute(blocks[0]).fetchall()}
    recomputed = {r[:3]: r[4:] for r in con.execute(blocks[1]).fetchall()}
    assert stored.keys() == recomputed.keys()
    for key in stored:
        eval_runs, *m = stored[key]
        assert m == pytest.approx(list(recomputed[key]), abs=1e-3), key
    spans = [s for h, s in sql_examples() if h == "Chunks of one document with spans"][0]
    assert all(r[7] for r in con.execute(spans).fetchall())
    # the same test across embedders: one row per embedder, both embedders of the fixture
    across = [s for h, s in sql_examples() if h == "The same test across embedders"][0]
    tags = [r[0] for r in con.execute(across).fetchall()]
    assert len(set(tags)) == 2 and any(t.startswith("minilm-static-") for t in tags)


def test_every_table_and_view_is_documented(con: duckdb.DuckDBPyConnection) -> None:
    text = DOC.read_text(encoding="utf-8")
    names = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
        ).fetchall()
    ]
    assert {"verdicts", "latest_verdicts", "_migrations"} <= set(names)
    missing = [n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", text)]
    assert not missing, f"docs/warehouse.md does not mention these tables or views: {missing}"
    # the tables and views of the ragpipe evaluation each have their own section
    for name in (
        "corpus_files",
        "documents",
        "ingest_errors",
        "chunks",
        "embeddings",
        "stage_runs",
        "golden_tests",
        "stamps",
        "eval_runs",
        "retrievals",
        "answers",
        "verdicts",
        "latest_eval_run",
        "latest_verdicts",
        "did_not_run",
        "unverified",
        "latest_stamps",
        "stamp_changes",
        "verdict_history",
        "eval_run_summary",
        "_migrations",
    ):
        assert name in names and f"### {name}\n" in text, name
    # and every migration file is named in the Migrations section
    files = sorted(p.name for p in (ROOT / "ragpipe" / "warehouse" / "migrations").glob("[0-9][0-9][0-9]_*.sql"))
    versions = [r[0] for r in con.execute("SELECT version FROM _migrations ORDER BY version").fetchall()]
    assert versions == [int(f[:3]) for f in files]
    assert all(f in text for f in files), files


def test_ragpipe_sql_waits_then_says_a_run_is_writing(warehouse: Path, tmp_path: Path) -> None:
    """The lock rule as documented: a writer in another process makes `ragpipe sql` give up after --wait."""
    db = tmp_path / "ragpipe.duckdb"
    db.write_bytes(warehouse.read_bytes())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        with pytest.raises(WarehouseBusy, match="a ragpipe run is writing"):
            run_sql(db, "SELECT count(*) FROM verdicts", wait_s=1.0)
        assert time.monotonic() - t0 >= 1.0
    finally:
        holder.kill()
        holder.wait()
    result = run_sql(db, "SELECT count(*) AS n FROM latest_verdicts")
    assert result.columns == ["n"] and result.rows[0][0] > 0
    # read-only: writes and file access are refused, with what to do
    with pytest.raises(SqlError, match="read-only: write statements are refused"):
        run_sql(db, "DELETE FROM verdicts")
    with pytest.raises(SqlError, match="reading or writing files"):
        run_sql(db, f"COPY verdicts TO '{tmp_path / 'out.csv'}'")
