"""Scale: ingestion memory as the corpus grows (perturbed copies of realdocs), ANN recall on real embeddings, and
search latency at 10k / 100k / 1M vectors.

    .venv/bin/python bench/scale.py memory  [--files 20] [--copies 1,3,10] [--embedder minilm-static]
                                            [--all-formats [--exclude-pdf]] [--streamed-only] [--one-connection]
    .venv/bin/python bench/scale.py recall  [--embedder minilm-static]
    .venv/bin/python bench/scale.py latency [--sizes 10000,100000,1000000] [--queries 100]

memory   builds corpora of 1x, 3x, 10x perturbed copies of --files realdocs Markdown files (every paragraph of copy j
         gets a " [rev j]" suffix, so no chunk is shared between copies), ingests each in a fresh process (parse,
         chunk, embed into LanceDB; ragpipe.ingest, no Dagster, one warehouse connection per stage as the assets
         open; --one-connection: all on one) and reports the process's peak RSS, overall and after each stage, next
         to the bytes of the vectors it holds. Each size runs twice: streamed (the default: new rows embedded and
         added ragpipe.embed.SLICE_ROWS at a time) and as one slice (the whole corpus's texts at once), in the same run.
         --all-formats: every realdocs file (--files 0: all 188), HTML perturbed the same way (" [rev j]" before each
         closing </p>, </li>, </dt>, </dd>, </td>, </pre> and heading tag), PDFs copied unchanged (their chunks' texts
         repeat across copies, so their vectors are reused by content hash, not embedded again). --streamed-only skips
         the one-slice run.
recall   real embeddings: Cranfield abstracts, and passages of up to 200 characters of realdocs' Markdown and text
         files and the Paul Graham essays, embedded by --embedder; recall@10 of the ANN index (ragpipe.embed.ensure_vector_index, as
         built above [retriever].ann_min_rows) against exact search, for the 225 Cranfield queries.
latency  synthetic clustered unit vectors (384 dims) in a LanceDB table with ragpipe's schema: p50/p95 latency of
         ragpipe.rag.vector_search, flat (exact) and with the ANN index, plus the index's build time and its
         recall@10 against exact numpy search.
Writes bench/results/scale-<mode>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import DEFAULT_DOCS, RESULTS, machine, write_json

SHARED = DEFAULT_DOCS.parents[1]


# ---------------------------------------------------------------------------------------------- memory


_HTML_BLOCK_END = re.compile(r"</(p|li|dt|dd|td|pre|h[1-6])>", re.IGNORECASE)


def perturbed_corpus(dest: Path, src: Path, files: list[Path], copies: int) -> None:
    for j in range(copies):
        for f in files:
            out = dest / f"copy{j:02d}" / f.relative_to(src).as_posix().replace("/", "__")
            out.parent.mkdir(parents=True, exist_ok=True)
            if f.suffix.lower() == ".pdf":  # no PDF writer here: copied as is (vectors reused by content hash)
                out.write_bytes(f.read_bytes())
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            if f.suffix.lower() in (".html", ".htm"):
                out.write_text(_HTML_BLOCK_END.sub(lambda m, j=j: f" [rev {j}]{m.group(0)}", text), encoding="utf-8")
                continue
            paras = re.split(r"\n\s*\n", text)
            out.write_text(
                "\n\n".join(
                    p.rstrip() + (f" [rev {j}]" if p.strip() and not p.lstrip().startswith("#") else "") for p in paras
                )
            )


def ingest_child(project: str, embedder: str, slice_rows: int, one_connection: bool = False) -> None:
    """Runs in a fresh process: the whole ingestion of one corpus; prints its figures as JSON."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ragpipe import embed, ingest
    from ragpipe.embed import store  # its SLICE_ROWS is set per pass
    from ragpipe.settings import load_settings
    from ragpipe.warehouse import connect

    if slice_rows:  # 0: the library's default
        store.SLICE_ROWS = slice_rows
    s = load_settings(Path(project) / "ragpipe.toml")

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    t0 = time.perf_counter()
    stage_peaks = {}  # the process's peak RSS so far, after each stage: which stage set the peak
    stages = (ingest.sync_corpus, ingest.parse_documents, ingest.chunk_documents, embed.embed_chunks)
    if one_connection:  # a library user running every stage on one connection: DuckDB's block cache spans them all
        with connect(s.duckdb_path) as con:
            for stage in stages:
                stats = stage(s, con, "r")
                stage_peaks[stage.__name__] = round(peak())
    else:  # a connection per stage, as each Dagster asset opens its own: DuckDB's block cache lives as long as it does
        for stage in stages:
            with connect(s.duckdb_path) as con:
                stats = stage(s, con, "r")
            stage_peaks[stage.__name__] = round(peak())
    with connect(s.duckdb_path, read_only=True) as con:
        errors = con.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
        chunks = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - t0,
                "vectors": stats["vectors"],
                "dims": stats["dims"],
                "embedded": stats["embedded"],
                "chunks": chunks,
                "ingest_errors": errors,
                "stage_peaks_mb": stage_peaks,
                "peak_rss_mb": peak(),
            }
        )
    )


