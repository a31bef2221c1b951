"""`ragpipe golden suggest`: propose near-miss negatives (and positives) over the ingested corpus, write the review
sheet, and append the accepted ones to the golden file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragpipe.cli.common import settings_from
from ragpipe.settings import Settings, SettingsError


def _warehouse(settings: Settings) -> Path:
    if not settings.duckdb_path.exists():
        raise SettingsError(
            f"no warehouse yet at {settings.duckdb_path}: run `ragpipe ingest` first (proposals are read from the "
            f"chunks of {settings.source.name}'s corpus)"
        )
    return settings.duckdb_path


def _golden_quotes(settings: Settings) -> set[str]:
    from ragpipe.golden import load_golden

    path = settings.golden.path
    return {t.quote for t in load_golden(path).tests if t.quote} if path and path.is_file() else set()


def cmd_golden_suggest(args: argparse.Namespace) -> int:
    from ragpipe.evaluate import suggest
    from ragpipe.reports import render_sheet
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    if args.accept or args.reject:
        return _decide(settings, args.accept or [], args.reject or [])
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    with connect(_warehouse(settings)) as con:
        result = suggest(
            settings,
            con,
            negatives=args.negatives,
            positives=args.positives,
            kinds=kinds,
            taken=_golden_quotes(settings),
            log=lambda m: print(m, file=sys.stderr),
            phrase=args.phrase,
        )
    out = Path(args.out) if args.out else settings.duckdb_path.parent / "suggestions.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_sheet(result, settings.chunker_tag), encoding="utf-8")
    for p in result.proposals:
        rank = f"rank {p.rank}" if p.rank else f"not in top {p.k}"
        print(f"{p.suggestion_id}  {p.kind:<8} {rank:<12} {p.question}")
    dropped = "; ".join(f"{n} {why}" for why, n in result.dropped.items() if n) or "none"
    print(
        f"\n{len(result.proposals)} proposal(s) from {result.candidates} candidate sentence(s) in {result.chunks} "
        f"chunks, {result.seconds:.1f} s; dropped: {dropped}\nreview sheet: {out}\n"
        f"next: read each against the documents, then `ragpipe golden suggest --accept ID [ID ...]`"
    )
    return 0


def _decide(settings: Settings, accept: list[str], reject: list[str]) -> int:
    """Append the accepted proposals to the golden file (validated first, printed as a diff), record both."""
    from ragpipe.evaluate import SuggestError, decide, stored
    from ragpipe.warehouse import connect

    accept = [i for a in accept for i in a.split(",") if i]
    reject = [i for a in reject for i in a.split(",") if i]
    if settings.golden.path is None and accept:
        raise SettingsError(f"{settings.source}: set [golden].path to the golden set file the tests go to")
    with connect(_warehouse(settings)) as con:
        rows = stored(con, accept + reject)
        done = [r for r in rows if r["decision"]]
        if done:
            raise SuggestError("already decided: " + ", ".join(f"{r['suggestion_id']} ({r['decision']})" for r in done))
        stale = [r["suggestion_id"] for r in rows if r["chunker_tag"] != settings.chunker_tag]
        if stale and accept:
            raise SuggestError(
                f"{', '.join(stale)} were proposed under another chunker; run `ragpipe golden suggest` again "
                f"(their chunk ids are not the current ones)"
            )
        decisions: dict[str, tuple[str, str | None]] = {sid: ("rejected", None) for sid in reject}
        if accept:
            decisions.update(_append(settings, [r for r in rows if r["suggestion_id"] in accept]))
        decide(con, decisions)
    if reject:
        print(f"rejected {len(reject)} proposal(s); they are not proposed again")
    return 0


def _append(settings: Settings, rows: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    import datetime as dt
    import difflib

    from ragpipe.golden import appended, golden_object, load_golden, next_ids, write_atomic

    path = settings.golden.path
    assert path is not None
    golden = load_golden(path)
    today = dt.date.today().isoformat()
    ids = {k: iter(next_ids(golden, k, sum(r["kind"] == k for r in rows))) for k in ("negative", "positive")}
    objects, decisions = [], {}
    for r in rows:
        qid = next(ids[r["kind"]])
        objects.append(
            golden_object(
                qid,
                r["kind"],
                r["question"],
                r["quote"],
                r["source"],
                r["value"],
                r["chunk_id"],
                r["embedder_tag"],
                today,
            )  # fmt: skip
        )
        decisions[r["suggestion_id"]] = ("accepted", qid)
    new_text = appended(golden, objects)
    trial = path.with_name(f".{path.name}.suggested")
    trial.write_text(new_text, encoding="utf-8")
    try:
        load_golden(trial)  # the appended lines pass the same validation as the file (GoldenSetError otherwise)
    finally:
        trial.unlink()
    sys.stdout.writelines(
        difflib.unified_diff(golden.text.splitlines(True), new_text.splitlines(True), str(path), f"{path} (accepted)")
    )
    write_atomic(path, new_text)
    print(
        f"\nappended {len(objects)} test(s) to {path}: {', '.join(d[1] or '' for d in decisions.values())}; next: "
        f"`ragpipe ci` to run them"
    )
    return decisions


def add_parser(gsub: Any) -> None:
    """`golden suggest`, a subcommand of `golden` (cli/golden.py)."""
    p = gsub.add_parser(
        "suggest",
        help="propose near-miss negative tests (and positives) from the corpus, for a person to accept",
        description="Reads the ingested chunks for sentences that state a value (an amount, a share, a count, a "
        "date, a version, a name) under a qualifier (a period, a version, a named thing), and proposes the question "
        "that asks for the same value under a sibling qualifier: the sentence is the trap. A proposal stands only "
        "when no sentence of the corpus pairs the new qualifier with what is asked (the search and the closest "
        "passages are kept as evidence); each carries its trap's rank under the current retrieval, and one whose "
        "trap is not in the top k is marked and sorted last. Nothing is written to the golden file until you "
        "accept: --accept appends the tests, stamped with their chunk id, tagged with the embedder and dated.",
        epilog="""\
