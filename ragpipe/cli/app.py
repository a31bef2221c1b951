"""The root parser (its help: examples, the choices the settings file accepts, exit codes) and `main`; each command
group declares its own sub-parser next to its commands."""

from __future__ import annotations

import argparse

from ragpipe.cli import compare, golden, init, monitor, niah, review, runs, score, warehouse
from ragpipe.cli.common import run
from ragpipe.settings import SETTINGS_ENV


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
  ragpipe init                      set up in an existing directory of documents (ragpipe.toml, a first golden set)
  ragpipe demo                      materialize the whole graph on the configured corpus, print what happened
  ragpipe ingest                    corpus -> documents -> chunks -> embeddings (only what changed)
  ragpipe ci --junit report.xml     bring everything up to date and gate on the verdicts (exit 1 when blocked)
  ragpipe golden validate           check the golden set file, listing every problem with line and field
  ragpipe golden restamp --write    re-stamp trap/evidence chunk ids after re-chunking (a reviewable diff)
  ragpipe golden suggest            propose near-miss negatives from the corpus, each with its proof of absence
  ragpipe score --answers FILE.jsonl score answers produced elsewhere with the same verdict rule
  ragpipe review                    decide the verdicts the rules left needs_review (kept for the same answer)
  ragpipe compare --set embedder.name=minilm-static   what a candidate would do, changing nothing
  ragpipe history neg_03            one test's verdict over time, with the cause of each change
  ragpipe sql "SELECT * FROM latest_verdicts"   read-only SQL over the warehouse
  ragpipe export --to s3://bucket/ragpipe       every table and view as Parquet (a local directory works too)
  ragpipe niah run                  needle-in-a-haystack grid ([niah] settings): trials, heatmaps, effective length
  ragpipe monitor --gate            the app's new production traces in, rates per day, exit 1 when one drifts

Choices (in the settings file):
{_choices()}

Exit codes:
  0  ok
  1  the gate blocked: a blocking verdict ([gate].block), a blocking flip in `compare`, or an evaluation run that
     failed for a reason other than its input
  2  a usage, settings or golden set file error: the message names the file, line or field to fix
  3  the warehouse stayed locked by a running writer longer than --wait
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragpipe",
        description="Golden-set evaluation for RAG that tells a passing test from a test that did not run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--settings", help=f"settings file (default: ${SETTINGS_ENV} or ./ragpipe.toml)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    init.add_parser(sub)
    for group in (
        runs,
        golden,
        score,
        review,
        niah,
        monitor,
        compare,
        warehouse,
    ):  # the order `ragpipe --help` lists them in
        group.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run(args)