def memory(args: argparse.Namespace) -> dict[str, Any]:
    src = args.docs if args.all_formats else args.docs / "markdown"
    files = sorted(f for f in src.rglob("*") if f.is_file() and (args.all_formats or f.suffix == ".md"))
    files = [f for f in files if not (args.exclude_pdf and f.suffix.lower() == ".pdf")]
    files = files[: args.files] if args.files else files
    work = Path(tempfile.mkdtemp(prefix="ragpipe-scale-"))
    models = work / "models"
    rows = []
    # Build the embedder's local model (minilm-static is distilled on first use) outside the measured processes.
    warm = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); import ragpipe; "
        f"from ragpipe.embed import load_embedder; from ragpipe.settings import EmbedderSettings; from pathlib import Path; "
        f"load_embedder(EmbedderSettings(name={args.embedder!r}), Path({str(models)!r}))"
    )
    subprocess.run([sys.executable, "-c", warm], check=True)
    for copies in [int(c) for c in args.copies.split(",")]:
        corpus = work / f"corpus-{copies}x"
        perturbed_corpus(corpus, src, files, copies)
        for mode, slice_rows in (("streamed", 0), ("one slice", 10**9))[: 1 if args.streamed_only else 2]:
            proj = work / f"proj-{copies}x-{'s' if slice_rows == 0 else 'one'}"
            proj.mkdir()
            (proj / "ragpipe.toml").write_text(
                f'[warehouse]\ndir = "warehouse"\nmodels_dir = "{models}"\n[corpus]\ndir = "{corpus}"\n'
                f'[embedder]\nname = "{args.embedder}"\n'
            )
            code = (
                f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import scale; "
                f"scale.ingest_child({str(proj)!r}, {args.embedder!r}, {slice_rows or 0}, {args.one_connection})"
            )
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            r.update(
                copies=copies, mode=mode, files=len(files) * copies, vectors_mb=r["vectors"] * r["dims"] * 4 / 2**20
            )
            rows.append(r)
            print(
                f"{copies:>3}x {mode:9s}: {r['files']} files, {r['vectors']} vectors ({r['vectors_mb']:.1f} MB, "
                f"{r['embedded']} embedded), {r['ingest_errors']} ingest errors, peak RSS {r['peak_rss_mb']:.0f} MB "
                f"(after each stage: {r['stage_peaks_mb']}), {r['seconds']:.0f} s",
                flush=True,
            )
    print(
        "\n| copies | files | vectors | vectors MB | peak RSS MB streamed | peak RSS MB one slice | "
        "streamed growth over 1x | vectors growth over 1x |\n|---|---|---|---|---|---|---|---|"
    )
    base = {r["mode"]: r for r in rows if r["copies"] == rows[0]["copies"]}
    for c in sorted({r["copies"] for r in rows}):
        s_ = next(r for r in rows if r["copies"] == c and r["mode"] == "streamed")
        o = next((f"{r['peak_rss_mb']:.0f}" for r in rows if r["copies"] == c and r["mode"] == "one slice"), "-")
        print(
            f"| {c}x | {s_['files']} | {s_['vectors']} | {s_['vectors_mb']:.1f} | {s_['peak_rss_mb']:.0f} | {o} | "
            f"{s_['peak_rss_mb'] - base['streamed']['peak_rss_mb']:+.0f} MB | {s_['vectors_mb'] - base['streamed']['vectors_mb']:+.1f} MB |"
        )
    return {"rows": rows, "files": [f.name for f in files], "embedder": args.embedder}


