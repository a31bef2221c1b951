"""Evaluation throughput (questions/s) of retrieval + answering + verdicts with the configured answerer.

    make demo                               # builds the warehouse for the bundled example
    .venv/bin/python bench/eval_throughput.py [--settings ragpipe.toml] [--repeat 3]

Runs the three evaluation stages of ragpipe/evaluate.py on the existing warehouse (embedder loaded once, one warm-up
pass), prints per-stage seconds and questions/s, and removes its own eval runs afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ragpipe  # noqa: F401  (offline environment)
from ragpipe import evaluate
from ragpipe.embed import load_embedder
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", default="ragpipe.toml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    s = load_settings(args.settings)
    emb = load_embedder(s.embedder, s.models_dir)
    totals, rows = [], []
    with connect(s.duckdb_path) as con:
        run_ids = ["bench-warmup"] + [f"bench-eval-{i}" for i in range(args.repeat)]
        try:
            for rid in run_ids:
                t0 = time.perf_counter()
                r = evaluate.retrieve_stage(s, con, rid, trigger="bench", embedder=emb)
                t1 = time.perf_counter()
                evaluate.answer_stage(s, con, rid)
                t2 = time.perf_counter()
                evaluate.verdict_stage(s, con, rid)
                t3 = time.perf_counter()
                if rid != "bench-warmup":
                    totals.append(t3 - t0)
                    rows.append((r["questions"], t1 - t0, t2 - t1, t3 - t2))
        finally:
            for rid in run_ids:
                for table in ("verdicts", "answers", "retrievals", "eval_runs"):
                    con.execute(f"DELETE FROM {table} WHERE eval_run_id = ?", [rid])
    n = rows[0][0]
    med = statistics.median(totals)
    print(
        f"answerer {s.answerer.kind}, retriever {s.retriever.mode} top-{s.retriever.k}, {n} questions, median of {len(totals)}:"
    )
    print(
        f"  retrieve {statistics.median(r[1] for r in rows):.2f} s, answer {statistics.median(r[2] for r in rows):.3f} s, "
        f"verdicts {statistics.median(r[3] for r in rows):.3f} s; total {med:.2f} s = {n / med:.1f} questions/s"
    )


if __name__ == "__main__":
    main()
