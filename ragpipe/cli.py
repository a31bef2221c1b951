"""The `ragpipe` command line: run the graph, gate CI on verdicts, maintain the golden set, query the warehouse."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from ragpipe.core import (
    EXIT_BLOCKED,
    EXIT_BUSY,
    EXIT_INPUT,
    EXIT_OK,
    INPUT_ERRORS,
    REWRITES_FILE,
    VERDICTS,
    RagpipeError,
)
from ragpipe.golden import GoldenSetError
from ragpipe.settings import SETTINGS_ENV, Settings, SettingsError, load_settings
from ragpipe.warehouse import WarehouseBusy


def _choices() -> str:
    from ragpipe.embed import EMBEDDERS, OTHER
    from ragpipe.settings import ANSWERER_KINDS, CHUNKER_STRATEGIES, PDF_ENGINES

    rows = [
        ("[parser].pdf_engine", PDF_ENGINES),
        ("[chunker].strategy", CHUNKER_STRATEGIES),
        ("[embedder].name", {**{n: k.description for n, k in EMBEDDERS.items()}, "<other>": OTHER.description}),
        ("[answerer].kind", ANSWERER_KINDS),
    ]
    return "\n".join(
        f"  {where + ' = ' + repr(name):<39} {what}" for where, options in rows for name, what in options.items()
    )


EPILOG = f"""\
Settings come from ./ragpipe.toml, or the file named by ${SETTINGS_ENV}, or --settings.

Examples:
  ragpipe demo                      materialize the whole graph on the configured corpus, print what happened
  ragpipe ingest                    corpus -> documents -> chunks -> embeddings (only what changed)
  ragpipe ci --junit report.xml     bring everything up to date and gate on the verdicts (exit 1 when blocked)
  ragpipe golden validate           check the golden set file, listing every problem with line and field
  ragpipe golden restamp --write    re-stamp trap/evidence chunk ids after re-chunking (a reviewable diff)
  ragpipe score --answers FILE.jsonl score answers produced elsewhere with the same verdict rule
  ragpipe compare --set embedder.name=minilm-static   what a candidate would do, changing nothing
  ragpipe history neg_03            one test's verdict over time, with the cause of each change
  ragpipe sql "SELECT * FROM latest_verdicts"   read-only SQL over the warehouse
  ragpipe export --to s3://bucket/ragpipe       every table and view as Parquet (a local directory works too)
  ragpipe niah run                  needle-in-a-haystack grid ([niah] settings): trials, heatmaps, effective length

Choices (in the settings file):
{_choices()}

Exit codes:
  0  ok
  1  the gate blocked: a blocking verdict ([gate].block), a blocking flip in `compare`, or an evaluation run that
     failed for a reason other than its input
  2  a usage, settings or golden set file error: the message names the file, line or field to fix
  3  the warehouse stayed locked by a running writer longer than --wait
"""


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(args.settings)


def _project_root(settings: Settings) -> Path:
    return settings.source.parent


_HOME_SET_HERE: list[str] = []  # DAGSTER_HOME values this process chose itself (one per project it ran)


def _instance(settings: Settings) -> Any:
    # A DAGSTER_HOME the user set wins. One this process set for an earlier project (main() called again with
    # another settings file) does not: that project's run history would make this one's assets look fresh.
    home = os.environ.get("DAGSTER_HOME")
    if home is None or home in _HOME_SET_HERE:
        os.environ["DAGSTER_HOME"] = str(_project_root(settings))
        _HOME_SET_HERE.append(os.environ["DAGSTER_HOME"])
    from assets.runner import project_instance  # the Dagster layer, imported only when running the graph

    return project_instance(_project_root(settings))


class _WithoutStackTraces:
    """stderr with Dagster's stack traces left out (its console logger prints one per failed step, twice): the
    error's own message stays; `--verbose` shows everything."""

    _RECORD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")

    def __init__(self, stream: Any):
        self._stream = stream
        self._skipping = False
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if self._RECORD.match(line):
                self._skipping = False
            elif line.strip() == "Stack Trace:" or "DagsterExecutionStepExecutionError" in line:
                self._skipping = line.strip() == "Stack Trace:" or self._skipping
                continue
            if not self._skipping:
                self._stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def failure_lines(result: Any) -> list[str]:
    """One line per failed step: the asset and its error's own message (a GoldenSetError lists its problems)."""
    from assets.runner import step_error

    out = []
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            cls, message = step_error(ev.step_failure_data.error)
            out.append(f"{ev.step_key} failed: {cls}: {message}")
    return out or [f"run {result.run_id} failed before any step ran"]


