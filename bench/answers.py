"""The verdict rule against the hand-labelled answers of tests/fixtures/answers/: false passes and false fails per
file and per style, and every disagreement with its reason.

    .venv/bin/python bench/answers.py [--show]

The library is imported from the first `ragpipe` on sys.path, so the same fixtures measure another version:
    git worktree add /tmp/old <commit> && PYTHONPATH=/tmp/old .venv/bin/python bench/answers.py
(the fixtures and this script are read from this checkout; the rule from /tmp/old).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))  # after PYTHONPATH: another checkout's ragpipe wins when given

from ragpipe.golden import GoldenTest, load_golden  # noqa: E402
from ragpipe.rag import Answer  # noqa: E402
from ragpipe.settings import AnswererSettings  # noqa: E402
from ragpipe.verdicts import decide  # noqa: E402

FIXTURES = HERE / "tests" / "fixtures" / "answers"
SETS = (
    "bundled_labelled.jsonl",
    "realdocs_labelled.jsonl",
    "heldout_labelled.jsonl",
    "squad_unseen_labelled.jsonl",
    "smollm2_labelled.jsonl",
)
SQUAD = HERE.parent / "shared" / "data" / "squad2_dev" / "golden_squad.json"


def golden_tests(path: Path) -> dict[str, GoldenTest]:
    return {t.question_id: t for t in load_golden(path).tests}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--show", action="store_true", help="print every disagreement")
    args = ap.parse_args()
    import ragpipe

    print(f"rule from {Path(ragpipe.__file__).parent}")
    tests = {**golden_tests(HERE / "examples" / "golden.jsonl"), **golden_tests(FIXTURES / "realdocs_golden.jsonl")}
    squad = golden_tests(SQUAD)  # its ids (neg_001, pos_001, ...) do not collide with the others
    phrases = AnswererSettings().refusal_phrases  # the configured default of that version
    total: Counter = Counter()
    styles: dict[str, Counter] = {}
    for name in SETS:
        c: Counter = Counter()
        for line in (FIXTURES / name).read_text().splitlines():
            row = json.loads(line)
            if row.get("ambiguous"):
                continue
            test = (squad if name.startswith("squad") else tests)[row["question_id"]]
            v = decide(test, ("anchor",), "unchanged", ["anchor"], Answer(row["answer"], 0, 0, 0), phrases, "tag")
            got = v.verdict if v.verdict in ("pass", "needs_review") else "fail"
            if got == "needs_review":
                outcome = "needs_review"
            else:
                outcome = "ok" if got == row["label"] else ("false_pass" if got == "pass" else "false_fail")
            c["n"] += 1
            c[outcome] += 1
            styles.setdefault(row["style"], Counter())[outcome] += 1
            styles[row["style"]]["n"] += 1
            if args.show and outcome != "ok":
                print(
                    f"  {outcome:<10} {row['question_id']:<10} {row['answer'][:100]!r}\n             -> {v.reason[:120]}"
                )
        total.update(c)
        print(
            f"{name:<28} n={c['n']:<4} false pass={c['false_pass']:<3} false fail={c['false_fail']:<3}"
            f" ({100 * c['false_fail'] / max(1, c['n']):.1f} %)  needs_review={c['needs_review']}"
        )
    print(
        f"{'all':<28} n={total['n']:<4} false pass={total['false_pass']:<3} false fail={total['false_fail']:<3}"
        f" ({100 * total['false_fail'] / max(1, total['n']):.1f} %)  needs_review={total['needs_review']}"
        f" ({100 * total['needs_review'] / max(1, total['n']):.1f} %)"
    )
    print("\nper style: n / false pass / false fail / needs_review")
    for style, c in sorted(styles.items(), key=lambda kv: -kv[1]["n"]):
        print(f"  {style:<20} {c['n']:>4} {c['false_pass']:>4} {c['false_fail']:>4} {c['needs_review']:>4}")


if __name__ == "__main__":
    main()
