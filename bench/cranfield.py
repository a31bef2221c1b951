"""Retrieval quality on Cranfield (1,400 aeronautics abstracts, 225 queries, graded qrels) through ragpipe's own code.

    .venv/bin/python bench/cranfield.py [--embedders minilm,minilm-onnx,minilm-onnx-int8] [--k 100] [--batch-size 64]
                                        [--data DIR] [--workdir DIR] [--readme]

Every abstract becomes one chunk (chunk id = Cranfield doc id) embedded by ragpipe.embed.load_embedder into a LanceDB
table through ragpipe.embed.sync_vectors, with the native BM25 index of ragpipe.embed.ensure_fts_index. The 225 queries
are run through ragpipe.rag.retrieve_many (all queries of a mode in one call): vector, full-text and hybrid
(reciprocal-rank fusion of both at depth 4k), k results each. nDCG@10, recall@100 and MRR are computed with
ragpipe.rag.ranking AND with trec_eval's C code (pytrec_eval, from pytrec-eval-terrier in the dev extra) on the same
rankings; both are printed with the largest absolute difference over every per-query value and mean.

The rankings are evaluated as ragpipe returned them: trec_eval re-sorts by score and breaks ties by doc id, so it is
given rank-derived scores (k + 1 - rank), which preserve ragpipe's order exactly.

Writes bench/results/cranfield.json; --readme also replaces this benchmark's section of bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, ROOT, machine, write_json  # noqa: E402

from ragpipe import embed, rag  # noqa: E402
from ragpipe.embed import Embedder, load_embedder  # noqa: E402
from ragpipe.ingest import Chunk, content_hash  # noqa: E402
from ragpipe.settings import EmbedderSettings  # noqa: E402

DEFAULT_DATA = (ROOT / ".." / "shared" / "data" / "cranfield" / "beir_format").resolve()
MODELS_DIR = ROOT / "warehouse" / "models"  # where ragpipe builds models (StaticEmbedder, the ONNX exports)
MODES = ("vector", "fts", "hybrid")
NDCG_K, RECALL_K = 10, 100


# ---------------------------------------------------------------------------------------------- data


def load_cranfield(data: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    queries = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    qrels = rag.load_beir_qrels(str(data / "qrels" / "test.tsv"))
    return corpus, queries, qrels


def doc_text(doc: dict[str, Any]) -> str:
    """The abstract as one chunk. Cranfield's `text` already starts with the title for 1,396 of 1,400 documents;
    for the other four the title is prepended. Documents 471 and 995 are empty in the collection and stay empty."""
    title, text = (doc.get("title") or "").strip(), (doc.get("text") or "").strip()
    if title and not text.startswith(title):
        return f"{title} . {text}" if text else title
    return text


def chunks_of(corpus: list[dict[str, Any]]) -> list[Chunk]:
    out = []
    for d in corpus:
        text = doc_text(d)
        out.append(Chunk(d["_id"], d["_id"], 0, text, 0, len(text), None, None, content_hash(text)))
    return out


# ---------------------------------------------------------------------------------------------- retrieval


def run_retrieval(
    emb: Embedder, chunks: list[Chunk], queries: list[dict[str, Any]], lancedb_dir: Path, k: int
) -> tuple[dict[str, dict[str, list[str]]], dict[str, float]]:
    """{mode: {query_id: ranked doc ids}} and timings, through ragpipe.embed and ragpipe.rag."""
    timings: dict[str, float] = {}
    db = embed.connect(lancedb_dir)
    t0 = time.perf_counter()
    table, sync = embed.sync_vectors(db, emb, chunks, run_id=uuid.uuid4().hex)
    timings["sync_vectors_s"] = time.perf_counter() - t0
    timings["encode_corpus_s"] = sync.encode_seconds
    t0 = time.perf_counter()
    embed.ensure_fts_index(table)
    timings["fts_index_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    qvecs = emb.encode([q["text"] for q in queries])
    timings["encode_queries_s"] = time.perf_counter() - t0
    runs: dict[str, dict[str, list[str]]] = {m: {} for m in MODES}
    for mode in MODES:
        t0 = time.perf_counter()
        ranked = rag.retrieve_many(table, mode, k, [q["text"] for q in queries], qvecs)
        for q, hits in zip(queries, ranked):
            runs[mode][q["_id"]] = [h.chunk_id for h in hits]
        timings[f"search_{mode}_ms_per_query"] = 1000 * (time.perf_counter() - t0) / len(queries)
    return runs, timings


# ---------------------------------------------------------------------------------------------- evaluation


def reference_eval(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """trec_eval (pytrec_eval) on the same rankings: per query, and means over ragpipe.rag.ranking' query set."""
    import pytrec_eval

    scored = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in run.items() if ids}
    measures = {f"ndcg_cut.{NDCG_K}", f"recall.{RECALL_K}", "recip_rank"}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(scored)
    names = {f"ndcg@{NDCG_K}": f"ndcg_cut_{NDCG_K}", f"recall@{RECALL_K}": f"recall_{RECALL_K}", "mrr": "recip_rank"}
    evaluated = rag.evaluated_queries(qrels)
    per = {ours: {q: (res[q][key] if q in res else 0.0) for q in evaluated} for ours, key in names.items()}
    out: dict[str, Any] = {
        "n_queries": len(evaluated),
        "queries_missing_from_run": sum(q not in res for q in evaluated),
    }
    out.update({name: sum(v.values()) / len(v) for name, v in per.items()})
    out["per_query"] = per
    return out