def failure_code(lines: list[str]) -> int:
    """EXIT_INPUT when a step failed on bad input (a broken golden set file, settings): fix it, rerunning will not."""
    return EXIT_INPUT if any(f" failed: {cls}: " in line for line in lines for cls in INPUT_ERRORS) else EXIT_BLOCKED


def _report_failure(result: Any, verbose: bool = False) -> list[str]:
    lines = failure_lines(result)
    for line in lines:
        print(f"ragpipe: {line}", file=sys.stderr)
    if verbose:
        for ev in result.all_events:
            if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
                print(ev.step_failure_data.error.to_string(), file=sys.stderr)
    print(
        f"run {result.run_id} failed{'' if verbose else ' (--verbose for the stack trace; the run page in the UI has it too)'}",
        file=sys.stderr,
    )
    return lines


def _check_store(settings: Settings) -> None:
    """Fail before running the graph when the object store is unusable (missing bucket, dead endpoint), rather than
    after parsing the whole corpus; raises ObjectStoreError naming the URI and what to do."""
    if settings.lancedb_is_remote:
        from ragpipe.embed import open_store

        open_store(settings)


def _bring_up_to_date(args: argparse.Namespace, trigger: str) -> list[str]:
    """Materialize what is missing or stale through the Dagster graph (the run appears in the UI's history).
    Returns the failures, one line each (empty when the run succeeded)."""
    from assets.runner import materialize_stale

    settings = _settings(args)
    _check_store(settings)
    verbose = getattr(args, "verbose", False)
    t0 = time.perf_counter()
    stderr = sys.stderr
    sys.stderr = stderr if verbose else _WithoutStackTraces(stderr)  # type: ignore[assignment]
    try:
        selected, result = materialize_stale(
            str(settings.source),
            _instance(settings),
            tags={"ragpipe/trigger": trigger},
            multiprocess=getattr(args, "multiprocess", False),
        )
    finally:
        sys.stderr = stderr
    secs = time.perf_counter() - t0
    if result is None:
        print(f"everything is up to date ({secs:.1f} s)")
        return []
    if not result.success:
        return _report_failure(result, verbose)
    print(f"materialized {', '.join(selected)} in run {result.run_id} ({secs:.1f} s)")
    return []


def cmd_ingest(args: argparse.Namespace) -> int:
    from assets.runner import materialize

    settings = _settings(args)
    _check_store(settings)
    result = materialize(
        str(settings.source),
        ["corpus", "documents", "chunks", "embeddings"],
        _instance(settings),
        tags={"ragpipe/trigger": "cli"},
    )
    if not result.success:
        return failure_code(_report_failure(result))
    _print_ingest_summary(settings)
    return EXIT_OK


