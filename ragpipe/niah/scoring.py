"""Scoring a structured answer: exact, per field, wrong values taken from distractors, evidence, reasoning."""

from __future__ import annotations

import json
import re
from typing import Any

from ragpipe.core import normalize_text
from ragpipe.niah.needles import Needle, Reasoning, Score, json_schema
from ragpipe.reading import answer_matches, is_refusal, numbers


def extract_json(text: str) -> Any:
    """The first JSON object in the text (models wrap JSON in prose or code fences); None when there is none."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text[m.start() :])
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def check_schema(obj: Any, schema: dict[str, Any]) -> bool:
    """A small JSON-schema check (object, required, additionalProperties false, string/integer/null types)."""
    if not isinstance(obj, dict):
        return False
    props = schema["properties"]
    if any(k not in obj for k in schema["required"]):
        return False
    if not schema.get("additionalProperties", True) and set(obj) - set(props):
        return False
    for k, v in obj.items():
        types = props[k]["type"]
        ok = (
            (v is None and "null" in types)
            or (isinstance(v, str) and "string" in types)
            or (isinstance(v, int) and not isinstance(v, bool) and "integer" in types)
            or (isinstance(v, str) and "integer" in types and re.fullmatch(r"\s*[\d,]+\s*", v) is not None)
        )
        if not ok:
            return False
    return True


def _same(got: Any, expected: str) -> bool:
    if got is None:
        return False
    g = str(got)
    if normalize_text(g) == normalize_text(expected):
        return True
    eg, ee = numbers(g), numbers(expected)
    return bool(ee) and len(eg) == 1 and abs(eg[0] - ee[0]) < 1e-9


def _states(text: str, value: str) -> bool:
    """Does the text state the value? ("Thursdays" states "Thursday".)"""
    if answer_matches(text, value).matched:
        return True
    return value.isalpha() and answer_matches(text, value + "s").matched


def wrong_values(needle: Needle, distractors: list[Needle]) -> list[tuple[str, str, str]]:
    """(name, field, value) of every near-miss value a subject could give instead of the needle's."""
    out = [(f"distractor {i + 1} ({d.key})", f, v) for i, d in enumerate(distractors) for f, v in d.fields.items()]
    out += [(f"{needle.key} {where}", f, v) for where, f, v in needle.wrong]
    return [(n, f, v) for n, f, v in out if v != needle.fields.get(f)]


def score_answer(
    answer: str,
    needle: Needle,
    distractors: list[Needle],
    refusal_phrases: tuple[str, ...],
    structured: bool = True,
    with_quote: bool = False,
) -> Score:
    """Score one answer: a schema-checked JSON object when the subject was asked for one, else free text.

    JSON: exact = every field equals the expected value (normalized; numbers numerically); field_score = the share of
    fields that state it. Text (answerers that cannot produce JSON, the extractive baseline): a field is right when the
    text states its value; exact needs every field and no near-miss value. A refusal scores 0 and is not a
    hallucination; anything else that is not exact is a hallucination, naming the near-miss value it gave.
    """
    expected = needle.fields
    wrong = wrong_values(needle, distractors)
    obj = extract_json(answer) if structured else None
    schema = json_schema(needle.type, with_quote=with_quote)
    if obj is not None and not with_quote and "quote" in obj:  # a quote nobody asked for does no harm
        obj = {k: v for k, v in obj.items() if k != "quote"}
    if obj is not None and check_schema(obj, schema):
        values = {f: obj.get(f) for f in expected}
        refused = all(
            v is None or (isinstance(v, str) and (not v.strip() or is_refusal(v, refusal_phrases)))
            for v in values.values()
        )
        right = {f: values[f] is not None and _states(str(values[f]), e) for f, e in expected.items()}
        exact = 1.0 if all(_same(values[f], e) for f, e in expected.items()) else 0.0
        hit = next((f"{n}: {f}={v}" for n, f, v in wrong if values.get(f) is not None and _same(values[f], v)), None)
        quote = obj.get("quote") if with_quote else None
        fmt, ok = "json", True
    else:
        values = {}
        refused = is_refusal(answer, refusal_phrases) or not answer.strip()
        right = {f: _states(answer, e) for f, e in expected.items()}
        hit = next((f"{n}: {f}={v}" for n, f, v in wrong if _states(answer, v)), None)
        exact = 1.0 if all(right.values()) and hit is None and not refused else 0.0
        quote = answer if with_quote else None
        fmt, ok = "text", not structured
    if refused:
        exact, field_score = 0.0, 0.0
        right = {f: False for f in expected}
        hit = None
    field_score = sum(right.values()) / len(right)
    return Score(
        fmt,
        ok,
        exact,
        round(field_score, 4),
        refused,
        (not refused) and exact < 1.0,
        hit,
        values,
        quote if isinstance(quote, str) else None,
    )


def evidence_contains(evidence: str, needle: Needle) -> float:
    """Share of the needle's parts present in the evidence (retrieved chunks, or the cited text).

    A part is present when its own text is there (normalized), or, for a cited paraphrase, when every value that part
    carries (key and field values) is stated in the evidence.
    """
    ev = normalize_text(evidence)
    found = 0
    for part in needle.parts:
        if normalize_text(part) in ev:
            found += 1
            continue
        lines = [ln for ln in part.split("\n") if ln.strip()]
        if needle.type == "table_cell":  # a cited table row: the row with the asked values
            values = list(needle.fields.values())
            if any(
                all(normalize_text(v) in normalize_text(ln) for v in values) and normalize_text(ln) in ev
                for ln in lines
            ):
                found += 1
            elif all(_states(evidence, v) for v in values) and needle.key.lower() in evidence.lower():
                found += 1
            continue
        carried = [v for v in [needle.key, *needle.fields.values()] if normalize_text(v) in normalize_text(part)]
        if carried and all(normalize_text(v) in ev for v in carried):
            found += 1
    return found / len(needle.parts)


def score_reasoning(answer: str, task: Reasoning) -> float:
    obj = extract_json(answer)
    got = obj.get("answer") if isinstance(obj, dict) else answer
    if not isinstance(got, str):
        return 0.0
    g = normalize_text(got)
    if task.expected in ("yes", "no"):
        words = set(g.split())
        return 1.0 if task.expected in words and ({"yes", "no"} - {task.expected}) & words == set() else 0.0
    return 1.0 if normalize_text(task.expected) in g else 0.0
