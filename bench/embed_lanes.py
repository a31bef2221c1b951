"""The ONNX embedders on every core: one single-threaded run per core side by side (ragpipe's `threads = 0`) against
one run with that many intra-op threads, over the same realdocs chunks, paired rounds in one process.

    .venv/bin/python bench/embed_lanes.py [--name minilm-onnx-int8] [--n 1200] [--rounds 3]

Texts: the realdocs Markdown files cut into 800-character pieces (the default chunker's size), the first --n.
Reported per round: seconds for each configuration (rotating which goes first) and their ratio; the vectors of the
two are compared (they must be equal: each text is inferred alone either way for int8). Writes
bench/results/embed_lanes.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from _common import DEFAULT_DOCS, RESULTS, machine, write_json

from ragpipe.core import usable_cpus
from ragpipe.embed import load_embedder
from ragpipe.settings import EmbedderSettings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="minilm-onnx-int8", choices=["minilm-onnx", "minilm-onnx-int8"])
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models-dir", type=Path, default=Path("warehouse/models"))
    args = ap.parse_args()
    texts: list[str] = []
    for f in sorted(DEFAULT_DOCS.rglob("*.md")):
        t = f.read_text(encoding="utf-8", errors="replace")
        texts += [t[i : i + 800] for i in range(0, len(t), 800)]
    texts = texts[: args.n]
    cores = usable_cpus()
    cfg = EmbedderSettings(name=args.name)
    configs = {
        f"{cores} runs x 1 thread (threads = 0)": load_embedder(cfg, args.models_dir, threads=0),
        f"1 run x {cores} threads": load_embedder(cfg, args.models_dir, threads=cores),
    }
    for emb in configs.values():
        emb.encode(texts[:32])  # warm-up
    seconds: dict[str, list[float]] = {k: [] for k in configs}
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        names = list(configs)[r % 2 :] + list(configs)[: r % 2]
        for name in names:
            t0 = time.perf_counter()
            vectors[name] = configs[name].encode(texts)
            seconds[name].append(time.perf_counter() - t0)
    lanes, intra = list(configs)
    ratio = statistics.median(a / b for a, b in zip(seconds[lanes], seconds[intra]))
    diff = float(np.abs(vectors[lanes] - vectors[intra]).max())
    print(f"{args.name}, {len(texts)} texts, {cores} cores, {args.rounds} rounds")
    for name, secs in seconds.items():
        print(f"  {name:<34} median {statistics.median(secs):6.1f} s  ({', '.join(f'{s:.1f}' for s in secs)})")
    print(f"  ratio (median of rounds): {ratio:.2f}; largest vector difference {diff:.1e}")
    write_json(
        RESULTS / "embed_lanes.json",
        {
            "machine": machine(),
            "name": args.name,
            "texts": len(texts),
            "seconds": seconds,
            "ratio": ratio,
            "diff": diff,
        },
    )


if __name__ == "__main__":
    main()
