"""Metamorphic tests of the verdict rule: from every labelled answer, variants whose label is known by construction.

Wrapping an answer (a chain-of-thought preamble, JSON, a table, bullets, a cut-off last sentence) keeps its label.
Appending content from outside the retrieved text to a refusal makes it fail; prefixing a negated trap keeps a refusal
passing; writing the expected quantity in another unit of its dimension keeps the label; moving the expected value
into a contrast about another subject or into a range never passes. The retrieved text of each test is its anchor
quote (what the answerer was shown), so grounding is checked against it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

from ragpipe.golden import GoldenTest, load_golden
from ragpipe.rag import Answer
from ragpipe.reading import quantities
from ragpipe.verdicts import decide

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "answers"
FIRST_CONTACT = ROOT / "bench" / "data" / "first_contact"
SQUAD = ROOT.parent / "shared" / "data" / "squad2_dev" / "golden_squad.json"


def _tests() -> dict[str, GoldenTest]:
    out: dict[str, GoldenTest] = {}
    for path in (EXAMPLES / "golden.jsonl", FIXTURES / "realdocs_golden.jsonl"):
        out.update({t.question_id: t for t in load_golden(path).tests})
    return out


TESTS = _tests()
SQUAD_TESTS = {t.question_id: t for t in load_golden(SQUAD).tests}


def _rows() -> list[tuple[GoldenTest, dict]]:
    out = []
    for name in ("bundled_labelled.jsonl", "realdocs_labelled.jsonl", "heldout_labelled.jsonl"):
        for line in (FIXTURES / name).read_text().splitlines():
            row = json.loads(line)
            if line.strip() and not row.get("ambiguous"):
                out.append((TESTS[row["question_id"]], row))
    for path in [FIXTURES / "squad_unseen_labelled.jsonl", *sorted((FIRST_CONTACT / "set1").glob("*.jsonl"))]:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if line.strip() and not row.get("ambiguous") and row["question_id"] in SQUAD_TESTS:
                out.append((SQUAD_TESTS[row["question_id"]], row))
    return out


ROWS = _rows()


def verdict(test: GoldenTest, answer: str) -> str:
    context = (test.quote or "",)
    return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=context).verdict


@pytest.fixture(scope="module")
def base() -> dict[int, str]:
    """The rule's verdict on each unchanged answer (with its anchor quote as the retrieved text)."""
    return {i: verdict(t, r["answer"]) for i, (t, r) in enumerate(ROWS)}


# --- label-preserving wrappers -------------------------------------------------------------------------------------


def preamble(a: str) -> str:
    return "Let me read the retrieved passages carefully before answering.\n\n" + a


def as_json(a: str) -> str:
    return json.dumps({"answer": a, "confidence": 0.8}, ensure_ascii=False)


def as_table(a: str) -> str:
    return "| field | value |\n|---|---|\n| answer | " + " ".join(a.split()).replace("|", "/") + " |"


def as_bullets(a: str) -> str:
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", a.strip()) if s]
    return "\n".join(f"- {s}" for s in sentences)


def cut_off(a: str) -> str:
    return a.rstrip() + " The passages also"


WRAPPERS: dict[str, Callable[[str], str]] = {
    "preamble": preamble,
    "json": as_json,
    "table": as_table,
    "bullets": as_bullets,
    "cut_off": cut_off,
}


@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_wrapping_an_answer_keeps_its_verdict(wrap: str, base: dict[int, str]) -> None:
    """Every answer the rule reads right keeps its verdict once wrapped; none that should fail ever passes."""
    changed, false_passes = [], []
    for i, (test, row) in enumerate(ROWS):
        got = verdict(test, WRAPPERS[wrap](row["answer"]))
        if got == "pass" and row["label"] == "fail":
            false_passes.append((row["question_id"], row["answer"][:80]))
        if base[i] == row["label"] and got != base[i]:
            changed.append((row["question_id"], base[i], got, row["answer"][:80]))
    assert false_passes == []
    assert len(changed) <= 0.01 * len(ROWS), changed


