"""Sharded embedding, 1 shard vs N, through Dagster's multiprocess executor, in one run on the same chunks.

    .venv/bin/python bench/shards.py [--shards 1,2] [--formats md,html,txt] [--limit 60] [--embedder minilm]

The corpus (realdocs, filtered by --formats and --limit) is parsed and chunked once; each configuration then embeds
the same chunks from a copy of that warehouse with `[scale].embed_shards = N`, as `ragpipe ci --multiprocess` and the
Dagster daemon run it (one process per step). Reported per configuration: wall time of the embeddings run, each
step's duration (plan, shards, merge), vectors and texts embedded, and whether the resulting LanceDB table (chunk
ids, content hashes, vectors) is identical to the 1-shard table. Writes bench/results/shards.json.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import dagster as dg  # noqa: E402
import numpy as np
from _common import DEFAULT_DOCS, RESULTS, exclude_patterns, machine, select_files, write_json, write_settings

from ragpipe import embed  # noqa: E402
from ragpipe.assets.runner import materialize  # noqa: E402
from ragpipe.embed import load_embedder  # noqa: E402
from ragpipe.settings import load_settings  # noqa: E402


def step_seconds(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    starts: dict[str, float] = {}
    out: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None or ev.step_key is None:
            continue
        if ev.event_type_value == "STEP_START":
            starts[ev.step_key] = entry.timestamp
        elif ev.event_type_value == "STEP_SUCCESS" and ev.step_key in starts:
            out[ev.step_key] = entry.timestamp - starts[ev.step_key]
    return out


def table_of(settings_file: Path) -> dict[str, tuple[str, np.ndarray]]:
    s = load_settings(settings_file)
    emb = load_embedder(s.embedder, s.models_dir)
    rows = embed.table_rows(
        embed.open_store(s).open_table(embed.table_name(emb.tag)), ["chunk_id", "content_hash", "vector"]
    )
    return {r["chunk_id"]: (r["content_hash"], np.asarray(r["vector"], dtype=np.float32)) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--formats", default="md,html,txt", help="file extensions to include")
    ap.add_argument("--limit", type=int, default=60, help="at most this many files")
    ap.add_argument("--shards", default="1,2")
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args()
    exts = tuple("." + f for f in args.formats.split(","))
    included, excluded = select_files(args.docs, None, None)
    keep = [p for p in included if p.endswith(exts)][: args.limit]
    excluded += [{"path": p, "bytes": 0, "why": "format/limit"} for p in included if p not in keep]
    work = Path(tempfile.mkdtemp(prefix="ragpipe-shards-"))
    base = work / "base"
    base.mkdir()
    write_settings(base / "ragpipe.toml", args.docs, base / "warehouse", exclude_patterns(excluded))
    text = (base / "ragpipe.toml").read_text().replace('name = "minilm"', f'name = "{args.embedder}"')
    (base / "ragpipe.toml").write_text(text)
    t0 = time.perf_counter()
    r = materialize(str(base / "ragpipe.toml"), ["corpus", "documents", "chunks"], dg.DagsterInstance.ephemeral())
    assert r.success
    print(f"parsed and chunked {len(keep)} files in {time.perf_counter() - t0:.0f} s", flush=True)
    load_embedder(
        load_settings(base / "ragpipe.toml").embedder, load_settings(base / "ragpipe.toml").models_dir
    )  # build once

    rows, tables = [], {}
    for n in [int(x) for x in args.shards.split(",")]:
        proj = work / f"shards-{n}"
        shutil.copytree(base, proj)
        (proj / "ragpipe.toml").write_text(
            (base / "ragpipe.toml").read_text().replace(str(base), str(proj)) + f"\n[scale]\nembed_shards = {n}\n"
        )
        (proj / "dagster_home").mkdir()
        instance = dg.DagsterInstance.local_temp(str(proj / "dagster_home"))
        t0 = time.perf_counter()
        result = materialize(str(proj / "ragpipe.toml"), ["embeddings"], instance, multiprocess=True)
        wall = time.perf_counter() - t0
        assert result.success, [str(e) for e in result.all_events if e.is_failure]
        md = (
            instance.fetch_materializations(dg.AssetKey("embeddings"), limit=1)
            .records[0]
            .asset_materialization.metadata
        )
        steps = step_seconds(instance, result.run_id)
        tables[n] = table_of(proj / "ragpipe.toml")
        row = {
            "shards": n,
            "wall_s": wall,
            "steps_s": steps,
            "vectors": md["vectors"].value,
            "embedded_here": md["embedded"].value,
            "embedded_in_shards": md["precomputed"].value if "precomputed" in md else 0,
        }
        rows.append(row)
        print(
            f"{n} shard(s): {wall:.1f} s wall; steps " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(steps.items())),
            flush=True,
        )

    ref = tables[rows[0]["shards"]]
    for row in rows:
        t = tables[row["shards"]]
        row["identical_to_first"] = t.keys() == ref.keys() and all(
            t[k][0] == ref[k][0] and float(np.abs(t[k][1] - ref[k][1]).max()) < 1e-6 for k in ref
        )
    base_wall = rows[0]["wall_s"]
    print(f"\n{len(keep)} files ({args.formats}), {rows[0]['vectors']} vectors, embedder {args.embedder}\n")
    print(
        "| shards | wall s | ratio vs first | slowest shard step s | plan + merge s | texts embedded | table identical |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        st = row["steps_s"]
        shard_steps = [v for k, v in st.items() if "embed_shard_" in k] or [st.get("embeddings", 0.0)]
        pm = sum(v for k, v in st.items() if k.endswith(("embed_plan", "embed_merge")))
        texts = row["embedded_here"] + row["embedded_in_shards"]
        print(
            f"| {row['shards']} | {row['wall_s']:.1f} | {row['wall_s'] / base_wall:.2f} | {max(shard_steps):.1f} | {pm:.1f} | "
            f"{texts} | {row['identical_to_first']} |"
        )
    write_json(RESULTS / "shards.json", {"machine": machine(), "files": keep, "rows": rows})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
