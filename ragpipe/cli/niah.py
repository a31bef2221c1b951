"""`ragpipe niah run` and `report`: the needle-in-a-haystack evaluation, on demand."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ragpipe.cli.common import failure_code, instance, report_failure, settings_from
from ragpipe.core import EXIT_INPUT
from ragpipe.settings import Settings


def cmd_niah_run(args: argparse.Namespace) -> int:
    from ragpipe.assets.runner import materialize

    settings = settings_from(args)
    t0 = time.perf_counter()
    result = materialize(
        str(settings.source),
        ["niah_haystacks", "niah_trials", "niah_report"],
        instance(settings),
        tags={"ragpipe/trigger": "cli"},
    )
    if not result.success:
        return failure_code(report_failure(result))
    print(f"niah run {result.run_id} done in {time.perf_counter() - t0:.1f} s\n")
    return _print_niah_report(settings, None)


def cmd_niah_report(args: argparse.Namespace) -> int:
    from ragpipe.niah import report
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    with connect(settings.duckdb_path, wait_s=30.0) as con:
        report(settings, con, args.run, Path(args.out) if args.out else None)
    return _print_niah_report(settings, args.run)


def _print_niah_report(settings: Settings, run_id: str | None) -> int:
    import json

    from ragpipe.niah import latest_run_id, render_text
    from ragpipe.warehouse import connect

    with connect(settings.duckdb_path, read_only=True) as con:
        run_id = run_id or latest_run_id(con)
        row = con.execute("SELECT report_json FROM niah_runs WHERE run_id = ?", [run_id]).fetchone() if run_id else None
        if not row or not row[0]:
            print("no NIAH report yet; run `ragpipe niah run`", file=sys.stderr)
            return EXIT_INPUT
        print(render_text(json.loads(row[0]), con, settings.niah.effective_threshold))
    return 0


def add_parsers(sub: Any) -> None:
    """niah, with its subcommands run and report."""
    niah = sub.add_parser("niah", help="needle-in-a-haystack long-context evaluation ([niah] settings; on demand)")
    nsub = niah.add_subparsers(dest="niah_command", metavar="SUBCOMMAND")
    p = nsub.add_parser(
        "run",
        help="build haystacks, run every trial on the configured subjects, write the report (through Dagster)",
        description="Materializes niah_haystacks, niah_trials and niah_report (the run appears in the UI), with "
        "progress on the console, then prints effective lengths, bias flags and where the heatmaps are.",
    )
    p.set_defaults(func=cmd_niah_run)
    p = nsub.add_parser("report", help="recompute the report and heatmaps of a NIAH run (default: the latest)")
    p.add_argument("--run", help="NIAH run id (default: the latest finished run)")
    p.add_argument("--out", metavar="DIR", help="write the heatmap PNGs here (default: warehouse/niah/<run id>/)")
    p.set_defaults(func=cmd_niah_report)
    niah.set_defaults(func=lambda a: (niah.print_help(), 2)[1])
