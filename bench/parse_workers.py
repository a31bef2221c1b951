"""Parser workers, 1 vs N, over the same realdocs files in one run: documents per second and each worker's memory.

    .venv/bin/python bench/parse_workers.py [--workers 1,2] [--formats md,html,txt] [--limit 60] [--rounds 1]

Each configuration gets a fresh ragpipe.ingest.ParserPool of that many workers, warmed first (every worker has
started and imported each format's partitioner: start-up is reported separately), then parses the selected files
through as many threads as workers, as the documents stage does. Reported: documents/s, MB/s, wall time, the ratio to
the first configuration, and each worker's resident size (VmRSS, VmHWM) after the run. Rounds alternate the
configurations, so drift on a shared machine shows. Writes bench/results/parse_workers.json.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import DEFAULT_DOCS, RESULTS, machine, select_files, write_json

from ragpipe.core import available_memory_mb
from ragpipe.ingest import ParserPool, parser_workers
from ragpipe.settings import ParserSettings


def _status_mb(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(line.split()[1]) / 1024
    return out


def run(files: list[Path], size: int) -> dict[str, Any]:
    pool = ParserPool(size)
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(size) as ex:
            smallest: dict[str, Path] = {}
            for f in sorted(files, key=lambda p: p.stat().st_size):
                smallest.setdefault(f.suffix, f)
            for f in smallest.values():  # concurrent calls: each takes its own worker
                list(ex.map(pool.parse_json, [f] * size))
            warm = time.perf_counter() - t0
            t1 = time.perf_counter()
            results = list(ex.map(pool.parse_json, files))
            wall = time.perf_counter() - t1
        workers = [_status_mb(w.proc.pid) for w in pool._idle if w.alive]
    finally:
        pool.close()
    mb = sum(f.stat().st_size for f in files) / 1e6
    return {
        "workers": size,
        "started": pool.started,
        "warm_s": round(warm, 2),
        "wall_s": round(wall, 2),
        "docs_per_s": round(len(files) / wall, 3),
        "mb_per_s": round(mb / wall, 3),
        "ms_per_doc": round(1000 * wall / len(files), 1),
        "chars": sum(len(r[1]) for r in results),
        "worker_mb": workers,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--formats", default="md,html,txt", help="file extensions to include")
    ap.add_argument("--limit", type=int, default=60, help="at most this many files (spread over the formats)")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    exts = {"." + e.strip().lstrip(".") for e in args.formats.split(",")}
    included, _ = select_files(args.docs, None, None)
    by_ext: dict[str, list[str]] = {}
    for p in included:
        if Path(p).suffix in exts:
            by_ext.setdefault(Path(p).suffix, []).append(p)
    picked: list[str] = []  # round-robin over the formats, each in the scan's sorted order
    while len(picked) < args.limit and any(by_ext.values()):
        for ext in sorted(by_ext):
            if by_ext[ext] and len(picked) < args.limit:
                picked.append(by_ext[ext].pop(0))
    files = [args.docs / p for p in picked]
    sizes = [int(w) for w in args.workers.split(",")]
    auto = parser_workers(ParserSettings())
    print(f"{len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB; auto workers here: {auto}")
    rows = []
    for r in range(args.rounds):
        for size in sizes:
            row = {"round": r, **run(files, size)}
            rows.append(row)
            rss = ", ".join(f"{w.get('VmRSS', 0):.0f}/{w.get('VmHWM', 0):.0f}" for w in row["worker_mb"])
            print(
                f"round {r} workers {size}: {row['docs_per_s']:.2f} docs/s ({row['ms_per_doc']:.0f} ms/doc, "
                f"{row['mb_per_s']:.2f} MB/s), wall {row['wall_s']:.1f} s, warm-up {row['warm_s']:.1f} s, "
                f"worker RSS/peak MB: {rss}"
            )
    base = {r["round"]: r["docs_per_s"] for r in rows if r["workers"] == sizes[0]}
    for row in rows:
        row["ratio_to_first"] = round(row["docs_per_s"] / base[row["round"]], 3)
        print(f"round {row['round']} workers {row['workers']}: {row['ratio_to_first']:.2f}x the {sizes[0]}-worker rate")
    write_json(
        RESULTS / "parse_workers.json",
        {
            "machine": machine(),
            "available_memory_mb": available_memory_mb(),
            "files": picked,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
