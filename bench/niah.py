"""Needle-in-a-haystack benchmark: the retrieval path's length x depth matrix on Paul Graham's essays.

    .venv/bin/python bench/niah.py                       # 2K..32K tokens, 5 depths, all 5 needle types, 1 repetition
    .venv/bin/python bench/niah.py --lengths 2000,4000 --reps 2 --figures docs
    .venv/bin/python bench/niah.py --answerer smollm2 --subjects full_context --lengths 1000,2000 --depths 0,50,100 \
        --needle-types numeric --reps 3 --max-tokens 48 --skip-128k --tag smollm2 --keep /tmp/niah-smollm2

Stopped (Ctrl-C) and started again with the same --keep folder and arguments, it resumes: only the trials not yet
stored are evaluated.

Measures trials per second per subject and the haystack build time at 128K tokens (filler plus the insertion of each
needle type), writes bench/results/niah-<time>.json, and copies the heatmaps to --figures (docs/ by default).
The full-context subject runs too, with the configured answerer (the extractive baseline offline): a reference shape.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401  (offline environment first)

DEFAULT_DATA = (ROOT / ".." / "shared" / "data" / "pg_essays").resolve()

TOML = """
[warehouse]
dir = {warehouse}
[corpus]
dir = {data}
[retriever]
mode = "{mode}"
k = {k}
[answerer]
kind = "{answerer}"
threads = {threads}
[answerer.openai]
base_url = {base_url}
model = {model}
max_tokens = {max_tokens}
[niah]
seed = {seed}
haystack_dir = {data}
lengths = [{lengths}]
depths = [{depths}]
repetitions = {reps}
needle_types = [{needle_types}]
methods = [{methods}]
subjects = [{subjects}]
distractors = 1
off_theme_ratio = 0.1
window = {window}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--lengths", default="2000,4000,8000,16000,32000")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=20241129)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--subjects", default="retrieval,full_context")
    ap.add_argument("--depths", default="0,25,50,75,100")
    ap.add_argument("--needle-types", default="proper_noun,numeric,negative,cross_sentence,table_cell")
    ap.add_argument("--methods", default="direct")
    ap.add_argument("--answerer", default="extractive", help="extractive | smollm2 | openai ([answerer].kind)")
    ap.add_argument("--base-url", default="http://127.0.0.1:8088/v1", help="openai answerer: the endpoint")
    ap.add_argument("--model", default="smollm2", help="openai answerer: the model name")
    ap.add_argument("--max-tokens", type=int, default=128, help="answer tokens (also kept free in the window)")
    ap.add_argument("--window", type=int, default=0, help="full-context window; 0 = the answerer's own")
    ap.add_argument("--skip-128k", action="store_true", help="skip the 128K haystack build timing")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="[answerer].threads: torch threads for the smollm2 answerer (0 = torch's default)",
    )
    ap.add_argument("--figures", type=Path, default=ROOT / "docs")
    ap.add_argument("--tag", default="", help="figure names: docs/niah[_TAG]_<subject>.png")
    ap.add_argument("--keep", type=Path, help="keep the warehouse here instead of a temporary directory")
    ap.add_argument(
        "--parse",
        action="store_true",
        help="parse --data first as `ragpipe ingest` does, so PDF and HTML documents become haystacks",
    )
    args = ap.parse_args(argv)

    from ragpipe.niah import (
        build_haystack,
        load_tokenizer,
        make_needles,
        new_run_id,
        place_needle,
        render_text,
        report,
        run_trials,
        source_paragraphs,
    )
    from ragpipe.settings import NEEDLE_TYPES, load_settings
    from ragpipe.warehouse import connect

    work = args.keep or Path(tempfile.mkdtemp(prefix="niah-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    q = json.dumps
    (work / "ragpipe.toml").write_text(
        TOML.format(
            warehouse=q(str(work / "warehouse")),
            data=q(str(args.data)),
            mode=args.mode,
            k=args.k,
            seed=args.seed,
            lengths=args.lengths,
            reps=args.reps,
            subjects=", ".join(q(s) for s in args.subjects.split(",")),
            depths=args.depths,
            needle_types=", ".join(q(s) for s in args.needle_types.split(",")),
            methods=", ".join(q(s) for s in args.methods.split(",")),
            answerer=args.answerer,
            base_url=q(args.base_url),
            model=q(args.model),
            max_tokens=args.max_tokens,
            window=args.window,
            threads=args.threads,
        ),
        encoding="utf-8",
    )
    settings = load_settings(work / "ragpipe.toml")
    results: dict[str, object] = {
        "data": str(args.data),
        "lengths": args.lengths,
        "reps": args.reps,
        "retriever": f"{args.mode} k={args.k}",
        "seed": args.seed,
        "argv": sys.argv[1:],
        "answerer": args.answerer,
        "max_tokens": args.max_tokens,
    }

    results["threads"] = args.threads or None
    t0 = time.perf_counter()
    tok = load_tokenizer("minilm")
    results["tokenizer_load_s"] = round(time.perf_counter() - t0, 2)
    if not args.skip_128k:
        docs = source_paragraphs(args.data)
        t1 = time.perf_counter()
        big = build_haystack(docs, 128_000, 0, args.seed, tok, 0.1)
        build_s = time.perf_counter() - t1
        inserts = {}
        for t in NEEDLE_TYPES:
            needle, distractors = make_needles(t, 1, 1)
            t2 = time.perf_counter()
            pl = place_needle(big.text, needle, distractors, 50.0, tok, 1)
            inserts[t] = round(time.perf_counter() - t2, 3)
        results["haystack_128k"] = {
            "tokens": big.n_tokens,
            "chars": len(big.text),
            "build_s": round(build_s, 3),
            "repeats": big.repeats,
            "insert_s_by_type": inserts,
            "depth_at_50": pl.depth,
        }
        print(
            f"128K haystack: {big.n_tokens} tokens built in {build_s:.2f} s; insertion (needle + 1 distractor, "
            f"offsets re-measured) {inserts} s",
            flush=True,
        )

    if args.parse:  # haystacks from the documents as the graph parses them (PDF, HTML, Markdown, text)
        from ragpipe.ingest import parse_documents, sync_corpus

        t1 = time.perf_counter()
        with connect(settings.duckdb_path) as con:
            sync_corpus(settings, con, "bench-parse")
            parsed = parse_documents(settings, con, "bench-parse")
            formats = con.execute(
                "SELECT format, count(*), sum(n_chars) FROM documents GROUP BY 1 ORDER BY 1"
            ).fetchall()
        results["parsed"] = {"seconds": round(time.perf_counter() - t1, 1), "stats": parsed, "formats": formats}
        print(f"parsed {args.data} in {time.perf_counter() - t1:.1f} s: {formats}", flush=True)

    started = time.perf_counter()
    last = {"k": ""}

    def progress(stage: str, done: int, total: int) -> None:
        if stage.endswith(": trials"):
            return  # one line per trial comes through the log
        key = f"{stage}:{int(10 * done / max(total, 1))}"
        if key != last["k"]:
            last["k"] = key
            print(f"  [{time.perf_counter() - started:7.1f} s] {stage}: {done}/{total}", flush=True)

    run_id = new_run_id()
    with connect(settings.duckdb_path) as con:
        stats = run_trials(
            settings, con, run_id, trigger="bench", log=lambda m: print(m, flush=True), progress=progress
        )
        run_id = stats["run_id"]  # a resumed run keeps its first id
        per_subject = con.execute(
            "SELECT subject, count(*), sum(latency_s), avg(exact), avg(field_score), avg(retrieval_score), "
            "avg(refused::INT), avg(hallucinated::INT), count(*) FILTER (WHERE status = 'scored'), "
            "count(*) FILTER (WHERE status = 'overflow'), avg(latency_s), avg(input_tokens), avg(output_tokens) "
            "FROM niah_trials WHERE run_id = ? GROUP BY 1 ORDER BY 1",
            [run_id],
        ).fetchall()
        by_type = con.execute(
            "SELECT subject, needle_type, avg(exact), avg(retrieval_score), avg(refused::INT), avg(hallucinated::INT) "
            "FROM niah_trials WHERE run_id = ? GROUP BY ALL ORDER BY ALL",
            [run_id],
        ).fetchall()
        hs = con.execute(
            "SELECT length_target, rep, n_tokens, build_seconds FROM niah_haystacks ORDER BY 1, 2"
        ).fetchall()
        rep = report(settings, con, run_id)
        text = render_text(rep, con, 0.85)
    results["run"] = stats
    results["per_subject"] = [
        dict(
            zip(
                [
                    "subject",
                    "rows",
                    "answer_latency_s",
                    "exact",
                    "field_score",
                    "retrieval_score",
                    "refusal_rate",
                    "hallucination_rate",
                    "scored",
                    "overflow",
                    "latency_s_per_scored_trial",
                    "input_tokens_per_scored_trial",
                    "output_tokens_per_scored_trial",
                ],
                r,
            )
        )
        for r in per_subject
    ]
    results["by_type"] = [
        dict(zip(["subject", "needle_type", "exact", "retrieval_score", "refusal_rate", "hallucination_rate"], r))
        for r in by_type
    ]
    results["haystacks"] = [dict(zip(["length", "rep", "tokens", "build_s"], r)) for r in hs]
    results["report"] = rep
    print(text)
    args.figures.mkdir(parents=True, exist_ok=True)
    figs = []
    for png in rep["figures"]:
        dst = args.figures / f"niah{'_' + args.tag if args.tag else ''}_{Path(png).name}"
        shutil.copy(png, dst)
        figs.append(str(dst.relative_to(ROOT)) if dst.is_relative_to(ROOT) else str(dst))
    results["figures"] = figs
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"niah-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    print(f"\nresults: {path}\nfigures: {', '.join(figs)}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
