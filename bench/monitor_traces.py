"""Production traces from real answerers, for the monitoring tests and benchmark (docs/monitoring.md).

An "app" answers the 60 realdocs questions of bench/data/first_contact/realdocs{2,3}_golden.jsonl from their retrieved
passages, day after day, and logs each answer as a trace: the extractive baseline answers a seeded sample of the
questions each day, SmolLM2-135M-Instruct (the local model) a smaller sample. The last day is a deploy with a broken
retriever: every question gets the passages retrieved for another question from another document. A trace's
`corrected` flag stands in for a reviewer: the answer does not state the golden expected answer (a positive) or does
not refuse (a negative). Latency and tokens are the answerer's own, measured.

    .venv/bin/python bench/monitor_traces.py --out tests/fixtures/traces            # 7 good days and a broken one
    .venv/bin/python bench/monitor_traces.py --out /tmp/t --llm-per-day 0            # extractive only (seconds)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT  # noqa: E402
from ragpipe.reading import answer_matches, is_refusal  # noqa: E402
from ragpipe.settings import AnswererSettings  # noqa: E402

GOLDEN = [
    ROOT / "bench/data/first_contact/realdocs2_golden.jsonl",
    ROOT / "bench/data/first_contact/realdocs3_golden.jsonl",
]
FIRST_DAY = dt.date(2026, 11, 1)


def load_tests() -> list[dict]:
    return [
        json.loads(line) for path in GOLDEN for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def source(t: dict) -> str:
    return t.get("evidence_source") or t.get("trap_source") or ""


def broken_contexts(tests: list[dict], i: int) -> list[str]:
    """The passages of the next question about another document: a retriever gone wrong."""
    for step in range(1, len(tests)):
        other = tests[(i + step) % len(tests)]
        if source(other) != source(tests[i]):
            return other["context"]
    raise ValueError("every test is about one document")


def wrong(t: dict, answer: str) -> bool:
    if t["kind"] == "negative":
        return not is_refusal(answer)
    return not answer_matches(answer, t["expected_answer"], t["question"]).matched


def day_traces(
    tests: list[dict], day: int, broken: bool, answerers: dict, per_day: dict, rng: random.Random
) -> list[dict]:
    date = FIRST_DAY + dt.timedelta(days=day)
    out = []
    for name, answerer in answerers.items():
        picked = sorted(rng.sample(range(len(tests)), per_day[name]))
        items = [(tests[i]["question"], broken_contexts(tests, i) if broken else tests[i]["context"]) for i in picked]
        for n, (i, (q, ctx), a) in enumerate(zip(picked, items, answerer.answer_all(items))):
            at = dt.datetime.combine(date, dt.time(8)) + dt.timedelta(seconds=rng.randrange(12 * 3600))
            out.append({
                "time": at.isoformat() + "Z",
                "question": q,
                "answer": a.text,
                "contexts": [{"text": c, "source": f"ctx-{k}"} for k, c in enumerate(ctx)],
                "app_version": "2.1.0" if broken else "2.0.3",
                "model": name,
                "corrected": wrong(tests[i], a.text),
                "latency_ms": round(a.latency_s * 1000, 2),
                "tokens": {"prompt": a.input_tokens, "completion": a.output_tokens},
                "user": f"user-{rng.randrange(40):02d}",
                "session_id": f"s{day:02d}{n:03d}",
            })  # fmt: skip
        print(f"day {day + 1} {name}: {len(items)} answers", file=sys.stderr, flush=True)
    return sorted(out, key=lambda r: r["time"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for one traces file per day")
    ap.add_argument("--days", type=int, default=8, help="days in all; the last one has the broken retriever")
    ap.add_argument("--extractive-per-day", type=int, default=45)
    ap.add_argument("--llm-per-day", type=int, default=12, help="SmolLM2 answers per day (0: none)")
    ap.add_argument("--seed", type=int, default=20261204)
    args = ap.parse_args()
    from ragpipe.rag import ExtractiveAnswerer, SmolLM2Answerer

    tests = load_tests()
    answerers: dict = {"extractive": ExtractiveAnswerer(AnswererSettings())}
    per_day = {"extractive": args.extractive_per_day}
    if args.llm_per_day:
        answerers["smollm2"] = SmolLM2Answerer(AnswererSettings(kind="smollm2", threads=2))
        per_day["smollm2"] = args.llm_per_day
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for day in range(args.days):
        rows = day_traces(tests, day, day == args.days - 1, answerers, per_day, rng)
        path = args.out / f"{FIRST_DAY + dt.timedelta(days=day)}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} traces", file=sys.stderr)


if __name__ == "__main__":
    main()
