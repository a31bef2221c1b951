"""The verdict rule on answers it was never shaped on: labelled answers written by people who saw only the golden
tests and the retrieved passages (never the rule, its code or docs/verdicts.md), scored once.

    .venv/bin/python bench/first_contact.py set1 [--show]       # the set the rule was improved on
    .venv/bin/python bench/first_contact.py set2 [--show]       # written while the rule was unknown, scored unfitted
    .venv/bin/python bench/first_contact.py set1 --peers        # the same answers under plain matchers

bench/data/first_contact/: `squad_contexts.jsonl` (the passages each SQuAD 2.0 test of ../shared/data/squad2_dev
showed its answerer), `realdocs2_golden.jsonl` and `realdocs3_golden.jsonl` (30 tests each over
../shared/data/realdocs, each with its passages; the second over other documents, for set8 on), and
one folder per set of answers (`question_id`, `style`, `answer`, `label`, `note`, `writer`; ambiguous ones, by flag or label, are left
out). The anchor counts as retrieved and the passages are the retrieved texts the rule grounds answers in.

A false pass is an answer labelled fail that the rule passes; a false fail one labelled pass that it fails;
`needs_review` (the rule is unsure, and never passes) is counted apart from both. The library comes from the first
`ragpipe` on sys.path, so `PYTHONPATH=/tmp/old` measures another checkout on the same answers.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))

import ragpipe  # noqa: E402
from ragpipe.golden import GoldenTest, load_golden  # noqa: E402

if (Path(ragpipe.__file__).parent / "verdict.py").exists():  # a checkout from before the stage packages
    from ragpipe.answer import Answer  # type: ignore[no-redef]
    from ragpipe.verdict import decide  # type: ignore[no-redef]
else:
    from ragpipe.rag import Answer
    from ragpipe.verdicts import decide

DATA = HERE / "bench" / "data" / "first_contact"
SQUAD = HERE.parent / "shared" / "data" / "squad2_dev" / "golden_squad.json"


def golden() -> tuple[dict[str, GoldenTest], dict[str, list[str]]]:
    """Every test the answers may name, and the passages its answerer saw."""
    tests = {t.question_id: t for t in load_golden(SQUAD).tests}
    contexts = {}
    for line in (DATA / "squad_contexts.jsonl").read_text().splitlines():
        row = json.loads(line)
        contexts[row["question_id"]] = row["context"]
    for realdocs in sorted(DATA.glob("realdocs*_golden.jsonl")):  # realdocs2 (sets 1-7), realdocs3 (set8 on)
        tests.update({t.question_id: t for t in load_golden(realdocs).tests})
        for line in realdocs.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                contexts[row["question_id"]] = row["context"]
    return tests, contexts


def rule_verdict(test: GoldenTest, answer: str, context: list[str]) -> tuple[str, str]:
    """(pass | fail | needs_review, reason) under this checkout's rule, the anchor retrieved."""
    kwargs = {"contexts": tuple(context)} if "contexts" in inspect.signature(decide).parameters else {}
    v = decide(test, ("anchor",), "unchanged", ["anchor"], Answer(answer, 0, 0, 0), (), "tag", **kwargs)
    verdict = v.verdict
    if verdict == "fail" and getattr(v, "needs_judge", False) and "contexts" in kwargs:
        verdict = "needs_review"
    return verdict, v.reason


# --- what users would use instead --------------------------------------------------------------------------------
PROMPTFOO = Path("/tmp/pf/node_modules/promptfoo")  # `npm install promptfoo@0.118` there (not a dependency)
_PF_SCRIPT = r"""
const util = require(process.argv[1] + '/dist/src/redteam/util.js');
const rows = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(rows.map((r) => util.isBasicRefusal(r))));
"""


