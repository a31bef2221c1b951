"""Evaluation throughput (questions/s) of retrieval + answering + verdicts: batched against one-by-one retrieval.

    .venv/bin/python bench/eval_throughput.py --realdocs --tests 10000 --workdir /tmp/ragpipe-evalbench
    .venv/bin/python bench/eval_throughput.py --realdocs --tests 500 --workdir /tmp/ragpipe-evalbench   # quick check
    make demo && .venv/bin/python bench/eval_throughput.py                       # the bundled 43-question example

--realdocs builds a project over realdocs' non-PDF files (parsed, chunked, embedded with --embedder, default
minilm-static; kept in --workdir, so a second run skips the ingest) and writes a synthetic golden set of --tests
tests generated deterministically (--seed) from the sentences of its chunks: positive tests whose evidence is a real
sentence and whose expected answer is a number or a word of it, negative tests whose trap is a real sentence with a
number, asked about another year. Without --realdocs the existing warehouse of --settings is used with its golden set.

Runs the three evaluation stages of ragpipe/evaluate/ (embedder loaded once; --warmup untimed passes, then
--repeat timed ones, per path) with batched retrieval (ragpipe.rag.retrieve_many, as the library runs) and with
one retrieve() call per question, prints per-stage seconds and questions/s for both and their ratio, and the number
of tests whose verdict, reason or anchor rank differs between the paths and passes: the exit status is 1 when any
differs. Its own eval runs are removed afterwards. Run from a checkout of a library without retrieve_many, it
measures that library's own loop only (the "before" figure in bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ragpipe  # noqa: E402,F401  (offline environment)
import ragpipe.evaluate.retrievals as retrievals  # noqa: E402  (its retrieve_many is swapped per pass)
from ragpipe import embed, evaluate, ingest, rag  # noqa: E402
from ragpipe.embed import load_embedder  # noqa: E402
from ragpipe.settings import Settings, load_settings  # noqa: E402
from ragpipe.warehouse import connect  # noqa: E402

REALDOCS = (Path(__file__).resolve().parents[2] / "shared" / "data" / "realdocs" / "docs").resolve()

SETTINGS_TOML = """
[warehouse]
dir = {warehouse}
{models_dir}

[corpus]
dir = {corpus}
exclude = ["**/.*", "**/*.pdf", "**/*.PDF"]

[parser]
pdf_strategy = "fast"

[chunker]
strategy = "by_title"
max_characters = 800
new_after_n_chars = 600
overlap = 0
combine_text_under_n_chars = 200

[embedder]
name = {embedder}
device = "cpu"

[golden]
path = "golden.jsonl"

