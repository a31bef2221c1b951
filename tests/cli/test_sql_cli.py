"""`ragpipe sql` against a real warehouse: formats, read-only refusal, stdin, and another process holding the lock."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, Project, make_project

pytestmark = [pytest.mark.slow, pytest.mark.dagster]

COUNTS = "SELECT (SELECT count(*) FROM documents) AS docs, (SELECT count(*) FROM chunks) AS chunks"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A small warehouse: corpus -> documents -> chunks (no embedding), materialized once for the module."""
    p = make_project(tmp_path_factory.mktemp("sql") / "proj", with_golden=False)
    p.materialize(["corpus", "documents", "chunks"])
    assert p.settings().duckdb_path.is_file()
    return p


def ragpipe(p: Project, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real command line in its own process (`python -m ragpipe.cli`)."""
    return subprocess.run(
        [sys.executable, "-m", "ragpipe.cli", "--settings", str(p.settings_file), "sql", *args],
        cwd=ROOT,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def counts(p: Project) -> tuple[int, int]:
    docs, chunks = p.sql(COUNTS)[0]
    return int(docs), int(chunks)


def test_sql_formats(warehouse: Project) -> None:
    docs, chunks = counts(warehouse)
    assert docs > 0 and chunks >= docs

    r = ragpipe(warehouse, "SELECT count(*) AS n FROM documents")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].split() == ["n"]
    assert set(lines[1].strip()) == {"-"}
    assert lines[2].strip() == str(docs)
    assert lines[-1] == "(1 row)"

    r = ragpipe(warehouse, "--format", "csv", COUNTS)
    assert r.returncode == 0, r.stderr
    assert list(csv.DictReader(io.StringIO(r.stdout))) == [{"docs": str(docs), "chunks": str(chunks)}]

    r = ragpipe(warehouse, "--format", "json", COUNTS)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"docs": docs, "chunks": chunks}]

    r = ragpipe(warehouse, "--format", "markdown", COUNTS)
    assert r.returncode == 0, r.stderr
    md = r.stdout.strip().splitlines()
    assert md[0] == "| docs | chunks |"
    assert md[1].startswith("|---|")
    assert [c.strip() for c in md[2].strip("|").split("|")] == [str(docs), str(chunks)]
    assert len(md) == 3

    # several rows, a string column and a NULL come through JSON and CSV intact
    q = "SELECT doc_id, NULL AS nothing FROM documents ORDER BY doc_id"
    expected = sorted(r[0] for r in warehouse.sql("SELECT doc_id FROM documents"))
    r = ragpipe(warehouse, "--format", "json", q)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["doc_id"] for row in rows] == expected and all(row["nothing"] is None for row in rows)
    r = ragpipe(warehouse, "--format", "csv", q)
    assert [row["doc_id"] for row in csv.DictReader(io.StringIO(r.stdout))] == expected


@pytest.mark.parametrize("statement", ["DELETE FROM documents", "CREATE TABLE x(a int)", "DROP TABLE chunks"])
def test_sql_refuses_writes(warehouse: Project, statement: str) -> None:
    before = counts(warehouse)
    r = ragpipe(warehouse, statement)
    assert r.returncode != 0
    assert "read-only" in r.stderr.lower(), r.stderr
    assert "Traceback" not in r.stderr
    assert counts(warehouse) == before
    assert not warehouse.sql("SELECT * FROM information_schema.tables WHERE table_name = 'x'")


def test_sql_from_stdin(warehouse: Project) -> None:
    docs, _ = counts(warehouse)
    r = ragpipe(warehouse, "--format", "json", stdin="SELECT count(*) AS n\nFROM documents;\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"n": docs}]


def test_sql_bad_query_is_an_error_not_a_traceback(warehouse: Project) -> None:
    r = ragpipe(warehouse, "SELECT * FROM no_such_table")
    assert r.returncode == 2
    assert "SQL error" in r.stderr and "no_such_table" in r.stderr
    assert "Traceback" not in r.stderr


LOCKER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: holds the writer lock on the file
con.execute("SELECT 1").fetchall()
print("LOCKED", flush=True)
time.sleep(20)
"""


def test_sql_while_another_process_holds_the_lock(warehouse: Project) -> None:
    before = counts(warehouse)
    db = warehouse.settings().duckdb_path
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert locker.stdout is not None
        assert locker.stdout.readline().strip() == "LOCKED", locker.stderr.read() if locker.stderr else ""

        t0 = time.monotonic()
        r = ragpipe(warehouse, "--wait", "2", "SELECT 1", timeout=30)
        elapsed = time.monotonic() - t0
        assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
        assert elapsed < 10, elapsed
        assert "locked by another process" in r.stderr
        assert "Traceback" not in r.stderr and "IOException" not in r.stderr and "_duckdb" not in r.stderr
        assert r.stdout == ""
        assert locker.poll() is None  # the lock was really held the whole time
    finally:
        os.killpg(locker.pid, signal.SIGKILL)
        locker.wait(timeout=10)

    r = ragpipe(warehouse, "--format", "json", COUNTS)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"docs": before[0], "chunks": before[1]}]
    r = ragpipe(warehouse, "SELECT 1 AS one")
    assert r.returncode == 0 and r.stdout.splitlines()[2].strip() == "1"