Examples:
  ragpipe golden suggest                          20 negatives; review sheet in the warehouse folder
  ragpipe golden suggest --negatives 60 --positives 10 --kinds periods,versions --out review.md
  ragpipe golden suggest --accept sug_1a2b3c4d5e sug_6f7a8b9c0d   append these to the golden file
  ragpipe golden suggest --reject sug_0e9d8c7b6a  never propose it again

After accepting: `ragpipe ci` runs the new tests; `ragpipe golden validate` checks the file.""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--negatives", type=int, default=20, metavar="N", help="negatives to propose (default 20)")
    p.add_argument("--positives", type=int, default=0, metavar="N", help="positives to propose (default 0)")
    p.add_argument(
        "--kinds",
        default="periods,versions,names,changes",
        help="qualifiers to vary, comma-separated: periods (years, quarters, dates, a report's own period named by its "
        "title; only along a series the corpus states, or a recurring period of a measure; in prose only a sentence "
        "a template asks: what a measure was, what was done, what an organisation did), versions, names "
        '(SHA-256, HR-400, `module.attr`), changes (a change note of reference documentation, "Changed in '
        'version 3.4: ...", asked about another version) (default: those four); false-premise (not by default: a '
        "one-off statement's year moved, whose pass is an answer that corrects the premise)",
    )
    p.add_argument(
        "--phrase",
        action="store_true",
        help="have the configured answerer ([answerer].kind openai or smollm2) reword each question; a rewording "
        "that drops the qualifier, a number or a name is rejected and the question built from the parse stays",
    )
    p.add_argument("--out", metavar="FILE", help="the review sheet (default: suggestions.md beside the warehouse)")
    p.add_argument("--accept", nargs="+", metavar="ID", help="append these proposals to the golden file")
    p.add_argument("--reject", nargs="+", metavar="ID", help="record these proposals as rejected")
    p.set_defaults(func=cmd_golden_suggest)
