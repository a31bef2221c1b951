"""Metamorphic tests of what a value is said of, over the passages real answerers were shown: every right answer of
the first-contact sets the rule has been read beside (set1-set18), with a sentence of its own passages appended,
keeps its pass; with the same sentence's number swapped for another number the passages give elsewhere, it never
passes. On the sets written after them (set19-set22, each pair scored once at its first contact) both properties are
known to fail: set19-20 for 3 answers each, set21-22 for 1 and 2; a strict xfail below says so until the rule holds
there too."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from conftest import ROOT

from ragpipe.golden import GoldenTest, load_golden
from ragpipe.rag import Answer
from ragpipe.reading import digits, numbers
from ragpipe.verdicts import decide

DATA = ROOT / "bench" / "data" / "first_contact"
SQUAD = ROOT.parent / "shared" / "data" / "squad2_dev" / "golden_squad.json"
_NUMBER = re.compile(r"(?<![\d.,])(\d{2,4})(?![\d.,%\w])")  # a whole number of 2-4 digits, no ordinal or percent
_PLAIN = re.compile(r"[;:|`=()\[\]\u2013\u2014]|\bbut\b|\bhowever\b| - ")  # one clause, no code or table


def _golden() -> tuple[dict[str, GoldenTest], dict[str, list[str]]]:
    tests = {t.question_id: t for t in load_golden(SQUAD).tests}
    rows = [json.loads(x) for x in (DATA / "squad_contexts.jsonl").read_text().splitlines()]
    for path in sorted(DATA.glob("realdocs*_golden.jsonl")):
        tests.update({t.question_id: t for t in load_golden(path).tests})
        rows += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return tests, {r["question_id"]: r["context"] for r in rows}


TESTS, CONTEXTS = _golden()


def _verdict(test: GoldenTest, answer: str) -> tuple[str, str]:
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "t", contexts=CONTEXTS[test.question_id])
    return v.verdict, v.reason


def _year(n: int) -> bool:
    return 1000 <= n <= 2100


READ = {f"set{i}" for i in range(1, 19)}  # the sets the rule has been read beside
FIRST_CONTACT = {"set19", "set20", "set21", "set22"}  # written after; their misses are open


def _cases(sets: set[str] = READ) -> Iterator[tuple[GoldenTest, str, str, str]]:
    """(test, right answer, a sentence of its passages, that sentence with its one number swapped)."""
    for path in sorted(p for p in DATA.glob("set*/*.jsonl") if p.parent.name in sets):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            test = TESTS.get(row["question_id"])
            if not test or test.kind != "positive" or row["label"] != "pass" or row.get("ambiguous"):
                continue
            sentences = [s for c in CONTEXTS[test.question_id] for s in re.split(r"(?<=[.!?])\s+", c)]
            told = set(numbers(digits(f"{row['answer']} {test.question} {test.expected_answer}")))
            pool = [int(x) for x in _NUMBER.findall(" ".join(sentences))]
            for sentence in sentences:
                found = _NUMBER.findall(sentence)
                if _PLAIN.search(sentence) or len(sentence) > 200 or len(found) != 1 or int(found[0]) in told:
                    continue
                n = int(found[0])
                other = [  # a number the sentence does not already state ("from April 2006 until April 2006" is no swap)
                    m for m in pool if m != n and m not in told and _year(m) == _year(n) and str(m) not in sentence
                ]
                if other:
                    yield test, row["answer"].rstrip(), sentence, sentence.replace(found[0], str(other[0]), 1)
                    break


def _passing(sets: set[str]) -> list[tuple[GoldenTest, str, str, str]]:
    """The cases whose answer passes as written and states the expected value itself (not only a quantity inside a
    long span: "500 men." passes only as the one number it gives)."""
    out = []
    for test, answer, sentence, swapped in _cases(sets):
        verdict, reason = _verdict(test, answer)
        if verdict == "pass" and not reason.endswith("(core)"):
            out.append((test, answer, sentence, swapped))
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[GoldenTest, str, str, str]]:
    out = _passing(READ)
    assert len(out) >= 50, len(out)  # the sets hold enough right answers beside passages with numbers
    return out


def test_a_sentence_of_the_passages_appended_keeps_the_pass(cases: list) -> None:
    moved = [(t.question_id, s) for t, a, s, _ in cases if _verdict(t, f"{a}\n\n{s}")[0] != "pass"]
    assert moved == []


def test_the_same_sentence_with_its_number_swapped_never_passes(cases: list) -> None:
    passed = [(t.question_id, w) for t, a, _, w in cases if _verdict(t, f"{a}\n\n{w}")[0] == "pass"]
    assert passed == []


@pytest.mark.xfail(
    strict=True,
    reason="set19-22 at first contact: 4 right answers lose their pass with a sentence of "
    "their passages appended (rd12_pos_15, rd15_pos_13), 5 pass with its number swapped (rd13_pos_06, rd15_pos_13)",
)
def test_both_properties_on_the_sets_written_after_the_rule() -> None:
    cases = _passing(FIRST_CONTACT)
    moved = [t.question_id for t, a, s, _ in cases if _verdict(t, f"{a}\n\n{s}")[0] != "pass"]
    passed = [t.question_id for t, a, _, w in cases if _verdict(t, f"{a}\n\n{w}")[0] == "pass"]
    assert moved == [] and passed == []
