"""Score answers produced elsewhere (another harness, a notebook, production logs) with ragpipe's verdict rule.

Each line of the answers file: `question_id`, `answer`, and what the system retrieved, as `retrieved_ids` (chunk
ids, compared with the test's trap/evidence chunk id) or `retrieved_texts` (the texts it put in its context: the
anchor counts as retrieved when its quote, whitespace collapsed, is inside one of them). A line with neither did not
run ("no retrieval recorded"), never passes; a test without a line did not run either.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.golden import (
    GoldenFile,
    GoldenProblem,
    GoldenSetError,
    GoldenTest,
    json_objects,
    plain_form,
    quote_forms,
    user_text,
)
from ragpipe.rag import Answer
from ragpipe.settings import Settings
from ragpipe.verdicts.rule import Verdict, decide

_QUOTE_ID = "quote"  # the anchor's stand-in id when retrieval is given as texts


@dataclass(frozen=True)
class AnswerLine:
    line: int
    question_id: str
    answer: str
    retrieved_ids: list[str] | None
    retrieved_texts: list[str] | None


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TypeError


def load_answers(path: Path, golden: GoldenFile) -> list[AnswerLine]:
    """Every line of the answers file; raises GoldenSetError listing every problem with file, line and field."""
    problems: list[GoldenProblem] = []
    name = str(path)
    known = {t.question_id for t in golden.tests}
    out: list[AnswerLine] = []
    seen: dict[str, int] = {}
    for line, obj in json_objects(user_text(path, "answers file"), name, problems):

        def bad(fld: str | None, msg: str, qid: str | None = None, line: int = line) -> None:
            problems.append(GoldenProblem(name, line, qid, fld, msg))

        if not isinstance(obj, dict):
            bad(None, "expected a JSON object per line")
            continue
        qid, answer = obj.get("question_id"), obj.get("answer")
        if not isinstance(qid, str) or not qid:
            bad("question_id", "missing or not a string")
            continue
        if qid not in known:
            bad("question_id", f"no test {qid!r} in {golden.path}; check the id or pass the right --golden", qid)
            continue
        if qid in seen:
            bad("question_id", f"duplicate: already answered on line {seen[qid]}", qid)
            continue
        seen[qid] = line
        if not isinstance(answer, str):
            bad("answer", 'missing or not a string (an answerer error is an empty string plus "error")', qid)
            continue
        try:
            ids, texts = _strings(obj.get("retrieved_ids")), _strings(obj.get("retrieved_texts"))
        except TypeError:
            bad("retrieved_ids" if "retrieved_ids" in obj else "retrieved_texts", "must be a list of strings", qid)
            continue
        out.append(AnswerLine(line, qid, answer, ids, texts))
    if problems:
        raise GoldenSetError(problems)
    return out


def score_one(test: GoldenTest, line: AnswerLine | None, settings: Settings) -> Verdict:
    anchor = "trap" if test.kind == "negative" else "evidence"
    answer = Answer(line.answer if line else "", 0.0, 0, 0)
    tag = test.embedder_tag or ""
    phrases = settings.answerer.refusal_phrases
    if line is None:
        return dataclasses.replace(
            decide(test, (), "", [], answer, phrases, tag),
            verdict="did_not_run",
            reason="no answer line for this test in the answers file",
        )
    texts = tuple(line.retrieved_texts or ())  # what the answer is grounded in, when the line gives it
    if line.retrieved_ids is not None:
        return decide(test, tuple(test.anchor_ids), "", line.retrieved_ids, answer, phrases, tag, contexts=texts)
    if line.retrieved_texts is None:
        return dataclasses.replace(
            decide(test, (), "", [], answer, phrases, tag),
            verdict="did_not_run",
            reason="no retrieval recorded: give retrieved_ids or retrieved_texts",
        )
    if not test.quote:
        return dataclasses.replace(
            decide(test, (), "", [], answer, phrases, tag),
            verdict="did_not_run",
            reason=f"no {anchor} quote to look for in retrieved_texts: add {anchor}_quote "
            f"to the test or give retrieved_ids",
        )
    forms = quote_forms(test.quote)
    found = any(f in plain_form(t) for t in line.retrieved_texts for f in forms)
    v = decide(test, (_QUOTE_ID,), "", [_QUOTE_ID] if found else [], answer, phrases, tag, contexts=texts)
    if not found:
        v = dataclasses.replace(
            v, reason=f"{anchor} quote not in any of the {len(line.retrieved_texts)} retrieved texts"
        )
    return v


def score(golden: GoldenFile, lines: list[AnswerLine], settings: Settings) -> list[Verdict]:
    """One verdict per test of the golden set, in its order; the judge ([judge]) rules on what the rules cannot."""
    by_id = {a.question_id: a for a in lines}
    verdicts = [(t, score_one(t, by_id.get(t.question_id), settings)) for t in golden.tests]
    if settings.judge.enabled:
        from ragpipe.verdicts import judge

        ruled = judge.settle(settings.judge, verdicts, {a.question_id: a.answer for a in lines})
        verdicts = [(t, ruled[t.question_id][0] if t.question_id in ruled else v) for t, v in verdicts]
    return [v for _, v in verdicts]
