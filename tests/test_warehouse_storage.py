"""How the warehouse stores rows: what bounds a checkpoint's memory while a large corpus is ingested."""

from __future__ import annotations

from pathlib import Path

from ragpipe.warehouse import connect

BLOCKS = (
    "SELECT row_group_id, list(DISTINCT block_id ORDER BY block_id) FROM pragma_storage_info('docs') "
    "WHERE block_id >= 0 GROUP BY 1 ORDER BY 1"
)


def _append(con, start: int, n: int) -> None:
    """One parse-stage-like commit of n documents of ~1 KB, then a checkpoint (as DuckDB's automatic one)."""
    con.execute(
        "INSERT INTO docs SELECT range::VARCHAR, repeat('word ', 200) || range FROM range(?, ?)", [start, start + n]
    )
    con.execute("CHECKPOINT")


def test_a_checkpoint_leaves_full_row_groups_alone(tmp_path: Path) -> None:
    # With DuckDB's default row groups (122,880 rows) every checkpoint during parsing rewrote the one growing row
    # group: every document's text so far, read into memory and written again. Bounded groups are left on disk.
    with connect(tmp_path / "w.duckdb") as con:
        con.execute("CREATE TABLE docs (doc_id VARCHAR, text VARCHAR)")
        step, n = 600, 0
        while n < 3000:  # past one row group of at most 2,048 rows
            _append(con, n, step)
            n += step
        before = con.execute(BLOCKS).fetchall()
        assert len(before) >= 2
        for _ in range(3):
            _append(con, n, step)
            n += step
        after = con.execute(BLOCKS).fetchall()
        assert after[0] == before[0], "the first, full row group was rewritten by a later checkpoint"
        assert con.execute("SELECT count(*), count(DISTINCT doc_id) FROM docs").fetchone() == (n, n)
        rows = con.execute("SELECT max(count) FROM pragma_storage_info('docs')").fetchone()[0]
        assert rows <= 2048


def test_read_only_connection_reads_the_same_catalog(tmp_path: Path) -> None:
    path = tmp_path / "ragpipe.duckdb"
    with connect(path) as con:
        con.execute("CREATE TABLE docs (doc_id VARCHAR, text VARCHAR)")
        _append(con, 0, 10)
    with connect(path, read_only=True) as con:
        assert con.execute("SELECT current_database(), count(*) FROM docs").fetchone() == ("ragpipe", 10)


def test_spill_files_go_beside_the_warehouse(tmp_path: Path) -> None:
    path = tmp_path / "ragpipe.duckdb"
    with connect(path) as con:
        assert con.execute("SELECT current_setting('temp_directory')").fetchone()[0] == f"{path}.tmp"
