"""Re-stamping benchmark: 10,000 synthetic golden tests re-stamped against the chunks of real documents.

    .venv/bin/python bench/restamp.py [--warehouse DIR] [--tests 10000] [--seed 20261129] [--docs DIR] [--limit N]

Chunks under two chunker settings (by_title, max_characters 800 and 500). Tests are real sentences of the documents
(quotes of 60-200 characters cut at word boundaries, seeded), each with its source document set; stamped under the 800
chunking they get their "old" ids (85% of tests carry them, 15% carry none, 1% have a quote that is no longer in the
document), then the timed part re-stamps all of them under the 500 chunking, as `ragpipe golden restamp` does:
`Restamper` construction (from the warehouse rows) and `stamp()` for every test. Writing the new ids back into the JSONL
file with `ragpipe.golden.rewrite_fields` is timed separately.

--warehouse DIR: the warehouse of a bench/ingest.py --workdir run (DIR or DIR/warehouse); its DuckDB file is copied to a
temporary directory first, so the 500-character chunks never land in it. Without it, the corpus, documents and chunks
stages run in a temporary project (no embedding).

Prints a Markdown table and writes bench/results/restamp.json. A cProfile summary is added when constructing and
stamping take over 2 s (or with --profile).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DOCS,
    RESULTS,
    exclude_patterns,
    library_state,
    machine,
    maxrss_mb,
    rmtree_writable,
    select_files,
    write_json,
    write_settings,
)

from ragpipe import ingest  # noqa: E402
from ragpipe.core import collapse_whitespace as normalize  # noqa: E402
from ragpipe.evaluate import documents_text, restamper_for  # noqa: E402
from ragpipe.golden import ChunkSpan, GoldenTest, Restamper, id_value, load_golden, rewrite_fields  # noqa: E402
from ragpipe.warehouse import connect  # noqa: E402

TARGET_S = 2.0
SHARE_WITH_OLD_IDS = 0.85
SHARE_MISSING = 0.01
SHARE_NEGATIVE = 0.6


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------ test generation

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"\d[\d.,]*\d|\d")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")


def quote_candidates(doc_id: str, text: str, rng: random.Random) -> list[tuple[str, str]]:
    """Sentences of 60-200 characters; a longer sentence gives one word-boundary window of 60-200 characters."""
    out = []
    for sentence in _SENTENCE_END.split(normalize(text)):
        if len(sentence) < 60:
            continue
        if len(sentence) <= 200:
            out.append((doc_id, sentence))
            continue
        words = sentence.split(" ")
        start = rng.randrange(len(words))
        picked: list[str] = []
        length = -1
        for w in words[start:]:
            if length + 1 + len(w) > 200:
                break
            picked.append(w)
            length += 1 + len(w)
        if length >= 60:
            out.append((doc_id, " ".join(picked)))
    return out


def generate_tests(documents: dict[str, str], n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pool: list[tuple[str, str]] = []
    for doc_id in sorted(documents):
        pool.extend(quote_candidates(doc_id, documents[doc_id], rng))
    if not pool:
        raise SystemExit("no sentences of 60-200 characters in the documents")
    picks = rng.sample(pool, n) if len(pool) >= n else [rng.choice(pool) for _ in range(n)]
    tests = []
    for i, (doc_id, quote) in enumerate(picks, 1):
        if rng.random() < SHARE_MISSING:
            words = quote.split(" ")
            words[len(words) // 2] = "XQZVW-no-longer-here"  # the document "changed": this quote is gone
            quote = " ".join(words)
        negative = rng.random() < SHARE_NEGATIVE
        t: dict[str, Any] = {"question_id": f"q{i:05d}", "question": f"Synthetic question {i} about {doc_id}?"}
        if negative:
            value = (_NUMBER.findall(quote) or sorted(_WORD.findall(quote), key=len)[-1:] or [quote.split()[0]])[0]
            t.update(
                expected_answer="not in documents",
                kind="negative",
                trap_quote=quote,
                trap_source=doc_id,
                trap_value=value,
            )
        else:
            t.update(
                expected_answer=" ".join(quote.split()[-3:]),
                kind="positive",
                evidence_quote=quote,
                evidence_source=doc_id,
            )
        t.update(embedder_tag="minilm-bcfe46d6", last_validated="2026-11-01")
        tests.append(t)
    return tests


# ------------------------------------------------------------------------------------------------ helpers


def as_test(obj: dict[str, Any], line: int) -> GoldenTest:
    """A GoldenTest straight from a generated object (as load_golden would make it, without parsing a file)."""
    neg = obj["kind"] == "negative"
    return GoldenTest(
        question_id=obj["question_id"],
        question=obj["question"],
        expected_answer=obj["expected_answer"],
        kind=obj["kind"],
        line=line,
        anchor_ids=[],
        quote=obj["trap_quote" if neg else "evidence_quote"],
        source=obj["trap_source" if neg else "evidence_source"],
        trap_value=obj.get("trap_value"),
        embedder_tag=obj.get("embedder_tag"),
        last_validated=obj.get("last_validated"),
        raw=obj,
    )


def chunk_spans(con: Any, tag: str) -> list[ChunkSpan]:
    return [
        ChunkSpan(*r)
        for r in con.execute(
            "SELECT chunk_id, doc_id, start_char, end_char FROM chunks WHERE chunker_tag = ?", [tag]
        ).fetchall()
    ]


def profile_text(fn: Any, limit: int = 18) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs()
    st.sort_stats("tottime").print_stats(limit)
    buf.write("\n")
    st.sort_stats("cumulative").print_stats(limit)
    return buf.getvalue()


def find_duckdb(path: Path) -> Path:
    for cand in (path, path / "ragpipe.duckdb", path / "warehouse" / "ragpipe.duckdb"):
        if cand.is_file():
            return cand
    raise SystemExit(f"no ragpipe.duckdb at {path}, {path}/ragpipe.duckdb or {path}/warehouse/ragpipe.duckdb")


# ------------------------------------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--warehouse",
        type=Path,
        default=None,
        help="reuse the warehouse a bench/ingest.py --workdir run built (copied first)",
    )
    ap.add_argument(
        "--docs", type=Path, default=DEFAULT_DOCS, help="corpus directory when no --warehouse (default: %(default)s)"
    )
    ap.add_argument("--limit", type=int, default=None, help="without --warehouse: only the first N files")
    ap.add_argument(
        "--exclude-larger-than",
        type=float,
        default=None,
        metavar="MB",
        help="without --warehouse: leave out files larger than MB",
    )
    ap.add_argument("--tests", type=int, default=10_000, help="number of synthetic tests (default 10000)")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument(
        "--old-max-characters", type=int, default=800, help="chunker max_characters the old ids come from (default 800)"
    )
    ap.add_argument(
        "--new-max-characters", type=int, default=500, help="chunker max_characters re-stamped under (default 500)"
    )
    ap.add_argument(
        "--cli-subset",
        action="store_true",
        help="also time rewrite_fields with only the moved/split/new ids, as `ragpipe golden restamp --write`",
    )
    ap.add_argument("--profile", action="store_true", help="add a cProfile summary even when under the target")
    ap.add_argument("--out", type=Path, default=RESULTS / "restamp.json")
    args = ap.parse_args()

    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="ragpipe-bench-restamp-"))
    warehouse = work / "warehouse"
    warehouse.mkdir()
    docs = args.docs.resolve()
    results: dict[str, Any] = {
        "benchmark": "restamp",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "library": library_state(),
        "tests": args.tests,
        "seed": args.seed,
    }
    try:
        if args.warehouse:
            src = find_duckdb(args.warehouse.resolve())
            shutil.copyfile(src, warehouse / "ragpipe.duckdb")
            wal = src.with_name(src.name + ".wal")
            if wal.is_file():  # a warehouse still open elsewhere (or not checkpointed) keeps recent writes here
                shutil.copyfile(wal, warehouse / "ragpipe.duckdb.wal")
            results["source"] = {"warehouse": str(src), "copied_to": str(warehouse)}
            patterns = ["**/.*"]
        else:
            included, excluded = select_files(docs, args.limit, args.exclude_larger_than)
            patterns = exclude_patterns(excluded)
            results["source"] = {"corpus": str(docs), "files_included": len(included), "excluded": excluded}
        old = write_settings(
            work / "old.toml", docs, warehouse, patterns, max_characters=args.old_max_characters, new_after=600
        )
        new = write_settings(
            work / "new.toml", docs, warehouse, patterns, max_characters=args.new_max_characters, new_after=600
        )
        results["chunkers"] = {
            "old": {
                "tag": old.chunker_tag,
                "max_characters": old.chunker.max_characters,
                "new_after_n_chars": old.chunker.new_after_n_chars,
            },
            "new": {
                "tag": new.chunker_tag,
                "max_characters": new.chunker.max_characters,
                "new_after_n_chars": new.chunker.new_after_n_chars,
            },
        }

        with connect(old.duckdb_path) as con:
            run_id = f"bench-restamp-{uuid.uuid4().hex[:8]}"
            prep: dict[str, float] = {}
            if not args.warehouse:
                for name, fn in (("corpus", ingest.sync_corpus), ("documents", ingest.parse_documents)):
                    log(f"{name} ...")
                    t = time.perf_counter()
                    fn(old, con, run_id)
                    prep[name] = round(time.perf_counter() - t, 2)
            for name, s in (("chunks_old", old), ("chunks_new", new)):
                log(f"{name} ({s.chunker_tag}) ...")
                t = time.perf_counter()
                st = ingest.chunk_documents(s, con, run_id)
                prep[name] = round(time.perf_counter() - t, 2)
                log(f"{name}: {st['chunks']} chunks over {st['documents']} documents ({prep[name]} s)")
            results["preparation_seconds"] = prep

            documents = documents_text(con)
            n_chars = sum(len(t) for t in documents.values())
            results["corpus_in_warehouse"] = {
                "documents": len(documents),
                "chars": n_chars,
                "chunks_old": len(chunk_spans(con, old.chunker_tag)),
                "chunks_new": len(chunk_spans(con, new.chunker_tag)),
            }

            # ---------------------------------------------------------------- the golden file with old ids
            log(f"generating {args.tests} tests (seed {args.seed})")
            raw_tests = generate_tests(documents, args.tests, args.seed)
            stamper_old = restamper_for(con, old.chunker_tag)
            t = time.perf_counter()
            first = [stamper_old.stamp(as_test(t_, i)) for i, t_ in enumerate(raw_tests, 1)]
            first_s = time.perf_counter() - t
            rng = random.Random(args.seed + 1)
            for t_, s in zip(raw_tests, first):
                if s.new_ids and rng.random() < SHARE_WITH_OLD_IDS:
                    t_["trap_chunk_id" if t_["kind"] == "negative" else "evidence_chunk_id"] = id_value(s.new_ids)
            golden_path = work / "golden.jsonl"
            golden_path.write_text(
                "".join(json.dumps(t_, ensure_ascii=False) + "\n" for t_ in raw_tests), encoding="utf-8"
            )
            results["golden_file"] = {
                "bytes": golden_path.stat().st_size,
                "tests": len(raw_tests),
                "negative": sum(t_["kind"] == "negative" for t_ in raw_tests),
                "with_old_ids": sum(("trap_chunk_id" in t_) or ("evidence_chunk_id" in t_) for t_ in raw_tests),
                "quote_chars_mean": round(
                    sum(len(t_.get("trap_quote") or t_.get("evidence_quote")) for t_ in raw_tests) / len(raw_tests), 1
                ),
                "first_stamping_under_old_seconds": round(first_s, 3),
            }
            t, c = time.perf_counter(), time.process_time()
            golden = load_golden(golden_path)
            load_s, load_cpu = time.perf_counter() - t, time.process_time() - c
            docs_per_test: dict[str, int] = {}
            for t_ in golden.tests:
                docs_per_test[t_.source or ""] = docs_per_test.get(t_.source or "", 0) + 1
            results["golden_file"]["load_golden_seconds"] = round(load_s, 3)
            results["golden_file"]["load_golden_cpu_seconds"] = round(load_cpu, 3)
            results["golden_file"]["documents_with_tests"] = len(docs_per_test)
            results["golden_file"]["most_tests_in_one_document"] = sorted(docs_per_test.items(), key=lambda kv: -kv[1])[
                :5
            ]

            # ---------------------------------------------------------------- timed: construct + stamp under the new chunking
            log("timing: Restamper construction + stamping")
            t = time.perf_counter()
            doc_rows = documents_text(con)
            spans = chunk_spans(con, new.chunker_tag)
            fetch_s = time.perf_counter() - t
            t, c = time.perf_counter(), time.process_time()
            stamper = Restamper(doc_rows, spans)
            construct_s = time.perf_counter() - t
            stamps = [stamper.stamp(t_) for t_ in golden.tests]
            total_cpu = time.process_time() - c
            stamp_s = time.perf_counter() - t - construct_s
            t = time.perf_counter()
            again = [stamper.stamp(t_) for t_ in golden.tests]
            stamp_warm_s = time.perf_counter() - t
            assert [s.new_ids for s in again] == [s.new_ids for s in stamps]
            t = time.perf_counter()
            restamper_for(con, new.chunker_tag)  # timed: building the restamper from the warehouse
            restamper_for_s = time.perf_counter() - t

            counts: dict[str, int] = {}
            for s in stamps:
                counts[s.status] = counts.get(s.status, 0) + 1
            total = construct_s + stamp_s
            results["restamp"] = {
                "fetch_from_duckdb_seconds": round(fetch_s, 3),
                "restamper_construction_seconds": round(construct_s, 3),
                "stamp_all_seconds": round(stamp_s, 3),
                "construction_plus_stamping_seconds": round(total, 3),
                "construction_plus_stamping_cpu_seconds": round(total_cpu, 3),
                "with_fetch_seconds": round(total + fetch_s, 3),
                "restamper_for_seconds (evaluate.restamper_for: fetch + construction)": round(restamper_for_s, 3),
                "stamp_all_again_same_restamper_seconds": round(stamp_warm_s, 3),
                "tests_per_s": round(len(stamps) / stamp_s, 1),
                "target_seconds": TARGET_S,
                "meets_target": total < TARGET_S,
                "status_counts": dict(sorted(counts.items())),
            }
            log(f"construction {construct_s:.3f} s, stamping {stamp_s:.3f} s (again: {stamp_warm_s:.3f} s); {counts}")

            if total >= TARGET_S or args.profile:
                log("profiling construction + stamping (cProfile)")

                def run() -> None:
                    r = Restamper(doc_rows, spans)
                    for t_ in golden.tests:
                        r.stamp(t_)

                results["restamp_profile"] = profile_text(run)
                hot = per_document_cost(doc_rows, spans, golden.tests)
                results["restamp_hot_documents"] = hot

            # ---------------------------------------------------------------- rewrite_fields
            by_id = {t_.question_id: t_ for t_ in golden.tests}
            all_updates = {s.question_id: {by_id[s.question_id].anchor_field: id_value(s.new_ids)} for s in stamps}
            stamp_of = {s.question_id: s for s in stamps}
            cli_updates = {k: v for k, v in all_updates.items() if stamp_of[k].status in ("moved", "split", "new")}
            log(f"timing: rewrite_fields with {len(all_updates)} updates")
            t, c = time.perf_counter(), time.process_time()
            text_all = rewrite_fields(golden, all_updates)
            rewrite_all_s, rewrite_all_cpu = time.perf_counter() - t, time.process_time() - c
            out_path = work / "golden-restamped.jsonl"
            t = time.perf_counter()
            out_path.write_text(text_all, encoding="utf-8")
            write_s = time.perf_counter() - t
            # every line still parses and carries exactly the new ids (json.loads per line: load_golden is slow here)
            ok = True
            for line in text_all.splitlines():
                obj = json.loads(line)
                field = "trap_chunk_id" if obj["kind"] == "negative" else "evidence_chunk_id"
                ok &= obj.get(field) == id_value(stamp_of[obj["question_id"]].new_ids)
            results["rewrite"] = {
                "updates_all": len(all_updates),
                "rewrite_fields_all_seconds": round(rewrite_all_s, 3),
                "rewrite_fields_all_cpu_seconds": round(rewrite_all_cpu, 3),
                "updates_cli_subset (moved/split/new)": len(cli_updates),
                "write_file_seconds": round(write_s, 4),
                "file_bytes": len(text_all.encode("utf-8")),
                "rewritten_file_has_the_new_ids": ok,
            }
            log(f"rewrite_fields: all {rewrite_all_s:.3f} s; check {ok}")
            if args.cli_subset:
                log(f"timing: rewrite_fields with {len(cli_updates)} updates (moved/split/new only, as the CLI)")
                t = time.perf_counter()
                rewrite_fields(golden, cli_updates)
                results["rewrite"]["rewrite_fields_cli_subset_seconds"] = round(time.perf_counter() - t, 3)
            if rewrite_all_s >= 1.0 or args.profile:
                n_sub = min(500, len(all_updates))
                sub = dict(list(all_updates.items())[:n_sub])
                log(f"profiling rewrite_fields with {n_sub} updates (cProfile)")
                t = time.perf_counter()
                rewrite_fields(golden, sub)
                results["rewrite"][f"rewrite_fields_{n_sub}_updates_seconds"] = round(time.perf_counter() - t, 3)
                results[f"rewrite_profile_{n_sub}_updates"] = profile_text(
                    lambda: rewrite_fields(golden, sub), limit=10
                )
        results["maxrss_mb"] = round(maxrss_mb(), 1)
        results["benchmark_wall_seconds"] = round(time.perf_counter() - started, 1)
    finally:
        rmtree_writable(work)

    write_json(args.out, results)
    print()
    print(report(results))
    if "restamp_profile" in results:
        print("\ncProfile of construction + stamping:\n" + results["restamp_profile"][:6000])
    print(f"\nJSON: {args.out}")
    return 0


def per_document_cost(documents: dict[str, str], spans: list[ChunkSpan], tests: list[Any]) -> list[dict[str, Any]]:
    """Where stamping time goes by document: tests, document size, chunks, seconds (top 8)."""
    r = Restamper(documents, spans)
    n_chunks: dict[str, int] = {}
    for c in spans:
        n_chunks[c.doc_id] = n_chunks.get(c.doc_id, 0) + 1
    cost: dict[str, list[float]] = {}
    for t_ in tests:
        t = time.perf_counter()
        r.stamp(t_)
        c = cost.setdefault(t_.source or "", [0, 0.0])
        c[0] += 1
        c[1] += time.perf_counter() - t
    rows = [
        {
            "doc": d,
            "tests": int(n),
            "seconds": round(s, 3),
            "chars": len(documents.get(d, "")),
            "chunks": n_chunks.get(d, 0),
        }
        for d, (n, s) in cost.items()
    ]
    return sorted(rows, key=lambda x: -x["seconds"])[:8]


def report(r: dict[str, Any]) -> str:
    rs, rw, g, c = r["restamp"], r["rewrite"], r["golden_file"], r["corpus_in_warehouse"]
    lines = [
        f"{g['tests']} tests ({g['negative']} negative, {g['with_old_ids']} with old ids) over {g['documents_with_tests']} documents; "
        f"warehouse: {c['documents']} documents, {c['chars']:,} chars, {c['chunks_old']} chunks (old) / {c['chunks_new']} chunks (new)",
        "",
        "| step | wall seconds | CPU seconds |",
        "|---|---|---|",
        f"| fetch documents + chunk spans from DuckDB | {rs['fetch_from_duckdb_seconds']:.3f} | |",
        f"| `Restamper(...)` construction | {rs['restamper_construction_seconds']:.3f} | |",
        f"| `stamp()` x {g['tests']} | {rs['stamp_all_seconds']:.3f} | |",
        f"| **construction + stamping** (target < {rs['target_seconds']:g} s) | **{rs['construction_plus_stamping_seconds']:.3f}** "
        f"({'meets' if rs['meets_target'] else 'MISSES'} target) | {rs['construction_plus_stamping_cpu_seconds']:.3f} |",
        f"| stamping all again with the same Restamper (documents already normalized) | {rs['stamp_all_again_same_restamper_seconds']:.3f} | |",
        f"| `load_golden` of the {g['bytes'] / 1e6:.1f} MB JSONL file | {g['load_golden_seconds']:.3f} | {g['load_golden_cpu_seconds']:.3f} |",
        f"| `rewrite_fields`, all {rw['updates_all']} ids | {rw['rewrite_fields_all_seconds']:.3f} | {rw['rewrite_fields_all_cpu_seconds']:.3f} |",
    ]
    if "rewrite_fields_cli_subset_seconds" in rw:
        lines.append(
            f"| `rewrite_fields`, {rw['updates_cli_subset (moved/split/new)']} ids (moved/split/new, as `golden restamp --write`) | "
            f"{rw['rewrite_fields_cli_subset_seconds']:.3f} | |"
        )
    lines += [
        "",
        "status counts: " + ", ".join(f"{k} {v}" for k, v in rs["status_counts"].items()),
    ]
    if "restamp_hot_documents" in r:
        lines += ["", "| document | tests | stamping seconds | chars | chunks |", "|---|---|---|---|---|"]
        lines += [
            f"| {h['doc']} | {h['tests']} | {h['seconds']:.3f} | {h['chars']:,} | {h['chunks']} |"
            for h in r["restamp_hot_documents"]
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
