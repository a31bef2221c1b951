"""`ragpipe score`: answers produced elsewhere judged with the same verdict rule."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragpipe.cli.common import settings_from
from ragpipe.core import VERDICTS
from ragpipe.settings import SettingsError


def _settings_or_defaults(args: argparse.Namespace) -> Any:
    """The settings file; with --golden and no settings file anywhere, the defaults (a one-off grader needs none)."""
    from ragpipe.settings import settings_from_dict, settings_path

    if args.golden and not args.settings and not settings_path(None).is_file():
        return settings_from_dict({"corpus": {"dir": "."}}, Path.cwd() / "ragpipe.toml")  # scoring reads no corpus
    return settings_from(args)


def cmd_score(args: argparse.Namespace) -> int:
    import json

    from ragpipe.golden import load_golden
    from ragpipe.verdicts import load_answers, score

    settings = _settings_or_defaults(args)
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


def add_parsers(sub: Any) -> None:
    """score."""
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
    p.add_argument(
        "--golden",
        metavar="FILE",
        help="golden set file (default: [golden].path); with no settings file, the default settings are used",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_score)
