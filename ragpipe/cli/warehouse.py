"""`ragpipe sql` and `export`: reading the warehouse (read-only SQL, every table and view as Parquet, or the latest
verdicts in Ragas' or promptfoo's format)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragpipe.cli.common import settings_from
from ragpipe.core import EXIT_INPUT, EXIT_OK, RagpipeError
from ragpipe.settings import Settings


def cmd_sql(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    query = args.query
    if query is None:
        if sys.stdin.isatty():
            return _sql_prompt(settings, args)
        query = sys.stdin.read()
    _print_sql(settings, query, args)
    return EXIT_OK


def _print_sql(settings: Settings, query: str, args: argparse.Namespace) -> None:
    from ragpipe.warehouse import format_rows, run_sql

    result = run_sql(settings.duckdb_path, query, wait_s=args.wait)
    if result.columns:
        print(format_rows(result.columns, result.rows, args.format))


def _sql_prompt(settings: Settings, args: argparse.Namespace) -> int:
    print("ragpipe sql (read-only). End a statement with ';'. Ctrl-D to quit. Try: SELECT * FROM latest_verdicts;")
    buf: list[str] = []
    while True:
        try:
            line = input("sql> " if not buf else "...> ")
        except EOFError:
            print()
            return 0
        buf.append(line)
        if line.rstrip().endswith(";"):
            try:
                _print_sql(settings, "\n".join(buf), args)
            except RagpipeError as exc:  # a bad statement at the prompt: say so, keep the prompt
                print(f"ragpipe: {exc}", file=sys.stderr)
            buf = []


def _export_verdicts(args: argparse.Namespace) -> int:
    """The latest run's verdicts as one file in another tool's format (reports/interop.py)."""
    import json

    from ragpipe.golden import write_atomic
    from ragpipe.reports import promptfoo_results, ragas_lines, verdict_rows
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    with connect(settings.duckdb_path, read_only=True, wait_s=args.wait) as con:
        rows = verdict_rows(con)
    if not rows:
        print("no judged evaluation run yet: run `ragpipe ci` first", file=sys.stderr)
        return EXIT_INPUT
    text = ragas_lines(rows) if args.format == "ragas" else json.dumps(promptfoo_results(rows), indent=1, default=str)
    write_atomic(Path(args.to), text)
    counts = ", ".join(f"{n} {v}" for v, n in sorted(Counter(r["verdict"] for r in rows).items()))
    opened = "ragas: EvaluationDataset.from_jsonl" if args.format == "ragas" else "promptfoo import; promptfoo view"
    print(f"wrote {len(rows)} verdicts of run {rows[0]['eval_run_id']} ({counts}) to {args.to} (open with {opened})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ragpipe.warehouse import MANIFEST, Exported, connect, export_warehouse

    if args.format != "parquet":
        return _export_verdicts(args)
    settings = settings_from(args)
    names = [n.strip() for n in args.tables.split(",") if n.strip()] if args.tables else None
    t0 = time.perf_counter()

    def show(e: Exported) -> None:
        print(f"{e.name:<24} {e.kind:<5} {e.rows:>9} rows  -> {e.uri}", flush=True)

    with connect(settings.duckdb_path, read_only=True, wait_s=args.wait) as con:
        done = export_warehouse(settings, con, args.to, names, log=show)
    dest = args.to.rstrip("/")
    print(
        f"exported {len(done)} relations, {sum(e.rows for e in done)} rows in {time.perf_counter() - t0:.1f} s; "
        f"{dest}/{MANIFEST} lists them"
    )
    return 0


def add_parsers(sub: Any) -> None:
    """sql, export."""
    p = sub.add_parser(
        "sql",
        help="read-only SQL over the warehouse",
        description="Runs one read-only query against the DuckDB warehouse (no query: an interactive prompt, or the "
        "query read from stdin). Tables and views are documented in docs/warehouse.md.",
        epilog="""Examples:
  ragpipe sql "SELECT verdict, count(*) FROM latest_verdicts GROUP BY 1"
  ragpipe sql "SELECT banner FROM evaluation_status"
  ragpipe sql --format csv "SELECT * FROM verdict_history" > history.csv""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("query", nargs="?", help='e.g. "SELECT verdict, count(*) FROM latest_verdicts GROUP BY 1"')
    p.add_argument("--format", choices=["table", "csv", "json", "markdown"], default="table")
    p.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait while a run holds the writer lock (default 10)"
    )
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser(
        "export",
        help="write every warehouse table and view as Parquet to a local directory or an s3:// prefix",
        description="""\
Writes each table and view of the DuckDB warehouse (docs/warehouse.md) as DEST/<name>.parquet,
then DEST/_manifest.json listing them with their row counts. Each file appears only once complete,
and the manifest is removed when an export starts and written last: a destination without
_manifest.json holds an interrupted export.

For s3:// the endpoint, region and allow_http come from [warehouse.s3] in the settings; credentials
from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment.""",
        epilog="""\
Examples:
  ragpipe export --to exports/2024-06-01           a local directory (created when missing)
  ragpipe export --to s3://analytics/ragpipe        a bucket prefix; the bucket must exist
  ragpipe export --to s3://analytics/ragpipe --tables verdicts,eval_runs,latest_verdicts
  ragpipe export --format ragas --to verdicts.jsonl       the latest verdicts, to open in Ragas
  ragpipe export --format promptfoo --to results.json     ... or in promptfoo's viewer

Read it back, e.g. with DuckDB: SELECT * FROM 'exports/2024-06-01/verdict_history.parquet'
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="DEST",
        help="local directory or s3://BUCKET/PREFIX (a file for ragas, promptfoo)",
    )
    p.add_argument(
        "--format",
        choices=["parquet", "ragas", "promptfoo"],
        default="parquet",
        help="parquet: every table and view (default); ragas: the latest run's verdicts as a Ragas-style dataset "
        "(JSON Lines: user_input, retrieved_contexts, response, reference, ragpipe_verdict, ...); promptfoo: as a "
        "promptfoo results file (`promptfoo import` reads it; did_not_run is an error there, with its reason)",
    )
    p.add_argument("--tables", metavar="NAMES", help="comma-separated tables/views to export (default: all)")
    p.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait while a run holds the writer lock (default 10)"
    )
    p.set_defaults(func=cmd_export)