# --- label-changing edits ------------------------------------------------------------------------------------------


def _passing_refusals() -> Iterator[tuple[GoldenTest, dict]]:
    for test, row in ROWS:
        if test.kind == "negative" and row["label"] == "pass":
            yield test, row


OUTSIDE = (
    "From what I remember, though, it was {n}.",
    "Generally, it is {n} days.",
    "It was {n}.",
    "That said, the usual figure is {n} percent.",
)


@pytest.mark.parametrize("template", OUTSIDE)
def test_a_refusal_followed_by_a_value_from_outside_the_context_never_passes(template: str) -> None:
    rows = list(_passing_refusals())
    assert len(rows) >= 150
    passed = []
    for test, row in rows:
        n = next(x for x in range(1877, 3000, 7) if str(x) not in (test.quote or "") + test.question)
        sep = "\n\n" if "\n" in row["answer"].strip() else " "  # a new paragraph after a table or a list
        answer = row["answer"].rstrip()
        answer += "" if answer[-1:] in ".!?|`" else "."
        got = verdict(test, answer + sep + template.format(n=n))
        if got == "pass":
            passed.append((row["question_id"], row["answer"][:80]))
    assert passed == []


def test_a_negated_trap_before_a_refusal_keeps_it_passing(base: dict[int, str]) -> None:
    changed = []
    for i, (test, row) in enumerate(ROWS):
        if test.kind != "negative" or row["label"] != "pass" or base[i] != "pass" or not test.trap_value:
            continue
        got = verdict(test, f"Not {test.trap_value}: that is said of something else. {row['answer']}")
        if got != "pass":
            changed.append((row["question_id"], got, row["answer"][:80]))
    assert len(changed) <= 0.02 * len(ROWS), changed


# another unit of each dimension, with its factor from the canonical unit, used while the figure stays readable
_OTHER_UNIT = {
    "s": [("ms", 1e3), ("minutes", 1 / 60), ("hours", 1 / 3600)],
    "byte": [("bits", 8.0)],
    "m": [("cm", 100.0)],
}


def _in_another_unit(expected: str) -> str | None:
    """The expected quantity written in another unit of its dimension ("5 seconds" -> "5000 ms")."""
    q = [(raw, value, unit) for raw, value, unit in quantities(expected) if unit in _OTHER_UNIT]
    if len(q) != 1:
        return None
    _, value, unit = q[0]
    for name, factor in _OTHER_UNIT[unit]:
        x = value * factor
        if x == int(x) and 1 <= x < 1e6:
            return f"{int(x):,} {name}"
    return None


def test_the_expected_quantity_in_another_unit_keeps_the_verdict(base: dict[int, str]) -> None:
    tried, changed = 0, []
    for i, (test, row) in enumerate(ROWS):
        other = _in_another_unit(test.expected_answer) if test.kind == "positive" else None
        if not other or test.expected_answer not in row["answer"] or base[i] != row["label"]:
            continue
        tried += 1
        got = verdict(test, row["answer"].replace(test.expected_answer, other))
        if got != base[i]:
            changed.append((row["question_id"], base[i], got, other))
    assert tried >= 5
    assert changed == []


CONTRASTS = (
    "Unlike the older release, which used {e}, this one uses something else.",
    "It is not {e}.",
    "Anywhere from 1 to {e}.",
    "Either {e} or the other option the passage mentions.",
)


@pytest.mark.parametrize("template", CONTRASTS)
def test_the_expected_value_said_of_something_else_never_passes(template: str) -> None:
    tried, passed = 0, []
    for test in {t.question_id: t for t, _ in ROWS if t.kind == "positive"}.values():
        if "range" in template or "from 1 to" in template:
            if not re.fullmatch(r"[\d,.]+(?:\s+\w+)?", test.expected_answer.strip()):
                continue
        tried += 1
        if verdict(test, template.format(e=test.expected_answer)) == "pass":
            passed.append(test.question_id)
    assert tried >= 5
    assert passed == []
