"""The bundled golden set answered by a real LLM, end to end through `ragpipe ci`, and its raw answers kept.

    .venv/bin/python bench/real_llm.py --answerer smollm2                      # transformers, in process
    .venv/bin/python bench/real_llm.py --answerer openai --base-url http://127.0.0.1:8088/v1 --model smollm2
                                                                               # any OpenAI-compatible server

A throwaway project over examples/ with the repository's settings and the chosen answerer runs `ragpipe ci` (the real
graph: parse, chunk, embed, stamp, retrieve, answer, judge). Prints the verdict counts, the answerer's time per
question and tokens, and writes every test's question, anchor retrieval, raw answer, verdict, reason and matched_by
to --out (JSON Lines), ready for a human label (tests/fixtures/answers/smollm2_labelled.jsonl came from such a file).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401  (offline environment first)
from ragpipe.cli import main as ragpipe_main  # noqa: E402
from ragpipe.settings import load_settings  # noqa: E402
from ragpipe.warehouse import connect  # noqa: E402


def settings_text(base: Path, answerer: str, base_url: str, model: str, models_dir: Path) -> str:
    text = (ROOT / "ragpipe.toml").read_text()
    text = re.sub(
        r'(?m)^dir = "warehouse".*$', f'dir = "{base / "warehouse"}"\nmodels_dir = "{models_dir}"', text, count=1
    )
    text = re.sub(r'(?m)^dir = "examples/corpus"', f'dir = "{ROOT / "examples" / "corpus"}"', text, count=1)
    text = re.sub(
        r'(?m)^path = "examples/golden.jsonl"', f'path = "{ROOT / "examples" / "golden.jsonl"}"', text, count=1
    )
    text = re.sub(r'(?m)^kind = "extractive".*$', f'kind = "{answerer}"', text, count=1)
    text = re.sub(r"(?m)^base_url = .*$", f'base_url = "{base_url}"', text, count=1)
    text = re.sub(r"(?m)^model = .*$", f'model = "{model}"\nmax_tokens = 96', text, count=1)
    text = re.sub(r"(?m)^timeout_s = 30.0", "timeout_s = 300.0", text, count=1)
    text = re.sub(r"(?m)^concurrency = 4", "concurrency = 1", text, count=1)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answerer", choices=["smollm2", "openai"], default="smollm2")
    ap.add_argument("--base-url", default="http://127.0.0.1:8088/v1", help="the server, for --answerer openai")
    ap.add_argument("--model", default="smollm2", help="the model name sent to the server")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "real_llm_answers.jsonl"))
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ragpipe-llm-"))
    (base / "ragpipe.toml").write_text(
        settings_text(
            base, args.answerer, args.base_url, args.model, Path(tempfile.gettempdir()) / "ragpipe-bench-models"
        )
    )
    s = load_settings(base / "ragpipe.toml")
    t0 = time.perf_counter()
    code = ragpipe_main(["--settings", str(s.source), "ci"])
    wall = time.perf_counter() - t0
    with connect(s.duckdb_path, read_only=True) as con:
        rows = con.execute(
            "SELECT v.question_id, g.kind, g.question, g.expected_answer, g.trap_value, v.anchor_retrieved, a.answer, "
            "a.error, a.latency_s, a.input_tokens, a.output_tokens, v.verdict, v.reason, v.matched_by, r.answerer_label "
            "FROM latest_verdicts v JOIN answers a USING (eval_run_id, question_id) JOIN golden_tests g USING (question_id) "
            "JOIN eval_runs r USING (eval_run_id) ORDER BY v.question_id"
        ).fetchall()
    cols = [
        "question_id",
        "kind",
        "question",
        "expected_answer",
        "trap_value",
        "anchor_retrieved",
        "answer",
        "error",
        "latency_s",
        "input_tokens",
        "output_tokens",
        "verdict",
        "reason",
        "matched_by",
        "answerer",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(dict(zip(cols, r))) + "\n" for r in rows))
    counts = Counter(r[11] for r in rows)
    lat = sorted(r[8] for r in rows if r[8] is not None)
    print(f"\n{rows[0][14] if rows else args.answerer}: ragpipe ci exit {code}, {wall:.0f} s in all")
    print("verdicts: " + ", ".join(f"{k} {counts[k]}" for k in ("pass", "fail", "did_not_run", "error")))
    if lat:
        print(
            f"per question: median {lat[len(lat) // 2]:.1f} s, max {lat[-1]:.1f} s; tokens in {sum(r[9] for r in rows)}, "
            f"out {sum(r[10] for r in rows)}"
        )
    print(f"raw answers: {out}")


if __name__ == "__main__":
    main()