[retriever]
mode = {mode}
k = 5
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def build_realdocs(workdir: Path, docs: Path, embedder: str, mode: str, models_dir: Path | None) -> Settings:
    """The project over realdocs' non-PDF files in `workdir` (ingested once; a later run reuses it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "ragpipe.toml"
    path.write_text(
        SETTINGS_TOML.format(
            warehouse=json.dumps(str(workdir / "warehouse")),
            models_dir=f"models_dir = {json.dumps(str(models_dir))}" if models_dir else "",
            corpus=json.dumps(str(docs)),
            embedder=json.dumps(embedder),
            mode=json.dumps(mode),
        ),
        encoding="utf-8",
    )
    s = load_settings(path)
    with connect(s.duckdb_path) as con:
        done = con.execute("SELECT count(*) FROM embeddings WHERE chunker_tag = ?", [s.chunker_tag]).fetchone()[0]
        if done:
            log(f"reusing the project in {workdir} ({done} vectors)")
            return s
        t0 = time.perf_counter()
        for name, stage in [
            ("corpus", ingest.sync_corpus),
            ("documents", ingest.parse_documents),
            ("chunks", ingest.chunk_documents),
            ("embeddings", embed.embed_chunks),
        ]:
            log(f"ingest: {name}")
            stage(s, con, "bench-ingest", lambda m: log("  " + m))
        log(f"ingested realdocs (non-PDF) in {time.perf_counter() - t0:.0f} s")
    return s


_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{5,}")


def synthetic_golden(con: Any, chunker_tag: str, n: int, seed: int, embedder_tag: str) -> list[dict[str, Any]]:
    """`n` tests from the sentences of the chunks (every quote checked to occur in its document), in a fixed order."""
    from ragpipe.golden import plain_form, quote_form

    docs = evaluate.documents_text(con)
    plain: dict[str, str] = {}
    rows = con.execute(
        "SELECT chunk_id, doc_id, text FROM chunks WHERE chunker_tag = ? ORDER BY chunk_id", [chunker_tag]
    ).fetchall()
    sentences: list[tuple[str, str]] = []  # (doc id, sentence)
    seen: set[str] = set()
    for _cid, doc_id, text in rows:
        for s in re.split(r"(?<=[.!?])\s+", text):
            s = s.strip()
            if not 50 <= len(s) <= 240 or "\n" in s or "|" in s or s in seen or len(s.split()) < 8:
                continue
            if doc_id not in plain:
                plain[doc_id] = plain_form(docs[doc_id])
            if plain_form(s) in plain[doc_id]:
                seen.add(s)
                sentences.append((doc_id, s))

    def trap_values(s: str) -> list[str]:  # numbers that the golden set's check finds in the quote (not list markers)
        return [v for v in _NUMBER.findall(s) if quote_form(v).lower() in quote_form(s).lower()]

    with_number = [(d, s) for d, s in sentences if trap_values(s)]
    if not sentences or not with_number:
        raise SystemExit("no usable sentences in the chunks")
    rng = random.Random(seed)
    tests = []
    for i in range(n):
        if i % 3 == 2:  # a third negative: a real sentence with a number is the trap, the question asks another year
            doc_id, s = rng.choice(with_number)
            value = rng.choice(trap_values(s))
            words = [w for w in re.findall(r"[\w'-]+", s) if w != value][:14]
            year = rng.choice(["1987", "1993", "2041", "2052"])
            tests.append(
                {
                    "question_id": f"neg_{i:05d}",
                    "kind": "negative",
                    "question": f"In {year}, what was the figure for: {' '.join(words)}?",
                    "expected_answer": "not in documents",
                    "trap_quote": s,
                    "trap_source": doc_id,
                    "trap_value": value,
                    "embedder_tag": embedder_tag,
                }
            )
            continue
        doc_id, s = rng.choice(sentences)
        options = _NUMBER.findall(s) or _WORD.findall(s) or [s.split()[-1].strip(".!?")]
        answer = rng.choice(options)
        words = [w for w in re.findall(r"[\w'-]+", s) if w != answer][:14]
        tests.append(
            {
                "question_id": f"pos_{i:05d}",
                "kind": "positive",
                "question": f"What does the documentation state about {' '.join(words)}?",
                "expected_answer": answer,
                "evidence_quote": s,
                "evidence_source": doc_id,
                "embedder_tag": embedder_tag,
            }
        )
    return tests


def one_by_one(table: Any, mode: str, k: int, queries: list[str], vectors: Any, nprobes: int = 20) -> list[Any]:
    """The old path: one retrieve() call (one vector and one full-text query) per question."""
    return [
        rag.retrieve(table, mode, k, q, vectors[i] if vectors is not None else None, nprobes)
        for i, q in enumerate(queries)
    ]


def run_path(s: Settings, con: Any, emb: Any, rid: str, retrieve_many: Callable[..., Any] | None) -> dict[str, Any]:
    """The three stages; `retrieve_many` replaces the library's for this pass (None: the library as it is)."""
    original = getattr(retrievals, "retrieve_many", None)
    if retrieve_many is not None:
        retrievals.retrieve_many = retrieve_many
    try:
        t0 = time.perf_counter()
        r = evaluate.retrieve_stage(s, con, rid, trigger="bench", embedder=emb)
        t1 = time.perf_counter()
        evaluate.answer_stage(s, con, rid)
        t2 = time.perf_counter()
        evaluate.verdict_stage(s, con, rid)
        t3 = time.perf_counter()
    finally:
        if retrieve_many is not None:
            retrievals.retrieve_many = original
    verdicts = con.execute(
        "SELECT question_id, verdict, reason, anchor_rank FROM verdicts WHERE eval_run_id = ? ORDER BY question_id",
        [rid],
    ).fetchall()
    return {"n": r["questions"], "retrieve": t1 - t0, "answer": t2 - t1, "verdict": t3 - t2, "verdicts": verdicts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", default="ragpipe.toml", help="without --realdocs: the project to measure")
    ap.add_argument("--realdocs", action="store_true", help="a synthetic golden set over realdocs (non-PDF files)")
    ap.add_argument("--docs", type=Path, default=REALDOCS, help="realdocs' docs directory, only read")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the realdocs project here (default: temporary)")
    ap.add_argument("--models-dir", type=Path, default=None, help="[warehouse].models_dir for the realdocs project")
    ap.add_argument("--embedder", default="minilm-static", help="the realdocs project's embedder")
    ap.add_argument("--mode", default="hybrid", choices=["vector", "fts", "hybrid"], help="the realdocs retriever")
    ap.add_argument("--tests", type=int, default=10_000, help="synthetic tests (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="timed passes per path (median reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes per path first (default 1)")
    args = ap.parse_args()

    if args.realdocs:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragpipe-evalbench-"))
        s = build_realdocs(workdir.resolve(), args.docs.resolve(), args.embedder, args.mode, args.models_dir)
    else:
        s = load_settings(args.settings)
    emb = load_embedder(s.embedder, s.models_dir)
    paths: dict[str, Callable[..., Any] | None] = {"batched": None, "one-by-one": one_by_one}
    if not hasattr(evaluate, "retrieve_many"):  # a library from before batched retrieval: its own loop only
        paths = {"one-by-one": None}
        log("this library has no retrieve_many: measuring its own per-question loop only")
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    run_ids: list[str] = []
    with connect(s.duckdb_path) as con:
        if args.realdocs:
            golden = synthetic_golden(con, s.chunker_tag, args.tests, args.seed, emb.tag)
            assert s.golden.path is not None
            s.golden.path.write_text("".join(json.dumps(t) + "\n" for t in golden), encoding="utf-8")
            t0 = time.perf_counter()
            g = evaluate.load_golden_stage(s, con, "bench-golden", log=lambda m: None)
            evaluate.stamp_stage(s, con, "bench-golden")
            log(
                f"golden set: {g['tests']} tests ({g['positive']} positive, {g['negative']} negative), "
                f"{len(g['drifted'])} drifted; loaded and stamped in {time.perf_counter() - t0:.1f} s"
            )
        try:
            for rep in range(-args.warmup, args.repeat):  # negative: warm-up passes
                for name, fn in paths.items():
                    rid = f"bench-{name}-{rep if rep >= 0 else f'warmup{-rep}'}"
                    run_ids.append(rid)
                    r = run_path(s, con, emb, rid, fn)
                    log(
                        f"{name} {'warm-up' if rep < 0 else f'pass {rep + 1}'}: retrieve {r['retrieve']:.2f} s, "
                        f"answer {r['answer']:.2f} s, verdicts {r['verdict']:.2f} s"
                    )
                    if rep >= 0:
                        results[name].append(r)
        finally:
            for rid in run_ids:
                for table in ("verdicts", "answers", "retrievals", "eval_runs"):
                    con.execute(f"DELETE FROM {table} WHERE eval_run_id = ?", [rid])
        chunks = con.execute("SELECT count(*) FROM chunks WHERE chunker_tag = ?", [s.chunker_tag]).fetchone()[0]

    n = next(iter(results.values()))[0]["n"]
    print(
        f"answerer {s.answerer.kind}, retriever {s.retriever.mode} top-{s.retriever.k}, embedder {emb.tag}, "
        f"{chunks} chunks, {n} questions, median of {args.repeat}:"
    )
    rate = {}
    for name, rows in results.items():
        stage = {k: statistics.median(r[k] for r in rows) for k in ("retrieve", "answer", "verdict")}
        total = sum(stage.values())
        rate[name] = n / total if total else float("inf")
        print(
            f"  {name:>10}: retrieve {stage['retrieve']:.2f} s, answer {stage['answer']:.2f} s, "
            f"verdicts {stage['verdict']:.2f} s; total {total:.2f} s = {rate[name]:.1f} questions/s"
        )
    if len(rate) == 2:
        print(f"  batched / one-by-one: {rate['batched'] / rate['one-by-one']:.2f}x")
    every = [r for rows in results.values() for r in rows]
    base = every[0]["verdicts"]
    differ = sum(a != b for r in every for a, b in zip(r["verdicts"], base))
    differ += sum(len(r["verdicts"]) != len(base) for r in every)
    counts: dict[str, int] = {}
    for _q, v, _r, _a in base:
        counts[v] = counts.get(v, 0) + 1
    print(f"  verdicts: {', '.join(f'{k}={v}' for k, v in sorted(counts.items()))}")
    print(f"  tests whose verdict, reason or anchor rank differs between the paths (or passes): {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