def _eval_summary(settings: Settings) -> Any:
    from ragpipe.reports import load_summary
    from ragpipe.warehouse import connect

    with connect(settings.duckdb_path, read_only=True) as con:
        return load_summary(con)


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

    settings = _settings(args)
    failures = _bring_up_to_date(args, "ci")
    if failures:  # still the reports, with the error as a failed case, never the older verdicts as this run's
        _write_reports(args, render_failure_junit(failures), render_failure_markdown(failures))
        return failure_code(failures)
    summary = _eval_summary(settings)
    if summary is None:
        print("no evaluation results yet", file=sys.stderr)
        return EXIT_BLOCKED
    block = tuple(args.block.split(",")) if args.block else settings.gate.block
    print(render_text(summary, block))
    _write_reports(args, render_junit(summary), render_markdown(summary, block))
    return 1 if summary.blocking(block) else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ragpipe.reports import render_text

    settings = _settings(args)
    ok = not _bring_up_to_date(args, "demo")
    print()
    _print_ingest_summary(settings)
    summary = _eval_summary(settings) if ok else None
    if summary is not None:
        print()
        print(render_text(summary, settings.gate.block))
        print('\nExplore: make ui (Dagster UI at http://127.0.0.1:3000), ragpipe sql "SELECT * FROM latest_verdicts"')
    return 0 if ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    from assets import build_definitions
    from assets.runner import asset_states

    settings = _settings(args)
    states = asset_states(build_definitions(str(settings.source)).resolve_asset_graph(), _instance(settings))
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


def _golden_and_stamps(settings: Settings) -> tuple[Any, Any, list[Any]]:
    from ragpipe.evaluate import restamper_for
    from ragpipe.golden import load_golden
    from ragpipe.warehouse import connect

    if settings.golden.path is None:
        raise SettingsError(f"{settings.source}: set [golden].path to the golden set file")
    golden = load_golden(settings.golden.path)
    if not settings.duckdb_path.exists():
        raise SettingsError(
            f"no warehouse yet at {settings.duckdb_path}: run `ragpipe ingest` first (it parses and "
            f"chunks the corpus of {settings.source.name}; restamp locates the quotes in those chunks)"
        )
    with connect(settings.duckdb_path, read_only=True) as con:
        n = con.execute("SELECT count(*) FROM chunks WHERE chunker_tag = ?", [settings.chunker_tag]).fetchone()[0]
        if n == 0:
            raise SettingsError(
                f"no chunks under the current chunker {settings.chunker_tag}; run `ragpipe ingest` first"
            )
        stamper = restamper_for(con, settings.chunker_tag)
    return golden, stamper, [stamper.stamp(t) for t in golden.tests]


def cmd_golden_validate(args: argparse.Namespace) -> int:
    from ragpipe.golden import check_quotes, load_golden
    from ragpipe.warehouse import connect

    settings = _settings(args)
    path = Path(args.file) if args.file else settings.golden.path
    if path is None:
        raise SettingsError(f"{settings.source}: set [golden].path or pass a file")
    try:
        golden = load_golden(path)
        problems = []
        if settings.duckdb_path.exists():
            with connect(settings.duckdb_path, read_only=True) as con:
                docs = dict(con.execute("SELECT doc_id, text FROM documents").fetchall())
            problems = check_quotes(golden, docs)
        else:
            print("note: no warehouse yet, quotes not checked against the corpus (run `ragpipe ingest`)")
        broken = [p for p in problems if not p.drift]
        if broken:
            raise GoldenSetError(broken)
    except GoldenSetError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    drift = [p for p in problems if p.drift]
    for p in drift:
        print(f"corpus drift: {p}")
    if drift:
        print(
            f"{path}: {len(golden.tests)} tests; {len(drift)} will read did_not_run until their quote is fixed "
            f"(`ragpipe golden restamp` proposes the closest passage)"
        )
        return 0
    print(f"{path}: {len(golden.tests)} tests OK")
    return 0


