"""The DuckDB warehouse: connections with bounded lock waits, and numbered SQL migrations."""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

import duckdb

from ragpipe.core import RagpipeError

MIGRATIONS_PACKAGE = "ragpipe.warehouse.migrations"

# How the warehouse file is written. Parsing commits one document at a time and DuckDB checkpoints every 16 MB of
# log; by default each checkpoint merged the small row groups written since the last one into what came before
# ("vacuum"), re-reading and re-writing every document so far: at 1,680 documents (48 MB of text, 64 MB of
# elements) that spiked to +440 MB and grew with the corpus. With no vacuum tasks a checkpoint writes only new rows
# (+131 MB for the same inserts; rows deleted from a row group stay as tombstones until the group is fully deleted),
# and row groups of 2,048 rows (the smallest DuckDB allows; default 122,880) bound what a large insert holds.
# Neither is stored in the file: every connection made here sets them.
ROW_GROUP_SIZE = 2048
MAX_VACUUM_TASKS = 0


class WarehouseBusy(RagpipeError, RuntimeError):
    """Another process holds the DuckDB writer lock for longer than we were willing to wait."""


def migrations() -> list[tuple[int, str, str]]:
    """(number, name, sql) for every ragpipe/warehouse/migrations/NNN_name.sql, in order."""
    found = []
    for entry in resources.files(MIGRATIONS_PACKAGE).iterdir():
        m = re.fullmatch(r"(\d{3})_(\w+)\.sql", entry.name)
        if m:
            found.append((int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply pending migrations, each in its own transaction; returns the numbers applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)"
    )
    done = {r[0] for r in con.execute("SELECT version FROM _migrations").fetchall()}
    applied = []
    for number, name, sql in migrations():
        if number in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO _migrations VALUES (?, ?, now())", [number, name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(number)
    return applied


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "could not set lock" in text


def _attach(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """The warehouse file attached (under the name duckdb.connect(path) would give it) and made the default catalog.

    Attached rather than opened directly because the row group size is an ATTACH option only.
    """
    # Spill files go beside the file, as for duckdb.connect(path), not into the working directory.
    con = duckdb.connect(config={"temp_directory": f"{path}.tmp", "max_vacuum_tasks": str(MAX_VACUUM_TASKS)})
    options = ["READ_ONLY"] if read_only else [f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}"]
    stem = path.stem if path.stem.lower() not in ("memory", "system", "temp", "main") else "warehouse"
    name = '"' + stem.replace('"', '""') + '"'
    try:
        con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {name} ({', '.join(options)})")
        con.execute(f"USE {name}")
    except BaseException:
        con.close()
        raise
    return con


@contextmanager
def connect(path: Path, read_only: bool = False, wait_s: float = 30.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse, waiting up to `wait_s` for another process's writer lock; migrate when writing."""
    path = Path(path)
    if read_only and not path.exists():
        raise FileNotFoundError(f"no warehouse at {path}; run `make demo` or `ragpipe ci` first to create it")
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        try:
            con = _attach(path, read_only)
            break
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise
            if time.monotonic() >= deadline:
                raise WarehouseBusy(
                    f"the warehouse {path} is locked by another process (a ragpipe run is writing); "
                    f"waited {wait_s:g} s. Try again when the run has finished."
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    try:
        if not read_only:
            migrate(con)
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All-or-nothing writes: a run killed half-way leaves the previous state, and the next run redoes the work."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _memory_limit(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def drop_block_cache(con: duckdb.DuckDBPyConnection) -> None:
    """Evict the table blocks DuckDB keeps cached for this connection; they are read from the file again when needed.

    DuckDB keeps every block a query read or wrote until its memory_limit (80 % of RAM by default) is reached, so a
    stage that reads the whole corpus one piece at a time (chunking reads every document, embedding every chunk's
    text) would end up holding all of it: 92 MB after chunking 10x realdocs. Lowering the limit evicts every block
    not in use; the limit is then put back: DuckDB's default exactly, a limit the caller set to the 0.1 of a unit that
    DuckDB shows it with (e.g. "476.8 MiB" for 500MB).
    """
    before = _memory_limit(con)
    try:
        con.execute("SET memory_limit = '1MB'")
    except duckdb.OutOfMemoryException:
        pass  # some blocks are in use (an open result): they stay, the rest were evicted on the way
    finally:
        con.execute("RESET memory_limit")
        if _memory_limit(con) != before:  # the caller's own limit; +0.05 so that the shown value does not creep down
            limit = re.fullmatch(r"([\d.]+) ?(\w+)", before)
            if limit is not None:  # DuckDB shows its limit as "<number> <unit>"
                number, unit = limit.groups()
                con.execute(f"SET memory_limit = '{float(number) + 0.05:.2f} {unit}'")


def first(cursor: Any) -> tuple[Any, ...]:
    """The row a query that always returns one gives (an aggregate, a key just written): `first(con.execute(...))[0]`.
    No row there is ragpipe's bug, said as one, not a TypeError about None."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("a query expected to return a row returned none")
    return row


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[str], rows: list[list[Any]], **values: str
) -> None:
    """Insert many rows in one statement through an Arrow table (executemany runs one statement per row).

    `columns` name the values of each row; `values` adds columns set by an SQL expression (e.g. judged_at="now()").
    """
    if not rows:
        return
    import pyarrow as pa

    data = pa.table({f"c{i}": pa.array([r[i] for r in rows]) for i in range(len(columns))})
    names = columns + list(values)
    exprs = [f"c{i}" for i in range(len(columns))] + list(values.values())
    con.register("_insert_rows", data)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(exprs)} FROM _insert_rows")
    except duckdb.Error:
        try:  # an aborted transaction refuses the unregister too: the insert's own error is the one to see
            con.unregister("_insert_rows")
        except duckdb.Error:
            pass
        raise
    con.unregister("_insert_rows")


def record_stage(
    con: duckdb.DuckDBPyConnection, run_id: str, stage: str, tag: str | None, t0: float, stats: dict[str, Any]
) -> None:
    """One stage's run in stage_runs: which run, the tag it ran under, when, how long, and its figures."""
    con.execute(
        "INSERT INTO stage_runs VALUES (?, ?, ?, to_timestamp(?), ?, ?)",
        [run_id, stage, tag, t0, time.time() - t0, json.dumps(stats, sort_keys=True)],
    )
