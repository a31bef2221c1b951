"""`ragpipe demo`, `ingest`, `ci` and `status`: the commands that run the graph or say what in it is stale."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ragpipe.cli.common import (
    bring_up_to_date,
    check_store,
    eval_summary,
    failure_code,
    instance,
    report_failure,
    settings_from,
)
from ragpipe.core import EXIT_BLOCKED, EXIT_OK
from ragpipe.settings import Settings


def cmd_ingest(args: argparse.Namespace) -> int:
    from ragpipe.assets.runner import materialize

    settings = settings_from(args)
    check_store(settings)
    result = materialize(
        str(settings.source),
        ["corpus", "documents", "chunks", "embeddings"],
        instance(settings),
        tags={"ragpipe/trigger": "cli"},
    )
    if not result.success:
        return failure_code(report_failure(result))
    _print_ingest_summary(settings)
    return EXIT_OK


def _write_reports(args: argparse.Namespace, junit: str, markdown: str) -> None:
    """--junit and --markdown files, and $GITHUB_STEP_SUMMARY when set."""
    if getattr(args, "junit", None):
        Path(args.junit).write_text(junit, encoding="utf-8")
        print(f"JUnit XML written to {args.junit}")
    if getattr(args, "markdown", None):
        Path(args.markdown).write_text(markdown, encoding="utf-8")
        print(f"Markdown summary written to {args.markdown}")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(markdown)


def cmd_ci(args: argparse.Namespace) -> int:
    from ragpipe.reports import (
        render_failure_junit,
        render_failure_markdown,
        render_junit,
        render_markdown,
        render_text,
    )

    settings = settings_from(args)
    failures = bring_up_to_date(args, "ci")
    if failures:  # still the reports, with the error as a failed case, never the older verdicts as this run's
        _write_reports(args, render_failure_junit(failures), render_failure_markdown(failures))
        return failure_code(failures)
    summary = eval_summary(settings)
    if summary is None:
        print("no evaluation results yet", file=sys.stderr)
        return EXIT_BLOCKED
    block = tuple(args.block.split(",")) if args.block else settings.gate.block
    print(render_text(summary, block))
    _write_reports(args, render_junit(summary), render_markdown(summary, block))
    return 1 if summary.blocking(block) else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ragpipe.reports import render_text

    settings = settings_from(args)
    ok = not bring_up_to_date(args, "demo")
    print()
    _print_ingest_summary(settings)
    summary = eval_summary(settings) if ok else None
    if summary is not None:
        print()
        print(render_text(summary, settings.gate.block))
        print('\nExplore: make ui (Dagster UI at http://127.0.0.1:3000), ragpipe sql "SELECT * FROM latest_verdicts"')
    return 0 if ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    from ragpipe.assets import build_definitions
    from ragpipe.assets.runner import asset_states

    settings = settings_from(args)
    states = asset_states(build_definitions(str(settings.source)).resolve_asset_graph(), instance(settings))
    width = max(len(s.key) for s in states)
    for s in states:
        print(f"{s.key:<{width}}  {s.status}")
        if s.failure:
            print(f"{'':<{width}}    - {s.key} failed: {s.failure}")
        for c in s.causes:
            print(f"{'':<{width}}    - {c}")
    return 0 if all(s.status == "fresh" and not s.failure for s in states) else 1


def _print_ingest_summary(settings: Settings) -> None:
    from ragpipe.ingest import summary
    from ragpipe.warehouse import connect

    with connect(settings.duckdb_path, read_only=True) as con:
        print(summary(con, settings))


def add_parsers(sub: Any) -> None:
    """demo, ingest, ci, status."""
    p = sub.add_parser(
        "demo",
        help="bring the whole graph up to date on the configured corpus and print the results",
        description="Materializes whatever is missing or stale (through Dagster: the run shows in the UI), "
        "then prints what was ingested and the verdicts. With the bundled settings the answerer is the "
        "offline baseline, so the gate is BLOCKED on purpose.",
        epilog="Example:\n  ragpipe demo\n  ragpipe --settings my-project.toml demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser(
        "ingest",
        help="run the ingestion stages (only what changed is redone)",
        description="corpus -> documents -> chunks -> embeddings: parses new and changed files, chunks "
        "them, embeds chunk texts not embedded before. The first step for a new golden set (then `ragpipe "
        "golden restamp --write`).",
        epilog="Example:\n  ragpipe ingest && ragpipe golden restamp --write",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser(
        "ci",
        help="materialize what is missing or stale, print the verdicts, exit 1 when a blocking verdict exists",
        description="Runs the stale part of the Dagster graph (visible in the UI's run history), then prints counts and "
        "the FAIL, TEST DID NOT RUN, UNVERIFIED UNDER CURRENT EMBEDDER and STAMPS MOVED sections. Exit code 0 only "
        "when no test has a blocking verdict ([gate].block, default: fail, did_not_run, error); a run that fails "
        "prints its error in one line and still writes the reports, with the error as a failed case.",
        epilog="""Examples:
  ragpipe ci --junit report.xml --markdown summary.md
  ragpipe ci --block fail,did_not_run,unverified      stricter than [gate].block
  ragpipe ci --multiprocess                           one process per step, as the daemon runs jobs""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--junit", metavar="PATH", help="write JUnit XML (did-not-run tests are skipped, never passed)")
    p.add_argument(
        "--markdown", metavar="PATH", help="write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY)"
    )
    p.add_argument(
        "--block", help="comma-separated blocking verdicts, overriding [gate].block (e.g. fail,did_not_run,unverified)"
    )
    p.add_argument("--verbose", action="store_true", help="print Dagster's stack traces of failed steps")
    p.add_argument(
        "--multiprocess",
        action="store_true",
        help="one process per step, as the Dagster daemon runs jobs: parsing and embedding shards "
        "([scale].parse_shards, embed_shards) run in parallel (default: every step in this process)",
    )
    p.set_defaults(func=cmd_ci)
    p = sub.add_parser(
        "status",
        help="what is stale and why, down the whole chain (exit 1 when anything is)",
        description="Every asset with its state (fresh, stale, missing, stale-upstream) and the reasons, "
        'down the whole chain, and the error of its latest failed run ("golden_set failed: ... (run '
        "86b45aea, 2026-12-01 22:17 UTC)\"). Reads the project's Dagster instance; changes nothing.",
        epilog="Example:\n  ragpipe status || ragpipe ci",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=cmd_status)