# ---------------------------------------------------------------------------------------------- recall / latency


def _table(db: Any, name: str, vectors: np.ndarray, batch: int = 100_000) -> Any:
    import pyarrow as pa

    from ragpipe.embed import store

    table = db.create_table(name, schema=store._schema(vectors.shape[1]))
    for i in range(0, len(vectors), batch):
        v = vectors[i : i + batch]
        table.add(
            pa.table(
                {
                    "chunk_id": [f"c{j}" for j in range(i, i + len(v))],
                    "doc_id": ["d"] * len(v),
                    "text": [""] * len(v),
                    "content_hash": [f"h{j}" for j in range(i, i + len(v))],
                    "n_tokens": pa.array([0] * len(v), pa.int32()),
                    "run_id": ["r"] * len(v),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel(), pa.float32()), v.shape[1]),
                },
                schema=store._schema(vectors.shape[1]),
            )
        )
    return table


def _exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[set[str]]:
    out = []
    for q in queries:
        sims = vectors @ q
        out.append({f"c{j}" for j in np.argpartition(-sims, k)[:k]})
    return out


def _search(table: Any, queries: np.ndarray, k: int, nprobes: int = 20) -> tuple[list[set[str]], list[float]]:
    from ragpipe.rag import vector_search

    found, lat = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = vector_search(table, q, k, nprobes)
        lat.append((time.perf_counter() - t0) * 1000)
        found.append({h.chunk_id for h in hits})
    return found, lat


def _recall(found: list[set[str]], exact: list[set[str]], k: int) -> float:
    return float(np.mean([len(f & e) / k for f, e in zip(found, exact)]))


def _pct(lat: list[float], p: float) -> float:
    return float(np.percentile(lat, p))


def clustered(n: int, dims: int, rng: np.random.Generator, clusters: int = 1000) -> np.ndarray:
    centers = rng.standard_normal((clusters, dims)).astype(np.float32)
    out = np.empty((n, dims), dtype=np.float32)
    for i in range(0, n, 100_000):
        m = min(100_000, n - i)
        out[i : i + m] = centers[rng.integers(0, clusters, m)] + 0.6 * rng.standard_normal((m, dims)).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def latency(args: argparse.Namespace) -> dict[str, Any]:
    from ragpipe.embed import store

    rng = np.random.default_rng(7)
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        vectors = clustered(n, 384, rng)
        queries = clustered(args.queries, 384, rng)
        db = store.connect(Path(tempfile.mkdtemp(prefix="ragpipe-lat-")))
        table = _table(db, "t", vectors)
        exact = _exact_top(vectors, queries, 10)
        flat_found, flat_lat = _search(table, queries[: min(args.queries, 50 if n >= 1_000_000 else args.queries)], 10)
        t0 = time.perf_counter()
        store.ensure_vector_index(table, min_rows=1)
        build = time.perf_counter() - t0
        ann_found, ann_lat = _search(table, queries, 10)
        for nprobes in [int(x) for x in args.nprobes.split(",")] if args.nprobes else []:
            found, lat = _search(table, queries, 10, nprobes)
            print(
                f"    nprobes {nprobes}: recall@10 {_recall(found, exact, 10):.3f}, p50 {_pct(lat, 50):.1f} ms, p95 {_pct(lat, 95):.1f} ms"
            )
        r = {
            "n": n,
            "flat_p50_ms": _pct(flat_lat, 50),
            "flat_p95_ms": _pct(flat_lat, 95),
            "flat_recall": _recall(flat_found, exact, 10),
            "index_build_s": build,
            "ann_p50_ms": _pct(ann_lat, 50),
            "ann_p95_ms": _pct(ann_lat, 95),
            "ann_recall": _recall(ann_found, exact, 10),
        }
        rows.append(r)
        print(
            f"{n:>9,} vectors: flat p50 {r['flat_p50_ms']:.1f} ms p95 {r['flat_p95_ms']:.1f} ms | index built in {build:.0f} s | "
            f"ANN p50 {r['ann_p50_ms']:.1f} ms p95 {r['ann_p95_ms']:.1f} ms, recall@10 {r['ann_recall']:.3f}",
            flush=True,
        )
        del vectors, table
    print(
        "\n| vectors | flat p50 / p95 ms | ANN index build s | ANN p50 / p95 ms | ANN recall@10 vs exact |\n|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['n']:,} | {r['flat_p50_ms']:.1f} / {r['flat_p95_ms']:.1f} | {r['index_build_s']:.0f} | "
            f"{r['ann_p50_ms']:.1f} / {r['ann_p95_ms']:.1f} | {r['ann_recall']:.3f} |"
        )
    return {"rows": rows, "queries": args.queries, "dims": 384}