def cmd_golden_restamp(args: argparse.Namespace) -> int:
    import dataclasses
    import difflib

    from ragpipe.golden import ANCHOR_FIELDS, id_value, quote_form, rewrite_fields, write_atomic

    settings = _settings(args)
    golden, stamper, stamps = _golden_and_stamps(settings)
    accept = {q.strip() for a in args.accept or [] for q in a.split(",") if q.strip()}
    updates: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    by_id = {t.question_id: t for t in golden.tests}
    unknown = sorted(accept - set(by_id))
    if unknown:
        raise SettingsError(f"--accept: no test {', '.join(unknown)} in {golden.path}")
    for st in stamps:
        t = by_id[st.question_id]
        if st.question_id in accept:
            if st.status != "missing" or not st.closest:
                raise SettingsError(
                    f"--accept {st.question_id}: its quote is {st.status}, there is no closest passage to accept"
                )
            if t.kind == "negative" and t.trap_value and quote_form(t.trap_value) not in quote_form(st.closest):
                raise SettingsError(
                    f"--accept {t.question_id}: the closest passage does not hold its trap_value "
                    f"{t.trap_value!r}; edit trap_quote and trap_value by hand"
                )
            updates[t.question_id] = {ANCHOR_FIELDS[t.kind][1]: st.closest}
            st = stamper.stamp(dataclasses.replace(t, quote=st.closest))  # the accepted passage, stamped
        counts[st.status] = counts.get(st.status, 0) + 1
        if st.status in REWRITES_FILE:
            updates.setdefault(st.question_id, {})[t.anchor_field] = id_value(st.new_ids)
        if st.status != "unchanged":
            print(f"{st.question_id:<10} {st.anchor:<8} {st.status:<9} {st.reason}")
        if st.status == "missing" and st.closest:
            print(
                f"{'':<10} accept the closest passage as the new quote: ragpipe golden restamp --accept {st.question_id}"
            )
    print(
        f"{len(stamps)} tests under chunker {settings.chunker_tag}: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    )
    if not updates:
        print("the golden set file's stamps are current")
        return 0
    new_text = rewrite_fields(golden, updates)
    sys.stdout.writelines(
        difflib.unified_diff(
            golden.text.splitlines(True), new_text.splitlines(True), str(golden.path), f"{golden.path} (restamped)"
        )
    )
    if not args.write and not accept:
        print(f"\n{len(updates)} test(s) would change; run with --write to rewrite {golden.path}")
        return 0
    write_atomic(golden.path, new_text)
    print(f"\nrewrote {len(updates)} test(s) in {golden.path}; next: `ragpipe ci` to evaluate them")
    return 0


def cmd_golden_revalidate(args: argparse.Namespace) -> int:
    import datetime as dt

    from ragpipe.golden import load_golden, rewrite_fields, write_atomic

    settings = _settings(args)
    summary = _eval_summary(settings)
    if summary is None:
        print("no evaluation results yet; run `ragpipe ci` first", file=sys.stderr)
        return EXIT_INPUT
    golden = load_golden(settings.golden.path)
    today = dt.date.today().isoformat()
    ran = {r.question_id for r in summary.rows if r.verdict in ("pass", "fail")}
    updates = {
        t.question_id: {"embedder_tag": summary.embedder_tag, "last_validated": today}
        for t in golden.tests
        if t.question_id in ran and t.embedder_tag != summary.embedder_tag
    }
    skipped = sorted(r.question_id for r in summary.rows if r.question_id not in ran)
    print(f"{len(updates)} test(s) ran under {summary.embedder_tag} and would be re-dated {today}")
    if skipped:
        print(f"{len(skipped)} test(s) did not run and stay unverified: {', '.join(skipped)}")
    if updates and args.write:
        write_atomic(golden.path, rewrite_fields(golden, updates))
        print(f"rewrote {len(updates)} test(s) in {golden.path}")
    elif updates:
        print("run with --write to rewrite the file")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    settings = _settings(args)
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


def cmd_export(args: argparse.Namespace) -> int:
    from ragpipe.warehouse import MANIFEST, Exported, connect, export_warehouse

    settings = _settings(args)
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


def cmd_score(args: argparse.Namespace) -> int:
    import json

    from ragpipe.golden import load_golden
    from ragpipe.verdicts import load_answers, score

    settings = _settings(args)
    golden_path = Path(args.golden) if args.golden else settings.golden.path
    if golden_path is None:
        raise SettingsError(f"{settings.source}: set [golden].path or pass --golden FILE")
    golden = load_golden(golden_path)
    verdicts = score(golden, load_answers(Path(args.answers), golden), settings)
    rows = [
        {"question_id": v.question_id, "verdict": v.verdict, "reason": v.reason, "matched_by": v.matched_by or None}
        for v in verdicts
    ]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        width = max((len(r["question_id"]) for r in rows), default=11)
        for r in rows:
            how = f" [{r['matched_by']}]" if r["matched_by"] else ""
            print(f"{r['question_id']:<{width}}  {r['verdict']:<11}  {r['reason']}{how}")
        counts = {k: sum(r["verdict"] == k for r in rows) for k in VERDICTS}
        print(f"{len(rows)} tests: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items()))
    block = set(settings.gate.block)
    return 1 if any(v.verdict in block or ("unverified" in block and v.unverified) for v in verdicts) else 0


def cmd_history(args: argparse.Namespace) -> int:
    from ragpipe.reports import history
    from ragpipe.warehouse import connect

    settings = _settings(args)
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


def cmd_compare(args: argparse.Namespace) -> int:
    from ragpipe.reports import candidate_settings, render_comparison_markdown, render_comparison_text

    settings = _settings(args)
    candidate_settings(settings, args.set or [], Path(args.candidate) if args.candidate else None)  # fail early, worded
    from assets.runner import run_compare
    from ragpipe.reports import Comparison

    result = run_compare(str(settings.source), args.set or [], args.candidate or "", _instance(settings))
    if not isinstance(result, Comparison):
        return max(EXIT_INPUT, failure_code(_report_failure(result, args.verbose)))
    print(render_comparison_text(result))
    if args.markdown:
        Path(args.markdown).write_text(render_comparison_markdown(result), encoding="utf-8")
        print(f"\nMarkdown summary written to {args.markdown}")
    return 1 if result.blocking else 0


def cmd_niah_run(args: argparse.Namespace) -> int:
    from assets.runner import materialize

    settings = _settings(args)
    t0 = time.perf_counter()
    result = materialize(
        str(settings.source),
        ["niah_haystacks", "niah_trials", "niah_report"],
        _instance(settings),
        tags={"ragpipe/trigger": "cli"},
    )
    if not result.success:
        return failure_code(_report_failure(result))
    print(f"niah run {result.run_id} done in {time.perf_counter() - t0:.1f} s\n")
    return _print_niah_report(settings, None)


def cmd_niah_report(args: argparse.Namespace) -> int:
    from ragpipe.niah import report
    from ragpipe.warehouse import connect

    settings = _settings(args)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragpipe",
        description="Golden-set evaluation for RAG that tells a passing test from a test that did not run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--settings", help=f"settings file (default: ${SETTINGS_ENV} or ./ragpipe.toml)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

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

    golden = sub.add_parser(
        "golden",
        help="validate, re-stamp and re-validate the golden set file",
        description="Maintain the golden set file. The order after a chunker or corpus change: "
        "`restamp --write` (new chunk ids), `ragpipe ci` (run the tests), `revalidate --write` "
        "(record the embedder and date of the tests that ran).",
        epilog="Examples:\n  ragpipe golden validate\n  ragpipe golden restamp --write\n"
        "  ragpipe golden revalidate --write",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gsub = golden.add_subparsers(dest="golden_command", metavar="SUBCOMMAND")
    p = gsub.add_parser(
        "validate",
        help="list every problem with file, line and field (exit 1 when any)",
        description="Checks the golden set file: JSON, required fields, duplicate ids, dates, the trap "
        "value inside its quote, and (after `ragpipe ingest`) every quote in its document. A quote that "
        "is no longer in the corpus is reported as corpus drift, not as an error: that test reads "
        "did_not_run until it is fixed.",
        epilog="Examples:\n  ragpipe golden validate\n  ragpipe golden validate other-golden.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", help="golden set file (default: [golden].path)")
    p.set_defaults(func=cmd_golden_validate)
    p = gsub.add_parser(
        "restamp",
        help="locate each test's quote in the current chunks; --write rewrites the ids in place",
        description="Locates every test's trap/evidence quote in the chunks of the current chunker (after `ragpipe "
        "ingest`) and prints what changed (moved, split, missing) and the unified diff of the golden set file with the "
        "new chunk ids. A quote that is no longer in its document comes with the closest passage of that document; "
        "--accept QID makes it the test's new quote. Then run `ragpipe ci`, and `ragpipe golden revalidate --write` "
        "to record the tests that ran under the current embedder.",
        epilog="""\
Examples:
  ragpipe golden restamp                 what would change, as a diff (nothing is written)
  ragpipe golden restamp --write         rewrite the chunk ids in place (only those fields change)
  ragpipe golden restamp --accept neg_06 take the closest passage as neg_06's new quote (and its ids)

Bring your own golden set: ragpipe ingest -> ragpipe golden restamp --write -> ragpipe ci ->
ragpipe golden revalidate --write.""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--write", action="store_true", help="rewrite the file in place (only the changed ids; a reviewable diff)"
    )
    p.add_argument(
        "--accept",
        action="append",
        metavar="QID[,QID]",
        help="take the closest passage as the new quote of these tests whose quote is missing (writes the file)",
    )
    p.set_defaults(func=cmd_golden_restamp)
    p = gsub.add_parser(
        "revalidate",
        help="re-tag and re-date the tests that ran under the current embedder",
        description="After `ragpipe ci` under a new embedder: writes the current embedder tag and today's "
        "date into embedder_tag and last_validated of every test whose anchor was retrieved in the latest "
        "evaluation (a test that did not run stays unverified). Run it after `golden restamp --write` "
        "and `ragpipe ci`, never before.",
        epilog="Examples:\n  ragpipe golden revalidate            what would change\n"
        "  ragpipe golden revalidate --write    rewrite those two fields in place",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--write", action="store_true", help="rewrite embedder_tag and last_validated in place")
    p.set_defaults(func=cmd_golden_revalidate)
    golden.set_defaults(func=lambda a: (golden.print_help(), 2)[1])

    p = sub.add_parser(
        "score",
        help="judge answers produced elsewhere (a JSON Lines file) with ragpipe's verdict rule",
        description="Scores answers that another system produced against the golden set, with the same rule as "
        "`ragpipe ci` (and the [judge], when enabled, for what the rules cannot settle). Each line of FILE: "
        "question_id, answer, and the retrieval as retrieved_ids (chunk ids) or retrieved_texts (the texts the "
        "system put in its context; the anchor counts as retrieved when its quote is inside one of them). A line "
        "with neither, or a test without a line, did not run. Exit 1 when a verdict in [gate].block occurs, 2 on a "
        "bad file (every problem listed with file, line and field).",
        epilog="""\
Examples:
  ragpipe score --answers run-2026-12-01.jsonl
  ragpipe score --answers answers.jsonl --golden other-golden.jsonl --format json > verdicts.json

A line of the answers file:
  {"question_id": "neg_01", "answer": "The reports only cover 2023.", "retrieved_texts": ["...", "..."]}
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--answers",
        required=True,
        metavar="FILE",
        help="JSON Lines: question_id, answer, retrieved_ids or retrieved_texts",
    )
    p.add_argument("--golden", metavar="FILE", help="golden set file (default: [golden].path)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_score)

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
  ragpipe compare --settings ragpipe.toml --candidate candidate.toml""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help='a candidate setting (repeatable); the value is read as TOML: 8, true, "minilm-static"',
    )
    p.add_argument("--candidate", metavar="FILE", help="a candidate settings file (default: the current one)")
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

Read it back, e.g. with DuckDB: SELECT * FROM 'exports/2024-06-01/verdict_history.parquet'
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--to", required=True, metavar="DEST", help="local directory or s3://BUCKET/PREFIX")
    p.add_argument("--tables", metavar="NAMES", help="comma-separated tables/views to export (default: all)")
    p.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait while a run holds the writer lock (default 10)"
    )
    p.set_defaults(func=cmd_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except WarehouseBusy as exc:
        print(f"ragpipe: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except (RagpipeError, FileNotFoundError) as exc:
        print(f"ragpipe: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # `ragpipe score ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
