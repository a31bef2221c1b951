"""`ragpipe review`: a person decides the verdicts the rules leave `needs_review` (or overrules one)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragpipe.cli.common import settings_from
from ragpipe.core import EXIT_BLOCKED, EXIT_OK


def _show(p: Any, question: str, expected: str) -> None:
    print(f"\n{p.question_id}  ({p.kind}, {p.verdict})")
    print(f"  question: {question}")
    print(f"  expected: {expected}")
    print(f"  why:      {p.reason}")
    print("  answer:   " + "\n            ".join(p.answer.strip().splitlines() or ["(empty)"]))


def cmd_review(args: argparse.Namespace) -> int:
    from ragpipe.evaluate import decide_review, latest
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    with connect(settings.duckdb_path, wait_s=args.wait) as con:
        if args.decide:
            qid, decision = args.decide
            decide_review(con, qid, decision, args.note)
            print(f"{qid}: {decision} (recorded; reused on every later run that gives this answer to this test)")
            return EXIT_OK
        pending = latest(con)
        if args.list or not pending:
            for p in pending:
                print(f"{p.question_id:<12} {p.reason}")
            print(f"{len(pending)} verdict(s) need review" + ("" if pending else ": nothing to do"))
            return EXIT_BLOCKED if pending and args.list else EXIT_OK
        rows = con.execute("SELECT question_id, question, expected_answer FROM golden_tests").fetchall()
        tests = {q: (question, expected) for q, question, expected in rows}
        decided = 0
        for p in pending:
            _show(p, *tests.get(p.question_id, ("?", "?")))
            choice = _ask("  [p]ass, [f]ail, [s]kip, [q]uit? ", "pfsq")
            if choice == "q":
                break
            if choice == "s":
                continue
            note = input("  note (optional): ").strip() or None
            decide_review(con, p.question_id, {"p": "pass", "f": "fail"}[choice], note)
            decided += 1
        left = len(latest(con))
    print(f"\n{decided} decided; {left} still need review")
    return EXIT_OK


def _ask(prompt: str, allowed: str) -> str:
    while True:
        try:
            answer = input(prompt).strip().lower()[:1]
        except EOFError:
            print(file=sys.stderr)
            return "q"
        if answer and answer in allowed:
            return answer


def add_parsers(sub: Any) -> None:
    """review."""
    p = sub.add_parser(
        "review",
        help="decide the verdicts the rules could not settle (needs_review), or overrule one",
        description="Lists the latest run's needs_review verdicts one by one with the question, the expected answer, "
        "why the rules are unsure and the answer itself, and records your decision (pass or fail, with an optional "
        "note). A decision is kept in the warehouse's `reviews` table, keyed by the test's own content and the "
        "answer text: every later run that produces the same answer to the same test reuses it, and so does an "
        "answer that makes the same claims (courtesy, talk about the sources, markup, citation marks and a JSON "
        "answer's metadata fields aside; "
        "recorded for that answer, naming the one decided on); a different claim is judged afresh. The "
        "`manual_corrections` view gives the share of each run's verdicts that a decision "
        "overruled; `corrections_by_reason` the decisions per kind of reason the rule gave, so a rule a reviewer "
        "keeps overruling shows.",
        epilog="""\
Examples:
  ragpipe review                                   one needs_review verdict after another, interactively
  ragpipe review --list                            what awaits review (exit 1 while anything does)
  ragpipe review --decide neg_07 pass --note "cites the 2023 figure as the documents' only one"
  ragpipe sql "SELECT * FROM manual_corrections"   reviewed and overruled verdicts per run
  ragpipe sql "SELECT * FROM corrections_by_reason" which reasons reviewers overrule most""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--list", action="store_true", help="list what needs review and exit (1 while anything does)")
    p.add_argument(
        "--decide",
        nargs=2,
        metavar=("QID", "VERDICT"),
        help="record a decision for one test of the latest run without prompting: QID pass|fail",
    )
    p.add_argument("--note", help="why (stored with the decision, shown as the verdict's reason)")
    p.add_argument(
        "--wait", type=float, default=30.0, help="seconds to wait while a run holds the writer lock (default 30)"
    )
    p.set_defaults(func=cmd_review)
