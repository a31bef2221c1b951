"""`ragpipe compare` and `history`: what changes ahead (a candidate configuration beside the current one) and what
changed behind (one test's verdict over time)."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from ragpipe.cli.common import WithoutStackTraces, failure_code, instance, report_failure, settings_from
from ragpipe.core import EXIT_INPUT
from ragpipe.settings import SettingsError


def cmd_history(args: argparse.Namespace) -> int:
    from ragpipe.reports import history
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    with connect(settings.duckdb_path, read_only=True, wait_s=args.wait) as con:
        rows = history(con, args.question_id, args.limit)
        question = con.execute(
            "SELECT question, kind FROM golden_tests WHERE question_id = ?", [args.question_id]
        ).fetchone()
    print(
        f"{args.question_id} ({question[1]}): {question[0]}"
        if question
        else f"{args.question_id} (no longer in the golden set)"
    )
    print(f"{'judged':<17} {'run':<9} {'trigger':<9} {'verdict':<12} {'rank':>4}  change")
    for r in rows:
        rank = "-" if r.anchor_rank is None else str(r.anchor_rank)
        change = ""
        if r.changed:
            parts = [] if r.old_verdict is None or r.old_verdict == r.verdict else [f"{r.old_verdict} -> {r.verdict}"]
            if r.old_verdict is not None and r.old_anchor_rank != r.anchor_rank:
                parts.append(f"rank {'-' if r.old_anchor_rank is None else r.old_anchor_rank} -> {rank}")
            if r.old_unverified is not None and r.old_unverified != r.unverified:
                parts.append("now unverified" if r.unverified else "verified again")
            change = "; ".join(parts + [f"cause: {r.cause}" if parts else r.cause])
        flag = "*" if r.unverified else " "
        print(
            f"{r.started_at:%Y-%m-%d %H:%M}  {r.eval_run_id[:8]:<9} {r.trigger or '':<9} {r.verdict:<11}{flag} {rank:>4}  {change}"
        )
    if rows and rows[-1].unverified:
        print("* unverified under the embedder of that run")
    return 0


def subject_overrides(settings: Any, url: str | None) -> list[str]:
    """--subject-url: the candidate deployment of the app under test (its identity endpoint moved with it when the
    current one lives on the same server)."""
    if not url:
        return []
    cur = settings.subject
    if cur.kind != "http":
        raise SettingsError(f"--subject-url needs [subject].kind = 'http' in {settings.source}, not {cur.kind!r}")
    out = [f"subject.url={json.dumps(url)}"]
    base, new_base = urllib.parse.urlsplit(cur.url), urllib.parse.urlsplit(url)
    ident = urllib.parse.urlsplit(cur.identity_url)
    if cur.identity_url and ident.netloc == base.netloc:
        moved = ident._replace(scheme=new_base.scheme, netloc=new_base.netloc).geturl()
        out.append(f"subject.identity_url={json.dumps(moved)}")
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    from ragpipe.reports import candidate_settings, render_comparison_markdown, render_comparison_text

    settings = settings_from(args)
    overrides = [*(args.set or []), *subject_overrides(settings, args.subject_url)]
    candidate_settings(settings, overrides, Path(args.candidate) if args.candidate else None)  # fail early, worded
    if not settings.duckdb_path.exists():
        raise SettingsError(
            f"no warehouse yet at {settings.duckdb_path}: run `ragpipe ci` first (the candidate is put beside the "
            f"current run)"
        )
    from ragpipe.assets.runner import run_compare
    from ragpipe.reports import Comparison

    stderr = sys.stderr
    sys.stderr = stderr if args.verbose else WithoutStackTraces(stderr)
    try:
        result = run_compare(str(settings.source), overrides, args.candidate or "", instance(settings))
    finally:
        sys.stderr = stderr
    if not isinstance(result, Comparison):
        return max(EXIT_INPUT, failure_code(report_failure(result, args.verbose)))
    print(render_comparison_text(result))
    if args.markdown:
        Path(args.markdown).write_text(render_comparison_markdown(result), encoding="utf-8")
        print(f"\nMarkdown summary written to {args.markdown}")
    return 1 if result.blocking else 0


def add_parsers(sub: Any) -> None:
    """compare, history."""
    p = sub.add_parser(
        "compare",
        help="evaluate a candidate chunker/embedder/retriever/answerer beside the current one, changing nothing",
        description="Runs the candidate configuration over the same corpus and golden set in a scratch warehouse "
        "(parsed documents are reused; chunks when the chunker is the same; vectors when the embedder is the same) "
        "and prints, per test, the current and the candidate verdict, anchor rank and unverified flag, the counts, "
        "anchor hit@k and MRR for both, and the flips. The current verdicts, warehouse tables, golden file and "
        "Dagster assets are left as they are; the result goes to the comparisons and comparison_verdicts tables, and "
        "the run shows in the UI as the ragpipe_compare job. Exit 1 when a flip is one of [compare].block (default: "
        "a pass that fails, a test that ran and no longer runs, or a new error).",
        epilog="""Examples:
  ragpipe compare --set embedder.name=minilm-static
  ragpipe compare --set retriever.k=8 --set retriever.mode=vector --markdown compare.md
  ragpipe compare --settings ragpipe.toml --candidate candidate.toml
  ragpipe compare --subject-url https://staging.internal/ask     # the app's next deploy beside the current one""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help='a candidate setting (repeatable); the value is read as TOML: 8, true, "minilm-static"',
    )
    p.add_argument("--candidate", metavar="FILE", help="a candidate settings file (default: the current one)")
    p.add_argument(
        "--subject-url",
        metavar="URL",
        help="a candidate deployment of the app under test ([subject] kind http), e.g. staging: promote it only "
        "when no negative turned green by losing its trap",
    )
    p.add_argument("--markdown", metavar="PATH", help="write the comparison as Markdown (a pull-request comment)")
    p.add_argument("--verbose", action="store_true", help="print Dagster's stack trace when the comparison fails")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "history",
        help="one test's verdict over time, with the cause of each change",
        description="Every judged run of one test, oldest first: verdict, anchor rank (the rank of its trap or evidence "
        "chunk in the retrieved set; - when not retrieved), the run's trigger, and for each change since the previous "
        "run on the same golden set what differed between the two runs' inputs: the golden line, the anchor document, "
        "other documents, chunker, embedder, retriever or answerer settings, or nothing upstream (the answerer "
        "drifted). The same rows are in the verdict_timeline and verdict_changes views.",
        epilog="Examples:\n  ragpipe history neg_03\n  ragpipe history neg_03 --limit 10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("question_id", help="the test's question_id in the golden set")
    p.add_argument("--limit", type=int, help="only the newest N runs")
    p.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait while a run holds the writer lock (default 10)"
    )
    p.set_defaults(func=cmd_history)
