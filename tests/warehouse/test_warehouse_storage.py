"""How the warehouse stores rows: what bounds a checkpoint's memory while a large corpus is ingested."""

from __future__ import annotations

from pathlib import Path

from ragpipe.warehouse import connect, drop_block_cache

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


def test_a_checkpoint_writes_only_new_rows(tmp_path: Path) -> None:
    # By default DuckDB's checkpoint merged the small row groups each commit-and-checkpoint leaves into one
    # ("vacuum"): every document's text so far, read into memory and written again, each time. Here row groups
    # written once stay as they are, whatever their size.
    with connect(tmp_path / "w.duckdb") as con:
        con.execute("CREATE TABLE docs (doc_id VARCHAR, text VARCHAR)")
        n = 0
        for _ in range(3):  # small commits, far below one row group
            _append(con, n, 300)
            n += 300
        before = con.execute(BLOCKS).fetchall()
        for _ in range(3):
            _append(con, n, 300)
            n += 300
        after = con.execute(BLOCKS).fetchall()
        assert after[: len(before)] == before, "row groups written earlier were rewritten by a later checkpoint"
        assert len(after) > len(before)
        assert con.execute("SELECT count(*), count(DISTINCT doc_id) FROM docs").fetchone() == (n, n)


def test_a_large_insert_is_split_into_small_row_groups(tmp_path: Path) -> None:
    with connect(tmp_path / "w.duckdb") as con:
        con.execute("CREATE TABLE docs (doc_id VARCHAR, text VARCHAR)")
        _append(con, 0, 5000)
        groups = con.execute("SELECT row_group_id, max(count) FROM pragma_storage_info('docs') GROUP BY 1").fetchall()
        assert len(groups) >= 3 and all(rows <= 2048 for _, rows in groups)


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


def _cached_mb(con) -> float:
    return con.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) / 2**20 FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
    ).fetchall()[0][0]


def _limit(con) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def test_the_block_cache_is_dropped_and_the_memory_limit_kept(tmp_path: Path) -> None:
    # DuckDB keeps what a query read until its memory limit: a stage reading every document would hold the corpus.
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute(
            "CREATE TABLE docs AS SELECT range AS id, md5(range::VARCHAR) || repeat('x', 2000) AS text FROM range(20000)"
        )
    with connect(path) as con:
        default = _limit(con)
        assert con.execute("SELECT sum(length(text)) FROM docs").fetchall()[0][0] > 40_000_000
        assert _cached_mb(con) > 5
        drop_block_cache(con)
        assert _cached_mb(con) < 1
        assert _limit(con) == default
        assert con.execute("SELECT count(*) FROM docs WHERE id % 2 = 0").fetchall()[0][0] == 10_000  # read again
        con.execute("SET memory_limit = '500MB'")
        mine = _limit(con)
        for _ in range(3):  # a limit the caller set is put back, and does not creep down call after call
            drop_block_cache(con)
            assert _limit(con) == mine
