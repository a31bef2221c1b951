"""The graph on the Celery executor with 1 shard worker against 2, workers sharing no disk, in one run.

    .venv/bin/python bench/cluster.py [--limit 24] [--workers 1,2] [--shards 2]

Starts what tests/assets/test_cluster.py starts (a throwaway PostgreSQL cluster for the Dagster instance, redis-server as the
broker, moto's S3 server for staging and LanceDB), then for each worker count: a fresh warehouse machine directory
(its worker serves only the warehouse queue) and N shard worker directories (no corpus), and materializes corpus ->
documents -> chunks -> embeddings over the first --limit realdocs files (Markdown, HTML, text) with `parse_shards` =
`embed_shards` = --shards. Reported: wall time, its ratio to the first configuration, which worker ran each step
(from the run's events) with its duration, and whether the tables equal the first configuration's. Writes
bench/results/cluster.json. Needs redis-server and PostgreSQL's server binaries (Debian's packages).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the cluster harness of tests/assets/test_cluster.py, used as is

import dagster as dg  # noqa: E402
from _common import DEFAULT_DOCS, RESULTS, machine, select_files, write_json  # noqa: E402
from shards import step_seconds  # noqa: E402
from test_cluster import (  # noqa: E402
    cluster_settings,
    placements,
    redis_server,
    start_worker,
    wait_ready,
    write_settings,
)
from test_postgres_instance import pg_binaries, throwaway_cluster  # noqa: E402
from test_s3_storage import KEY_ID, SENTINEL, S3Server, moto_server  # noqa: E402

from ragpipe.assets.runner import materialize  # noqa: E402


def one_configuration(
    n_workers: int, base: Path, files: list[str], docs: Path, s3: S3Server, broker: str, pg: Any, shards: int
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    settings = cluster_settings(s3, broker, str(base / "models"))
    for key in ("lancedb_uri", "staging_uri"):
        settings["warehouse"][key] = settings["warehouse"][key].replace("/cluster/", f"/bench-{n_workers}/")
    settings["scale"].update(parse_shards=shards, embed_shards=shards, visibility_timeout_s=3600)
    roots = [base / f"w{n_workers}-wh"] + [base / f"w{n_workers}-s{i}" for i in range(1, n_workers + 1)]
    for root in roots:
        (root / "dagster_home").mkdir(parents=True)
        shutil.copy(ROOT / "deploy" / "postgres" / "dagster.yaml", root / "dagster_home" / "dagster.yaml")
        write_settings(root / "ragpipe.toml", settings)
    wh = roots[0]
    for rel in files:
        (wh / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(docs / rel, wh / "corpus" / rel)
    workers = [start_worker("wh", wh, "ragpipe-warehouse", pg)]
    workers += [start_worker(r.name.split("-")[1], r, "dagster", pg) for r in roots[1:]]
    os.environ.update(pg.env(), DAGSTER_HOME=str(wh / "dagster_home"), RAGPIPE_SETTINGS=str(wh / "ragpipe.toml"))
    cwd = Path.cwd()
    os.chdir(wh)
    try:
        wait_ready(workers)
        instance = dg.DagsterInstance.get()
        t0 = time.perf_counter()
        result = materialize(
            str(wh / "ragpipe.toml"), ["corpus", "documents", "chunks", "embeddings"], instance, multiprocess=True
        )
        wall = time.perf_counter() - t0
        assert result.success, [str(e) for e in result.all_events if e.is_failure]
        placed = placements(instance, result.run_id)
        durations = step_seconds(instance, result.run_id)
        from ragpipe.settings import load_settings
        from ragpipe.warehouse import connect

        with connect(load_settings(wh / "ragpipe.toml").duckdb_path, read_only=True) as con:
            tables = {
                "documents": con.execute("SELECT doc_id, sha256, text FROM documents ORDER BY doc_id").fetchall(),
                "chunks": con.execute("SELECT chunk_id, content_hash FROM chunks ORDER BY chunk_id").fetchall(),
            }
    finally:
        os.chdir(cwd)
        for w in workers:
            w.kill()
    steps = {k: {"queue": v[0], "workers": v[1:], "s": round(durations.get(k, 0.0), 1)} for k, v in placed.items()}
    return {"shard_workers": n_workers, "wall_s": wall, "steps": steps, "chunks": len(tables["chunks"])}, tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--limit", type=int, default=24, help="at most this many realdocs files (Markdown, HTML, text)")
    ap.add_argument("--workers", default="1,2", help="shard worker counts to compare, in this order")
    ap.add_argument("--shards", type=int, default=2, help="parse_shards = embed_shards")
    args = ap.parse_args()
    included, _ = select_files(args.docs, None, None)
    files = [p for p in included if p.endswith((".md", ".html", ".txt"))][: args.limit]
    base = Path(tempfile.mkdtemp(prefix="ragpipe-cluster-"))
    bins = pg_binaries()
    assert bins is not None and shutil.which("redis-server"), "needs PostgreSQL server binaries and redis-server"
    os.environ.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SENTINEL)
    rows: list[dict[str, Any]] = []
    first = None
    try:
        with redis_server(base) as broker, moto_server(base / "moto.log") as s3, throwaway_cluster(bins) as pg:
            for n in [int(x) for x in args.workers.split(",")]:
                row, tables = one_configuration(n, base, files, args.docs, s3, broker, pg, args.shards)
                first = first or tables
                row["tables_equal_first"] = tables == first
                rows.append(row)
                print(f"{n} shard worker(s): {row['wall_s']:.1f} s wall", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\n{len(files)} realdocs files, {rows[0]['chunks']} chunks, {args.shards} parse and embed shards\n")
    print("| shard workers | wall s | ratio | tables equal | where the shard steps ran (s) |")
    print("|---|---|---|---|---|")
    for row in rows:
        shard_steps = sorted(k for k in row["steps"] if "_shard_" in k)
        where = ", ".join(
            f"{k.split('.')[1]} {'/'.join(row['steps'][k]['workers'])} {row['steps'][k]['s']}" for k in shard_steps
        )
        print(
            f"| {row['shard_workers']} | {row['wall_s']:.1f} | {row['wall_s'] / rows[0]['wall_s']:.2f} | "
            f"{row['tables_equal_first']} | {where} |"
        )
    others = sorted({w for row in rows for k, v in row["steps"].items() if "_shard_" not in k for w in v["workers"]})
    print(f"\nevery other step ran on: {', '.join(others)}")
    write_json(RESULTS / "cluster.json", {"machine": machine(), "files": files, "rows": rows})


if __name__ == "__main__":
    main()
