"""`ragpipe sql`: read-only queries over the warehouse, and their rows as a table, CSV, JSON or Markdown."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ragpipe.core import RagpipeError
from ragpipe.warehouse.db import connect


def _cell(v: Any) -> Any:
    if isinstance(v, (dt.date, dt.datetime, dt.time, decimal.Decimal)):
        return str(v)
    return v


def format_rows(columns: list[str], rows: list[tuple[Any, ...]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{c: _cell(v) for c, v in zip(columns, r)} for r in rows], indent=2, default=str)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(columns)
        w.writerows([[_cell(v) for v in r] for r in rows])
        return buf.getvalue().rstrip("\n")
    text = [[("" if v is None else str(_cell(v))).replace("\n", " ") for v in r] for r in rows]
    if fmt == "markdown":
        out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in text]
        return "\n".join(out)
    widths = [min(60, max([len(c)] + [len(r[i]) for r in text])) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join((v if len(v) <= w else v[: w - 1] + "…").ljust(w) for v, w in zip(r, widths)) for r in text]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


class SqlError(RagpipeError):
    """A query ragpipe sql refuses (a write, file access) or DuckDB rejects; the message says which."""


@dataclass(frozen=True)
class Result:
    columns: list[str]  # empty for a statement that returns nothing
    rows: list[tuple[Any, ...]]


def run_sql(db_path: Path, query: str, wait_s: float = 10.0) -> Result:
    """Run one query on a read-only connection and return its rows. Raises SqlError for a refused or invalid query,
    WarehouseBusy when a writer holds the lock past `wait_s`, FileNotFoundError without a warehouse."""
    with connect(db_path, read_only=True, wait_s=wait_s) as con:
        # A read-only database still lets SQL write files (COPY TO, EXPORT) and attach other databases read-write.
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        try:
            cur = con.execute(query)
        except duckdb.InvalidInputException as exc:
            if "read-only" in str(exc).lower():
                raise SqlError("ragpipe sql is read-only: write statements are refused") from exc
            raise SqlError(f"SQL error: {exc}") from exc  # e.g. SET on the locked configuration
        except duckdb.PermissionException as exc:
            raise SqlError(
                "ragpipe sql is read-only: reading or writing files (COPY, EXPORT, ATTACH, read_csv) is refused"
            ) from exc
        except duckdb.Error as exc:
            raise SqlError(f"SQL error: {exc}") from exc
        if cur.description is None:
            return Result([], [])
        return Result([d[0] for d in cur.description], cur.fetchall())
