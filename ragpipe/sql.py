"""`ragpipe sql`: read-only queries over the warehouse, printed as a table, CSV, JSON or Markdown."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import sys
from pathlib import Path
from typing import Any

import duckdb

from ragpipe.warehouse import WarehouseBusy, connect


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


def run_sql(db_path: Path, query: str, fmt: str = "table", wait_s: float = 10.0) -> int:
    """Run one query on a read-only connection. Writes are refused; a held writer lock gives a clear message."""
    try:
        with connect(db_path, read_only=True, wait_s=wait_s) as con:
            # A read-only database still lets SQL write files (COPY TO, EXPORT) and attach other databases read-write.
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            try:
                cur = con.execute(query)
            except duckdb.InvalidInputException as exc:
                if "read-only" in str(exc).lower():
                    print("ragpipe sql is read-only: write statements are refused", file=sys.stderr)
                    return 2
                print(f"SQL error: {exc}", file=sys.stderr)  # e.g. SET on the locked configuration
                return 2
            except duckdb.PermissionException:
                print(
                    "ragpipe sql is read-only: reading or writing files (COPY, EXPORT, ATTACH, read_csv) is refused",
                    file=sys.stderr,
                )
                return 2
            except duckdb.Error as exc:
                print(f"SQL error: {exc}", file=sys.stderr)
                return 2
            if cur.description is None:
                return 0
            columns = [d[0] for d in cur.description]
            print(format_rows(columns, cur.fetchall(), fmt))
    except WarehouseBusy as exc:
        print(f"ragpipe sql: {exc}", file=sys.stderr)
        return 3
    except FileNotFoundError as exc:
        print(f"ragpipe sql: {exc}", file=sys.stderr)
        return 2
    return 0
