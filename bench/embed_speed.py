"""Embedding speed of the default embedder's backends, torch vs ONNX Runtime fp32 vs ONNX Runtime int8, in one run.

    .venv/bin/python bench/embed_speed.py [--n 2000] [--rounds 3] [--batch-size 64] [--backends minilm,minilm-onnx,minilm-onnx-int8]
                                          [--skip-ndcg] [--readme]

Texts: realistic chunks, ragpipe-sized: paragraphs of the realdocs Markdown files packed into chunks of at most 800
characters (the default chunker's max_characters), then Cranfield abstracts, up to --n texts in all.
Each backend is loaded through ragpipe.embed.load_embedder and timed through its own `encode` (the code path ragpipe's
embedding stage runs: tokenization, length-sorted batches of --batch-size, pooling, normalization), after a warm-up,
with every usable core (torch.set_num_threads and ONNX Runtime's intra-op threads). Timing is paired: the texts,
length-sorted as encode sorts them, are cut into slices of 4 batches and every slice is encoded by every backend back
to back (rotating who goes first), so a burst of load from other processes falls on all of them alike. Reported:
throughput from the median round, the speed-up per round (total time), the median and 10th/90th percentiles of the
per-slice speed-ups, and the ratio of process CPU time.

Quality: cosine of each backend's vectors to torch's on the same texts, and nDCG@10 on Cranfield (vector and hybrid
retrieval through bench/cranfield.py's ragpipe code path).

Roofline: FLOPs of MiniLM-L6 for the batches actually run (padding included) from its config, against the machine's
measured peak: numpy float32 matmul on all cores, and ONNX Runtime's int8 GEMM (MatMulInteger u8 x s8, the kernel
family of the int8 model's DynamicQuantizeMatMul).

Writes bench/results/embed_speed.json; --readme also replaces the "Embedding speed" section of bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import DEFAULT_DOCS, RESULTS, machine, write_json  # noqa: E402
from cranfield import (  # noqa: E402
    DEFAULT_DATA,
    MODELS_DIR,
    chunks_of,
    doc_text,
    evaluate_embedder,
    load_cranfield,
    replace_readme_section,
)

from ragpipe.core import usable_cpus  # noqa: E402
from ragpipe.embed import load_embedder  # noqa: E402
from ragpipe.settings import EmbedderSettings  # noqa: E402

BACKENDS = ("minilm", "minilm-onnx", "minilm-onnx-int8")
MAX_CHARS = 800


# ---------------------------------------------------------------------------------------------- texts


def markdown_chunks(md_dir: Path, max_chars: int = MAX_CHARS) -> list[str]:
    """Paragraphs of each Markdown file packed greedily into chunks of at most max_chars (a long paragraph is cut)."""
    out: list[str] = []
    for path in sorted(md_dir.rglob("*.md")):
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace"))]
        cur = ""
        for p in (p for p in paras if p):
            while len(p) > max_chars:
                if cur:
                    out.append(cur)
                    cur = ""
                out.append(p[:max_chars])
                p = p[max_chars:]
            if cur and len(cur) + 1 + len(p) > max_chars:
                out.append(cur)
                cur = ""
            cur = f"{cur} {p}".strip()
        if cur:
            out.append(cur)
    return [c for c in out if len(c) >= 40]


def bench_texts(n: int, docs: Path, cranfield: Path) -> tuple[list[str], dict[str, int]]:
    md = markdown_chunks(docs / "markdown")
    corpus, _, _ = load_cranfield(cranfield)
    abstracts = [t for t in (doc_text(d) for d in corpus) if t]
    texts = (md + abstracts)[:n]
    return texts, {"markdown_chunks": min(len(md), n), "cranfield_abstracts": max(0, len(texts) - len(md))}


# ---------------------------------------------------------------------------------------------- FLOPs


def model_config() -> dict[str, int]:
    from ragpipe.embed import minilm_path

    cfg = json.loads((minilm_path() / "config.json").read_text(encoding="utf-8"))
    return {k: int(cfg[k]) for k in ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")}


def flops_of_batches(seq_lens: list[int], batch_size: int, cfg: dict[str, int]) -> dict[str, float]:
    """FLOPs (2 per multiply-add) of the encoder on length-sorted batches padded to their longest sequence.

    Per layer and sequence of padded length L: the weight matmuls, 2 L (4 h^2 + 2 h i) (Q, K, V, output projection,
    two FFN matrices: every weight is used once per token), and attention, 4 L^2 h (QK^T and softmax x V summed over
    heads). Layer norms, softmax, GELU, biases, embeddings and pooling are O(L h) and left out (< 1 %).
    """
    n_layers, h, i = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"]
    lens = sorted(seq_lens, reverse=True)
    linear = attention = padded = 0.0
    for b in range(0, len(lens), batch_size):
        batch = lens[b : b + batch_size]
        L = batch[0]
        padded += L * len(batch)
        linear += len(batch) * n_layers * 2 * L * (4 * h * h + 2 * h * i)
        attention += len(batch) * n_layers * 4 * L * L * h
    return {"linear": linear, "attention": attention, "total": linear + attention, "padded_tokens": padded}


# ---------------------------------------------------------------------------------------------- peak


PROBE_N = 2048  # square matmuls for the peak probes: 17.2 GFLOP each, large enough for full-speed kernels


def probe_fp32_numpy(n: int = PROBE_N) -> tuple[Any, float]:
    """(callable, FLOPs): one numpy float32 n x n matmul (BLAS, every core)."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up (thread pool start)
    return (lambda: a @ b), 2.0 * n**3