def promptfoo_refusals(answers: list[str]) -> list[bool]:
    """promptfoo's own `is-refusal` check (its isBasicRefusal), run by node on every answer at once."""
    import subprocess

    out = subprocess.run(
        ["node", "-e", _PF_SCRIPT, str(PROMPTFOO)],
        input=json.dumps(answers),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def promptfoo_verdict(test: GoldenTest, answer: str, refusal: bool) -> str:
    """Negatives under `is-refusal`, positives under `icontains` (the expected text, case-insensitively)."""
    if test.kind == "negative":
        return "pass" if refusal else "fail"
    return "pass" if test.expected_answer.strip().lower() in answer.lower() else "fail"


def contains_verdict(test: GoldenTest, answer: str) -> str:
    """The plain matcher: a negative passes when the answer does not contain the trap's value; a positive when it
    contains the expected answer (case-insensitive)."""
    low = answer.lower()
    if test.kind == "negative":
        return "fail" if test.trap_value and test.trap_value.lower() in low else "pass"
    return "pass" if test.expected_answer.strip().lower() in low else "fail"


def rows_of(name: str) -> list[dict]:
    rows = []
    for path in sorted((DATA / name).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                rows.append({**json.loads(line), "_file": path.name})
    return rows


def tally(rows: list[dict], judge, show: bool) -> Counter:
    c: Counter = Counter()
    for row in rows:
        verdict, reason = judge(row)
        c["n"] += 1
        if verdict == "needs_review":
            outcome = "needs_review"  # counted once, below
        elif verdict == row["label"]:
            outcome = "ok"
        else:
            outcome = "false_pass" if verdict == "pass" else "false_fail"
        c[outcome] += 1
        if show and outcome != "ok":
            print(f"  {outcome:<12} {row['question_id']:<12} [{row['style']}] label={row['label']}")
            print(f"      answer: {row['answer'][:300]!r}")
            print(f"      -> {reason[:200]}")
    return c


def line(name: str, c: Counter) -> str:
    n = max(1, c["n"])
    return (
        f"{name:<34} n={c['n']:<4} false pass={c['false_pass']:<3} ({100 * c['false_pass'] / n:.1f} %)  "
        f"false fail={c['false_fail']:<3} ({100 * c['false_fail'] / n:.1f} %)  "
        f"needs_review={c['needs_review']:<3} ({100 * c['needs_review'] / n:.1f} %)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("set", help="a folder under bench/data/first_contact (set1, set2)")
    ap.add_argument("--show", action="store_true", help="print every disagreement with its reason")
    ap.add_argument("--peers", action="store_true", help="also score the answers with promptfoo's and plain matchers")
    args = ap.parse_args()
    tests, contexts = golden()
    rows = [r for r in rows_of(args.set) if not r.get("ambiguous") and r.get("label") != "ambiguous"]
    print(f"rule from {Path(ragpipe.__file__).parent}; {args.set}: {len(rows)} labelled answers")
    total: Counter = Counter()
    for name in sorted({r["_file"] for r in rows}):
        part = [r for r in rows if r["_file"] == name]
        c = tally(
            part,
            lambda r: rule_verdict(tests[r["question_id"]], r["answer"], contexts.get(r["question_id"], [])),
            args.show,
        )
        total.update(c)
        print(line(name, c))
    print(line("all (ragpipe)", total))
    styles: dict[str, Counter] = {}
    for r in rows:
        verdict, _ = rule_verdict(tests[r["question_id"]], r["answer"], contexts.get(r["question_id"], []))
        s = styles.setdefault(r["style"], Counter())
        s["n"] += 1
        s[verdict if verdict == "needs_review" else ("ok" if verdict == r["label"] else f"false_{verdict}")] += 1
    print(f"{len(styles)} styles; n / false pass / false fail / needs_review:")
    for style, s in sorted(styles.items(), key=lambda kv: -kv[1]["n"]):
        print(f"  {style:<34} {s['n']:>4} {s['false_pass']:>4} {s['false_fail']:>4} {s['needs_review']:>4}")
    if args.peers:
        c = tally(rows, lambda r: (contains_verdict(tests[r["question_id"]], r["answer"]), ""), False)
        print(line("contains (trap value / expected)", c))
        if PROMPTFOO.exists():
            refusal = dict(zip((id(r) for r in rows), promptfoo_refusals([r["answer"] for r in rows])))
            c = tally(
                rows, lambda r: (promptfoo_verdict(tests[r["question_id"]], r["answer"], refusal[id(r)]), ""), False
            )
            print(line("promptfoo is-refusal / icontains", c))
        else:
            print(f"promptfoo: not installed at {PROMPTFOO} (npm install promptfoo@0.118 there)")


if __name__ == "__main__":
    main()