def compare(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    ours = rag.evaluate_ranking(run, qrels, ndcg_k=NDCG_K, recall_k=RECALL_K, mrr_k=None)
    ref = reference_eval(run, qrels)
    diff = 0.0
    for name in ours["per_query"]:  # type: ignore[union-attr]
        diff = max(diff, abs(ours[name] - ref[name]))  # type: ignore[operator]
        for q, v in ours["per_query"][name].items():  # type: ignore[index]
            diff = max(diff, abs(v - ref["per_query"][name][q]))
    names = [n for n in ours if n not in ("per_query", "n_queries")]
    return {
        "n_queries": ours["n_queries"],
        "ragpipe": {n: ours[n] for n in names},
        "trec_eval": {n: ref[n] for n in names},
        "max_abs_diff": diff,
    }


def evaluate_embedder(
    name: str,
    corpus_chunks: list[Chunk],
    queries: list[dict[str, Any]],
    qrels: dict[str, dict[str, int]],
    workdir: Path,
    k: int,
    batch_size: int,
    emb: Embedder | None = None,
    log: Any = print,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    emb = emb or load_embedder(EmbedderSettings(name=name, batch_size=batch_size), MODELS_DIR)
    load_s = time.perf_counter() - t0
    runs, timings = run_retrieval(emb, corpus_chunks, queries, workdir / f"lancedb-{name}", k)
    timings["load_embedder_s"] = load_s
    result: dict[str, Any] = {"embedder": name, "tag": emb.tag, "timings": {t: round(v, 3) for t, v in timings.items()}}
    result["modes"] = {mode: compare(runs[mode], qrels) for mode in MODES}
    for mode in MODES:
        r = result["modes"][mode]
        log(
            f"  {name:18s} {mode:7s} ragpipe "
            + " ".join(f"{n}={v:.4f}" for n, v in r["ragpipe"].items())
            + "  trec_eval "
            + " ".join(f"{n}={v:.4f}" for n, v in r["trec_eval"].items())
            + f"  max|diff|={r['max_abs_diff']:.2e}"
        )
    return result


# ---------------------------------------------------------------------------------------------- report


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| embedder (tag) | retrieval | nDCG@10 | recall@100 | MRR | trec_eval nDCG@10 / recall@100 / MRR | max abs diff |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['embedder']} | failed: {r['error']} | | | | | |")
            continue
        for mode in MODES:
            m = r["modes"][mode]
            a, b = m["ragpipe"], m["trec_eval"]
            lines.append(
                f"| {r['embedder']} (`{r['tag']}`) | {mode} | {a['ndcg@10']:.4f} | {a['recall@100']:.4f} | {a['mrr']:.4f} "
                f"| {b['ndcg@10']:.4f} / {b['recall@100']:.4f} / {b['mrr']:.4f} | {m['max_abs_diff']:.1e} |"
            )
    return "\n".join(lines)


def replace_readme_section(marker: str, body: str) -> None:
    """Replace the text between <!-- marker:begin --> and <!-- marker:end --> in bench/README.md (appended when
    absent), leaving every other section of the file as it is."""
    path = ROOT / "bench" / "README.md"
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedders", default="minilm", help="comma-separated ragpipe embedder names")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workdir", type=Path, default=None, help="LanceDB tables go here (default: a temporary dir)")
    ap.add_argument("--out", type=Path, default=RESULTS / "cranfield.json")
    ap.add_argument("--readme", action="store_true", help="write the table into bench/README.md's Cranfield section")
    args = ap.parse_args(argv)

    corpus, queries, qrels = load_cranfield(args.data)
    chunks = chunks_of(corpus)
    print(
        f"Cranfield: {len(corpus)} documents, {len(queries)} queries, "
        f"{sum(len(v) for v in qrels.values())} qrels rows, {len(rag.evaluated_queries(qrels))} queries with relevant docs"
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragpipe-cranfield-"))
    results = []
    try:
        for name in [n.strip() for n in args.embedders.split(",") if n.strip()]:
            try:
                results.append(evaluate_embedder(name, chunks, queries, qrels, workdir, args.k, args.batch_size))
            except Exception as exc:  # noqa: BLE001  (one failing embedder is a finding; the others still run)
                msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                print(f"  {name}: FAILED {msg}", flush=True)
                results.append({"embedder": name, "error": msg})
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    table = markdown_table(results)
    print()
    print(table)
    overall = max((m["max_abs_diff"] for r in results if "modes" in r for m in r["modes"].values()), default=0.0)
    print(f"\nlargest |ragpipe.rag.ranking - trec_eval| over all per-query values and means: {overall:.2e}")
    command = "python bench/cranfield.py " + " ".join(argv if argv is not None else sys.argv[1:])
    write_json(
        args.out,
        {
            "command": command.strip(),
            "data": str(args.data),
            "k": args.k,
            "n_documents": len(corpus),
            "n_queries": len(queries),
            "metric_conventions": "ragpipe.rag.ranking module docstring; reference: pytrec_eval (trec_eval) ndcg_cut.10, recall.100, recip_rank",
            "max_abs_diff_overall": overall,
            "results": results,
            "machine": machine(),
        },
    )
    print(f"wrote {args.out}")
    if args.readme:
        replace_readme_section("cranfield", readme_section(results, overall, command.strip()))
        print("updated bench/README.md (Cranfield section)")
    return 0


def readme_section(results: list[dict[str, Any]], overall: float, command: str) -> str:
    return f"""## Retrieval quality: Cranfield

```sh
.venv/bin/{command}
```

Cranfield 1400 in BEIR layout (`shared/data/cranfield/beir_format`): 1,400 aeronautics abstracts, each one chunk;
225 queries; 1,612 graded qrels (4 = complete answer … 1 = minimum interest; every query has a relevant document).
Embedded through `ragpipe.embed.sync_vectors` into LanceDB with `ragpipe.embed.ensure_fts_index`; retrieved with
`ragpipe.rag` (vector, native BM25 full-text, hybrid = reciprocal-rank fusion at depth 4k), k = 100.
Metrics from `ragpipe.rag.ranking` (linear-gain nDCG@10, recall@100, MRR without cutoff; means over the 225 queries) and,
for the same rankings, from trec_eval's C code via pytrec_eval (`pytrec-eval-terrier`, dev extra). Largest absolute
difference over every per-query value and mean: **{overall:.1e}**.

{markdown_table(results)}

Results: `bench/results/cranfield.json` (per-query values are recomputable from the rankings; timings per embedder).
"""


if __name__ == "__main__":
    raise SystemExit(main())
