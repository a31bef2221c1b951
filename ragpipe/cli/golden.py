"""`ragpipe golden validate`, `restamp` and `revalidate`: maintaining the golden set file (`suggest`: cli/suggest.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragpipe.cli import imports, suggest
from ragpipe.cli.common import eval_summary, settings_from
from ragpipe.core import EXIT_INPUT, REWRITES_FILE
from ragpipe.golden import GoldenSetError
from ragpipe.settings import Settings, SettingsError


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

    settings = settings_from(args)
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

    from ragpipe.evaluate import stamp_line
    from ragpipe.golden import ANCHOR_FIELDS, id_value, quote_form, rewrite_fields, write_atomic

    settings = settings_from(args)
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
            print(f"{st.question_id:<10} {st.anchor:<8} {stamp_line(st.status, st.reason, ': ')}")
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

    settings = settings_from(args)
    summary = eval_summary(settings)
    if summary is None:
        print("no evaluation results yet; run `ragpipe ci` first", file=sys.stderr)
        return EXIT_INPUT
    golden = load_golden(settings.golden.path)
    today = dt.date.today().isoformat()
    ran = {r.question_id for r in summary.rows if r.verdict in ("pass", "fail", "needs_review")}  # the test ran
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


def add_parsers(sub: Any) -> None:
    """golden, with its subcommands validate, restamp and revalidate."""
    golden = sub.add_parser(
        "golden",
        help="validate, re-stamp and re-validate the golden set file; propose new tests",
        description="Maintain the golden set file. The order after a chunker or corpus change: "
        "`restamp --write` (new chunk ids), `ragpipe ci` (run the tests), `revalidate --write` "
        "(record the embedder and date of the tests that ran). `suggest` drafts new negatives from the corpus.",
        epilog="Examples:\n  ragpipe golden validate\n  ragpipe golden restamp --write\n"
        "  ragpipe golden revalidate --write\n  ragpipe golden suggest --negatives 30",
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
    suggest.add_parser(gsub)
    imports.add_parser(gsub)
    golden.set_defaults(func=lambda a: (golden.print_help(), 2)[1])
