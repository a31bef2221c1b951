"""New tests appended to a golden set file: the next free ids, one line per test in the file's own field order, and
nothing else in the file touched (the change is a reviewable diff)."""

from __future__ import annotations

import json
import re
from typing import Any

from ragpipe.golden.file import GoldenFile, GoldenProblem, GoldenSetError

FIELDS = [
    "question_id",
    "kind",
    "question",
    "expected_answer",
    "trap_quote",
    "trap_source",
    "trap_value",
    "evidence_quote",
    "evidence_source",
    "trap_chunk_id",
    "evidence_chunk_id",
    "embedder_tag",
    "last_validated",
]
_PREFIX = {"negative": "neg", "positive": "pos"}


def next_ids(golden: GoldenFile, kind: str, n: int) -> list[str]:
    """neg_17, neg_18, ... after the highest neg_NN of the file (its width kept; two digits in a new file)."""
    prefix = _PREFIX[kind]
    numbers = [re.fullmatch(rf"{prefix}_(\d+)", t.question_id) for t in golden.tests]
    found = [m for m in numbers if m]
    width = max((len(m.group(1)) for m in found), default=2)
    start = max((int(m.group(1)) for m in found), default=0) + 1
    return [f"{prefix}_{i:0{width}d}" for i in range(start, start + n)]


def golden_object(
    question_id: str,
    kind: str,
    question: str,
    quote: str,
    source: str,
    value: str,
    chunk_id: str,
    embedder_tag: str,
    today: str,
) -> dict[str, Any]:
    """A golden test as the file holds it: a negative's quote is its trap, a positive's its evidence."""
    negative = kind == "negative"
    return {
        "question_id": question_id,
        "kind": kind,
        "question": question,
        "expected_answer": "not in documents" if negative else value,
        "trap_quote": quote if negative else None,
        "trap_source": source if negative else None,
        "trap_value": value if negative else None,
        "evidence_quote": None if negative else quote,
        "evidence_source": None if negative else source,
        "trap_chunk_id": chunk_id if negative else None,
        "evidence_chunk_id": None if negative else chunk_id,
        "embedder_tag": embedder_tag,
        "last_validated": today,
    }


def appended(golden: GoldenFile, objects: list[dict[str, Any]]) -> str:
    """The file's text with the tests added at its end, one JSON line each (JSON Lines files only)."""
    if golden.format != "jsonl":
        message = "accepted tests are appended to a JSON Lines file; add them to this JSON file by hand"
        raise GoldenSetError([GoldenProblem(str(golden.path), 1, None, None, message)])
    text = golden.text if not golden.text or golden.text.endswith("\n") else golden.text + "\n"
    order = FIELDS + sorted({k for o in objects for k in o} - set(FIELDS))
    return text + "".join(json.dumps({k: o[k] for k in order if k in o}, ensure_ascii=False) + "\n" for o in objects)
