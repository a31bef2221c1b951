"""The entailment reader's own figures: what a claim costs on this machine, and how it reads the claims of the
labelled first-contact answers. Whole-process figures; run alone (one heavy job at a time).

    .venv/bin/python bench/entailer.py speed            # ms per claim (p50, p90), cold build and load
    .venv/bin/python bench/entailer.py answers set8,set9,set10
        # per set: answers the rule passes on their value, labelled pass or fail, and how many of each the reader
        # flags at the shipped thresholds (a labelled-fail flagged is a catch, a labelled-pass flagged a false alarm)
    .venv/bin/python bench/entailer.py reviews set9,set10,set11,set12,set13,set14,set15,set16,set17,set18
        # positives sent to review as another wording of the expected answer: would the reader, reading the expected
        # answer against the answer, tell the labelled pass from the labelled fail?
    .venv/bin/python bench/entailer.py separation $(echo set{9..38} | tr ' ' ,) --reader /tmp/e6 --layers 6
        # positives the rule passes on their value that make a claim of their own: how well the largest "not in the
        # context" of an answer's claims ranks the labelled fails above the right answers (AUC), for the shipped
        # layers or any trained by bench/train_entailer.py (read with torch, so no int8 build)

The validation figures on synthetic claims (documents the training never saw) are in
ragpipe/reading/entailer/card.json, written by bench/train_entailer.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
for _path in (HERE, HERE / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def speed() -> None:
    import tempfile

    os.environ.setdefault("RAGPIPE_MODELS_DIR", tempfile.mkdtemp(prefix="entailer-bench-"))
    import ragpipe.reading.entailment as E

    t0 = time.perf_counter()
    E.reader()
    built = time.perf_counter() - t0
    import first_contact as fc

    _, contexts = fc.golden()
    rows = [r for r in fc.rows_of("set10") if r["question_id"] in contexts][:300]
    from ragpipe.reading import claims_of, unwrap

    pairs = [(c, contexts[r["question_id"]]) for r in rows for c in claims_of(unwrap(r["answer"]))]
    times = []
    for claim, ctx in pairs:
        t = time.perf_counter()
        text = E.premise(claim, ctx)
        E.reader().scores([claim], [text])
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(f"first use (int8 build + load): {built:.1f} s; {len(times)} claims of set10's answers, one at a time:")
    print(f"  p50 {statistics.median(times):.1f} ms, p90 {times[int(0.9 * len(times))]:.1f} ms per claim")


def answers(sets: str) -> None:
    """Positives the rule passes on their value, or sends to review or fails by the reader's reading alone."""
    import first_contact as fc

    tests, contexts = fc.golden()
    for name in sets.split(","):
        c: Counter = Counter()
        for r in fc.rows_of(name):
            if r.get("ambiguous") or r.get("label") == "ambiguous":
                continue
            t, ctx = tests[r["question_id"]], contexts.get(r["question_id"], [])
            verdict, reason = fc.rule_verdict(t, r["answer"], ctx)
            flagged = "(entailment reader" in reason
            if t.kind == "positive" and (verdict == "pass" or flagged):
                c[(r["label"], flagged)] += 1
        print(
            f"{name}: passed on the value: {c['fail', True] + c['fail', False]} labelled fail, of which the reader "
            f"flags {c['fail', True]}; {c['pass', True] + c['pass', False]} labelled pass, of which it flags "
            f"{c['pass', True]}"
        )


def reviews(sets: str) -> None:
    """Positives the rule sends to review because the answer words the expected answer otherwise ("answer does not
    state ...", "shares most words of ..."): the expected answer read as a claim against the answer, by label."""
    import first_contact as fc

    from ragpipe.reading.entailment import LABELS, reader

    tests, contexts = fc.golden()
    read: list[tuple[str, tuple[float, float, float]]] = []
    for name in sets.split(","):
        for r in fc.rows_of(name):
            t = tests[r["question_id"]]
            if r.get("ambiguous") or r.get("label") == "ambiguous" or t.kind != "positive":
                continue
            verdict, reason = fc.rule_verdict(t, r["answer"], contexts.get(r["question_id"], []))
            if verdict == "needs_review" and reason.startswith(("answer does not state", "shares most words")):
                read.append((r["label"], reader().scores([t.expected_answer], [r["answer"]])[0]))
    print(f"{len(read)} answers in review as another wording: {Counter(label for label, _ in read)}")
    for k, name in enumerate(LABELS[:2]):
        for at in (0.5, 0.7, 0.9):
            got = Counter(label for label, p in read if p[k] >= at)
            print(f"  read as {name} at p >= {at}: labelled pass {got['pass']}, labelled fail {got['fail']}")


def separation(sets: str, reader_dir: Path, layers: int) -> None:
    """AUC of the largest p(not in the context) over each passed positive's own claims, labelled fail against
    labelled pass, and how many of each a threshold would send to review."""
    import first_contact as fc
    import torch

    from ragpipe.reading import is_refusal
    from ragpipe.reading.entailment import LABELS, encode, torch_model
    from ragpipe.reading.premises import premise
    from ragpipe.verdicts.entailed import own_claims, said_as_written

    torch.set_num_threads(2)
    model = torch_model(reader_dir, layers)
    tests, contexts = fc.golden()
    scored: list[tuple[str, float]] = []
    for name in sets.split(","):
        for r in fc.rows_of(name):
            t, ctx = tests[r["question_id"]], contexts.get(r["question_id"], [])
            if r.get("ambiguous") or r.get("label") == "ambiguous" or t.kind != "positive" or not ctx:
                continue
            if fc.rule_verdict(t, r["answer"], ctx)[0] != "pass":
                continue
            restated = f"{t.question} {t.expected_answer}"
            claims = [c for c in own_claims(r["answer"], restated, is_refusal) if not said_as_written(c, ctx, restated)]
            if claims:
                with torch.no_grad():
                    x = encode(claims, [premise(c, ctx) for c in claims])
                    p = torch.softmax(model(**x).logits, -1)[:, LABELS.index("not_in_context")]
                scored.append((r["label"], float(p.max())))
    fails = [p for label, p in scored if label == "fail"]
    passes = [p for label, p in scored if label == "pass"]
    auc = sum((f > p) + 0.5 * (f == p) for f in fails for p in passes) / max(1, len(fails) * len(passes))
    print(f"{len(scored)} passed positives with a claim of their own ({len(fails)} labelled fail): AUC {auc:.3f}")
    for at in (0.5, 0.7, 0.8, 0.9):
        print(
            f"  not in the context at p >= {at}: {sum(f >= at for f in fails)} labelled fail, "
            f"{sum(p >= at for p in passes)} labelled pass"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("speed", "answers", "reviews", "separation"))
    ap.add_argument("sets", nargs="?", default="set8,set9,set10")
    ap.add_argument("--reader", type=Path, help="separation: a trained reader's folder (default: the shipped one)")
    ap.add_argument("--layers", type=int, help="separation: its encoder layers (default: the shipped count)")
    args = ap.parse_args()
    from ragpipe.reading.entailment import ENTAILER_DIR, LAYERS

    jobs = {
        "speed": speed,
        "answers": lambda: answers(args.sets),
        "reviews": lambda: reviews(args.sets),
        "separation": lambda: separation(args.sets, args.reader or ENTAILER_DIR, args.layers or LAYERS),
    }
    jobs[args.what]()


if __name__ == "__main__":
    main()