def recall(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parent))
    from cranfield import DEFAULT_DATA, doc_text, load_cranfield

    from ragpipe.embed import load_embedder, store
    from ragpipe.settings import EmbedderSettings

    corpus, queries, _ = load_cranfield(DEFAULT_DATA)
    texts = [t for t in (doc_text(d) for d in corpus) if t]  # the Cranfield abstracts, whole
    files = sorted((args.docs / "markdown").rglob("*.md")) + sorted((args.docs / "text").rglob("*.txt"))
    for f in files + sorted((SHARED / "pg_essays").glob("*.txt")):  # passages of up to 200 characters
        texts += [
            p
            for p in (
                x.strip() for x in re.findall(r".{1,200}(?:\s|$)", " ".join(f.read_text(errors="replace").split()))
            )
            if len(p) >= 40
        ]
    emb = load_embedder(
        EmbedderSettings(name=args.embedder), Path(tempfile.gettempdir()) / f"ragpipe-bench-models-{os.getuid()}"
    )
    t0 = time.perf_counter()
    vectors = np.asarray(emb.encode(texts), dtype=np.float32)
    print(f"embedded {len(texts)} real texts with {emb.tag} in {time.perf_counter() - t0:.0f} s", flush=True)
    qv = np.asarray(emb.encode([q["text"] for q in queries]), dtype=np.float32)
    table = _table(store.connect(Path(tempfile.mkdtemp(prefix="ragpipe-recall-"))), "t", vectors)
    exact = _exact_top(vectors, qv, 10)
    store.ensure_vector_index(table, min_rows=1)
    found, lat = _search(table, qv, 10)
    r = {
        "texts": len(texts),
        "queries": len(qv),
        "embedder": emb.tag,
        "ann_recall_at_10": _recall(found, exact, 10),
        "ann_p50_ms": _pct(lat, 50),
    }
    print(
        f"ANN recall@10 vs exact on {len(texts)} real embeddings, {len(qv)} Cranfield queries: {r['ann_recall_at_10']:.3f} "
        f"(p50 {r['ann_p50_ms']:.1f} ms)"
    )
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    m = sub.add_parser("memory")
    m.add_argument("--files", type=int, default=20, help="how many realdocs files (sorted by path); 0: all")
    m.add_argument("--copies", default="1,3,10")
    m.add_argument("--embedder", default="minilm-static")
    m.add_argument(
        "--all-formats", action="store_true", help="every realdocs format, not only Markdown (PDFs copied unchanged)"
    )
    m.add_argument("--exclude-pdf", action="store_true", help="leave out PDF files (some take minutes each to parse)")
    m.add_argument("--one-connection", action="store_true", help="run every stage on one warehouse connection")
    m.add_argument("--streamed-only", action="store_true", help="skip the one-slice run (for the largest corpora)")
    r = sub.add_parser("recall")
    r.add_argument("--embedder", default="minilm-static")
    lt = sub.add_parser("latency")
    lt.add_argument("--sizes", default="10000,100000,1000000")
    lt.add_argument("--queries", type=int, default=100)
    lt.add_argument(
        "--nprobes", default="", help="also measure the ANN search at these nprobes values (e.g. 20,50,100)"
    )
    for p in (m, r):
        p.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    args = ap.parse_args()
    result = {"memory": memory, "recall": recall, "latency": latency}[args.mode](args)
    write_json(
        RESULTS / f"scale-{args.mode}.json",
        {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}, **result},
    )


if __name__ == "__main__":
    main()