def blas_info() -> Any:
    try:
        from threadpoolctl import threadpool_info

        return [{k: p.get(k) for k in ("internal_api", "num_threads", "architecture")} for p in threadpool_info()]
    except Exception:  # noqa: BLE001  (threadpoolctl is optional)
        return None


def _ort_matmul(op: str, a_type: int, b: np.ndarray, y_type: int, threads: int) -> Any:
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    n = b.shape[0]
    graph = helper.make_graph(
        [helper.make_node(op, ["A", "B"], ["Y"])],
        op.lower(),
        [helper.make_tensor_value_info("A", a_type, [n, n])],
        [helper.make_tensor_value_info("Y", y_type, [n, n])],
        [numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def probe_int8_ort(threads: int, n: int = PROBE_N) -> tuple[Any, float]:
    """ONNX Runtime MatMulInteger, uint8 activations x int8 weights -> int32: MLAS QGEMM (VNNI where the CPU has it),
    the kernel family of the int8 model's DynamicQuantizeMatMul / QAttention."""
    from onnx import TensorProto

    rng = np.random.default_rng(0)
    sess = _ort_matmul(
        "MatMulInteger", TensorProto.UINT8, rng.integers(-127, 127, (n, n), dtype=np.int8), TensorProto.INT32, threads
    )
    a = rng.integers(0, 255, (n, n), dtype=np.uint8)
    sess.run(None, {"A": a})
    return (lambda: sess.run(None, {"A": a})), 2.0 * n**3


def probe_fp32_ort(threads: int, n: int = PROBE_N) -> tuple[Any, float]:
    """ONNX Runtime's own float32 MatMul (MLAS SGEMM), for comparison with numpy's BLAS."""
    from onnx import TensorProto

    rng = np.random.default_rng(0)
    sess = _ort_matmul(
        "MatMul", TensorProto.FLOAT, rng.standard_normal((n, n), dtype=np.float32), TensorProto.FLOAT, threads
    )
    a = rng.standard_normal((n, n), dtype=np.float32)
    sess.run(None, {"A": a})
    return (lambda: sess.run(None, {"A": a})), 2.0 * n**3


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--cranfield", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--skip-ndcg", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS / "embed_speed.json")
    ap.add_argument(
        "--readme", action="store_true", help="write the figures into bench/README.md's Embedding speed section"
    )
    args = ap.parse_args(argv)
    command = ("python bench/embed_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()

    import torch

    threads = usable_cpus()
    torch.set_num_threads(threads)
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    texts, sources = bench_texts(args.n, args.docs, args.cranfield)
    print(
        f"{len(texts)} texts ({sources}), batch size {args.batch_size}, {threads} threads, backends {names}", flush=True
    )

    embs: dict[str, Any] = {}
    load_s: dict[str, float] = {}
    for name in names:
        t0 = time.perf_counter()
        embs[name] = load_embedder(EmbedderSettings(name=name, batch_size=args.batch_size), MODELS_DIR)
        load_s[name] = time.perf_counter() - t0
        print(f"loaded {name} ({embs[name].tag}) in {load_s[name]:.1f} s", flush=True)

    counter = embs[names[0]]
    n_tokens = counter.count_tokens(texts)
    max_seq = 256
    seq_lens = [min(t, max_seq) for t in n_tokens]
    real_tokens = sum(seq_lens)
    print(
        f"tokens: {sum(n_tokens)} ({real_tokens} after truncation at {max_seq}; mean {real_tokens / len(texts):.1f} "
        f"per text, {sum(t > max_seq for t in n_tokens)} texts truncated)",
        flush=True,
    )

    for name in names:  # warm-up: first-call allocations, thread pools, kernel selection
        embs[name].encode(texts[:128])

    # Paired, interleaved timing: the texts, sorted by length as every backend's encode sorts them, are cut into
    # slices of 4 batches; each slice is encoded by every backend back to back (rotating who goes first), so a burst
    # of load from other processes falls on all backends alike. A round is one pass over all texts. The peak-FLOP/s
    # probes run between slices too, so their best sample and the backends' best times come from the same conditions.
    ordered = sorted(texts, key=len, reverse=True)
    step = 4 * args.batch_size
    slices = [ordered[i : i + step] for i in range(0, len(ordered), step)]
    probes = {
        "fp32_numpy": probe_fp32_numpy(),
        "int8_ort": probe_int8_ort(threads),
        "fp32_ort": probe_fp32_ort(threads),
    }
    samples: dict[str, list[float]] = {k: [] for k in probes}
    for _ in range(3):
        for k, (fn, _ops) in probes.items():
            samples[k].append(_timed(fn))
    took: dict[str, list[list[float]]] = {n: [[] for _ in slices] for n in names}  # [slice][round] seconds
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    slice_ratio: dict[str, list[float]] = {n: [] for n in names}
    first_pass: dict[str, list[np.ndarray]] = {n: [] for n in names}  # round 1's vectors, for the quality check
    for r in range(args.rounds):
        w = dict.fromkeys(names, 0.0)
        c = dict.fromkeys(names, 0.0)
        for j, part in enumerate(slices):
            k = (r * len(slices) + j) % len(names)
            for name in names[k:] + names[:k]:
                c0, t0 = time.process_time(), time.perf_counter()
                out = embs[name].encode(part)
                took[name][j].append(time.perf_counter() - t0)
                if r == 0:
                    first_pass[name].append(out)
                w[name] += took[name][j][-1]
                c[name] += time.process_time() - c0
            for name in names:
                slice_ratio[name].append(took[names[0]][j][-1] / took[name][j][-1])
            for key, (fn, _ops) in probes.items():
                samples[key].append(_timed(fn))
        for name in names:
            wall[name].append(w[name])
            cpu[name].append(c[name])
            print(
                f"round {r + 1}: {name:18s} {w[name]:7.2f} s  {len(texts) / w[name]:7.1f} chunks/s  "
                f"{real_tokens / w[name]:8.0f} tokens/s  (cpu {c[name]:.1f} s)  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    vectors = {name: np.concatenate(first_pass[name]) for name in names}  # same (length-sorted) order for all

    base = names[0]
    cfg = model_config()
    flops = flops_of_batches(seq_lens, args.batch_size, cfg)
    peaks = {
        k: {
            "n": PROBE_N,
            "samples": len(v),
            "best_s": min(v),
            "median_s": statistics.median(v),
            "best_g_per_s": probes[k][1] / min(v) / 1e9,
            "median_g_per_s": probes[k][1] / statistics.median(v) / 1e9,
        }
        for k, v in samples.items()
    }
    peaks["fp32_numpy"]["blas"] = blas_info()
    peak_flops = peaks["fp32_numpy"]["best_g_per_s"] * 1e9
    peak_int8 = peaks["int8_ort"]["best_g_per_s"] * 1e9

    results: dict[str, Any] = {}
    for name in names:
        med = statistics.median(wall[name])
        best = sum(min(t) for t in took[name])  # each slice's least-disturbed time, summed
        ratios = [wall[base][i] / wall[name][i] for i in range(args.rounds)]
        cpu_ratio = statistics.median(cpu[base][i] / cpu[name][i] for i in range(args.rounds))
        int8 = name.endswith("int8")
        roof_s = flops["linear"] / (peak_int8 if int8 else peak_flops) + flops["attention"] / peak_flops
        v, ref = vectors[name], vectors[base]
        cos = (v * ref).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(ref, axis=1))
        results[name] = {
            "tag": embs[name].tag,
            "load_s": round(load_s[name], 2),
            "wall_s_per_round": [round(x, 3) for x in wall[name]],
            "cpu_s_per_round": [round(x, 3) for x in cpu[name]],
            "median_wall_s": round(med, 3),
            "best_wall_s": round(best, 3),
            "chunks_per_s": round(len(texts) / med, 1),
            "tokens_per_s": round(real_tokens / med),
            "chunks_per_s_best": round(len(texts) / best, 1),
            "tokens_per_s_best": round(real_tokens / best),
            "speedup_vs_torch_per_round": [round(x, 3) for x in ratios],
            "speedup_vs_torch": round(statistics.median(ratios), 3),
            "speedup_vs_torch_best": round(sum(min(t) for t in took[base]) / best, 3),
            "speedup_vs_torch_median_of_slices": round(statistics.median(slice_ratio[name]), 3),
            "speedup_vs_torch_slices_p10_p90": [round(float(np.percentile(slice_ratio[name], q)), 3) for q in (10, 90)],
            "cpu_time_ratio_vs_torch": round(cpu_ratio, 3),
            "cosine_vs_torch": {"min": float(cos.min()), "mean": float(cos.mean())},
            "achieved_gflops_median": round(flops["total"] / med / 1e9, 1),
            "achieved_gflops_best": round(flops["total"] / best / 1e9, 1),
            "roofline_s": round(roof_s, 3),
            "roofline_tokens_per_s": round(real_tokens / roof_s),
            "fraction_of_roofline_median": round(roof_s / med, 3),
            "fraction_of_roofline_best": round(roof_s / best, 3),
            "roofline_peak_used": "int8 GEMM for weight matmuls, fp32 for attention" if int8 else "fp32",
        }

    ndcg: dict[str, Any] = {}
    if not args.skip_ndcg:
        corpus, queries, qrels = load_cranfield(args.cranfield)
        chunks = chunks_of(corpus)
        work = Path(tempfile.mkdtemp(prefix="ragpipe-embed-speed-"))
        try:
            for name in names:
                r = evaluate_embedder(name, chunks, queries, qrels, work, 100, args.batch_size, emb=embs[name])
                ndcg[name] = {m: r["modes"][m]["ragpipe"] for m in ("vector", "hybrid")}
                ndcg[name]["max_abs_diff_vs_trec_eval"] = max(r["modes"][m]["max_abs_diff"] for m in r["modes"])
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for name in names:
            for mode in ("vector", "hybrid"):
                ndcg[name][f"{mode}_ndcg10_delta_vs_torch"] = round(
                    ndcg[name][mode]["ndcg@10"] - ndcg[base][mode]["ndcg@10"], 4
                )

    report = {
        "command": command,
        "texts": {
            "n": len(texts),
            **sources,
            "tokens": sum(n_tokens),
            "tokens_after_truncation": real_tokens,
            "mean_tokens": round(real_tokens / len(texts), 1),
            "truncated_texts": sum(t > max_seq for t in n_tokens),
            "padded_tokens": int(flops["padded_tokens"]),
        },
        "batch_size": args.batch_size,
        "threads": threads,
        "rounds": args.rounds,
        "model": cfg,
        "flops": {
            "linear_per_token": 2
            * cfg["num_hidden_layers"]
            * (4 * cfg["hidden_size"] ** 2 + 2 * cfg["hidden_size"] * cfg["intermediate_size"]),
            "attention_per_token_per_seq_len": 4 * cfg["num_hidden_layers"] * cfg["hidden_size"],
            "total_for_run": flops["total"],
            "linear_for_run": flops["linear"],
            "attention_for_run": flops["attention"],
            "per_real_token": flops["total"] / real_tokens,
        },
        "peak": peaks,
        "backends": results,
        "cranfield": ndcg,
        "machine": machine(),
    }
    write_json(args.out, report)
    print(markdown(report))
    print(f"wrote {args.out}")
    if args.readme:
        replace_readme_section("embed-speed", readme_section(report))
        print("updated bench/README.md (Embedding speed section)")
    return 0


def markdown(rep: dict[str, Any]) -> str:
    speed = [
        "| backend (tag) | chunks/s median round (best) | tokens/s median round (best) | speed-up vs torch: per round "
        "| best-of-rounds | per slice: median [p10, p90] | CPU-time ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    quality = [
        "| backend | cosine to torch min / mean | Cranfield nDCG@10 vector (Δ vs torch) | hybrid (Δ) "
        "| achieved GFLOP/s median (best) | roofline tokens/s | fraction of roofline median (best) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rep["backends"].items():
        speed.append(
            f"| {name} (`{r['tag']}`) | {r['chunks_per_s']:.1f} ({r['chunks_per_s_best']:.1f}) "
            f"| {r['tokens_per_s']:,} ({r['tokens_per_s_best']:,}) "
            f"| {', '.join(f'{x:.2f}' for x in r['speedup_vs_torch_per_round'])} | {r['speedup_vs_torch_best']:.2f}x "
            f"| {r['speedup_vs_torch_median_of_slices']:.2f}x [{r['speedup_vs_torch_slices_p10_p90'][0]:.2f}, "
            f"{r['speedup_vs_torch_slices_p10_p90'][1]:.2f}] | {r['cpu_time_ratio_vs_torch']:.2f}x |"
        )
        nd = rep["cranfield"].get(name)
        vec = f"{nd['vector']['ndcg@10']:.4f} ({nd['vector_ndcg10_delta_vs_torch']:+.4f})" if nd else "-"
        hyb = f"{nd['hybrid']['ndcg@10']:.4f} ({nd['hybrid_ndcg10_delta_vs_torch']:+.4f})" if nd else "-"
        quality.append(
            f"| {name} | {r['cosine_vs_torch']['min']:.4f} / {r['cosine_vs_torch']['mean']:.4f} | {vec} | {hyb} "
            f"| {r['achieved_gflops_median']:.1f} ({r['achieved_gflops_best']:.1f}) | {r['roofline_tokens_per_s']:,} "
            f"| {r['fraction_of_roofline_median']:.0%} ({r['fraction_of_roofline_best']:.0%}) |"
        )
    return "\n".join(speed) + "\n\n" + "\n".join(quality)


def readme_section(rep: dict[str, Any]) -> str:
    t, f, p, m = rep["texts"], rep["flops"], rep["peak"], rep["model"]
    return f"""## Embedding speed

```sh
.venv/bin/{rep["command"]}
```

{t["n"]:,} chunk texts ({t["markdown_chunks"]:,} realdocs Markdown chunks of at most 800 characters, {t["cranfield_abstracts"]:,}
Cranfield abstracts), {t["tokens_after_truncation"]:,} tokens after truncation at 256 (mean {t["mean_tokens"]}, {t["truncated_texts"]}
truncated; {t["padded_tokens"]:,} with padding in length-sorted batches), batch size {rep["batch_size"]}, {rep["threads"]} threads
(every usable core), warm-up first; each backend through ragpipe's `encode`. Paired timing: the length-sorted texts are
cut into slices of 4 batches, each slice encoded by every backend back to back in rotating order; {rep["rounds"]} rounds
(passes over all texts). "median round" is the throughput of the median pass; "best" sums each slice's fastest time
over the rounds (the least-disturbed estimate); "CPU-time ratio" compares process CPU seconds.

{markdown(rep)}

Roofline. MiniLM-L6 ({m["num_hidden_layers"]} layers, hidden {m["hidden_size"]}, FFN {m["intermediate_size"]},
{m["num_attention_heads"]} heads): {f["linear_per_token"] / 1e6:.1f} MFLOP per token in weight matmuls
(2 x the {f["linear_per_token"] / 2e6:.2f} M encoder weights every token touches: Q, K, V, output, two FFN matrices per
layer) plus {f["attention_per_token_per_seq_len"]:,} x L FLOP per token of attention (QK^T and softmax x V) at sequence
length L; layer norms, softmax, GELU and embeddings are under 1 %. For these batches, padding included:
{f["per_real_token"] / 1e6:.1f} MFLOP per real token. Peak on this machine, best of {p["fp32_numpy"]["samples"]} probes spread
through the run (median in brackets): numpy float32 matmul n = {p["fp32_numpy"]["n"]} **{p["fp32_numpy"]["best_g_per_s"]:.0f} GFLOP/s**
({p["fp32_numpy"]["median_g_per_s"]:.0f}); ONNX Runtime's own SGEMM {p["fp32_ort"]["best_g_per_s"]:.0f} ({p["fp32_ort"]["median_g_per_s"]:.0f});
ONNX Runtime int8 GEMM (MatMulInteger u8 x s8) **{p["int8_ort"]["best_g_per_s"]:.0f} GOP/s** ({p["int8_ort"]["median_g_per_s"]:.0f}).
Roofline tokens/s = real tokens / (FLOPs / peak), with the int8 peak for the int8 model's weight matmuls and the
numpy fp32 peak for the rest; "fraction" = roofline time / measured time.

Results: `bench/results/embed_speed.json` (per-round wall and CPU seconds, per-slice ratios, load times, machine).
"""


if __name__ == "__main__":
    raise SystemExit(main())
