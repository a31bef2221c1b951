"""A person's decisions on verdicts: what the rule leaves as `needs_review` (or a verdict someone disputes) decided
pass or fail, kept in the warehouse's `reviews` table keyed by the test's own content and the answer text, and reused
on every later run that produces the same answer to the same test, or another answer to it that makes the same claims
(courtesy, talk about the sources, markup and citation marks aside: `claims_key`). The `manual_corrections` view
gives the share of verdicts per run where a decision overruled the rule or the judge."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass

import duckdb

from ragpipe.core import RagpipeError
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import claims_of
from ragpipe.verdicts import Verdict
from ragpipe.warehouse import transaction

DECISIONS = ("pass", "fail")


class ReviewError(RagpipeError):
    """A review that cannot be recorded: an unknown test or decision, or no run to review yet."""


def answer_sha(text: str) -> str:
    """The key of an answer text (DuckDB's sha256() of the stored answer gives the same)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def claims_key(text: str) -> str | None:
    """The key of what an answer claims: its claims (ragpipe.reading.claims_of: markup and citation marks off,
    courtesy and talk about the sources left out, "Thanks for asking!", "Based on the documents, here is the
    answer"), lower-cased, whitespace collapsed, end punctuation off; None when it claims nothing. A short part
    counts too: "It is 1.0. Maybe." is not "It is 1.0."."""
    parts = [re.sub(r"\s+", " ", c.lower()).strip(" .!?;:,") for c in claims_of(text, shortest=1)]
    parts = [p for p in parts if p]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest() if parts else None


@dataclass(frozen=True)
class Review:
    question_id: str
    decision: str
    note: str | None
    rule_verdict: str


def reviews(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], Review]:
    """Every recorded decision, by (test_sha, answer_sha)."""
    rows = con.execute("SELECT test_sha, answer_sha, question_id, decision, note, rule_verdict FROM reviews").fetchall()
    return {(r[0], r[1]): Review(r[2], r[3], r[4], r[5]) for r in rows}


def by_claims(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple[str, Review]]:
    """A person's decisions by (test_sha, claims_key of the answer decided on), with that answer's sha. Claims that
    two decisions on one test settled differently are left out: which one holds is for a person."""
    rows = con.execute(
        "SELECT test_sha, answer_sha, question_id, decision, note, rule_verdict, answer FROM reviews "
        "WHERE same_claims_as IS NULL AND answer IS NOT NULL"
    ).fetchall()
    out: dict[tuple[str, str], tuple[str, Review]] = {}
    split = set()
    for test, sha, qid, decision, note, rule_verdict, answer in rows:
        key = claims_key(answer)
        if key is None:
            continue
        seen = out.get((test, key))
        if seen and seen[1].decision != decision:
            split.add((test, key))
        out.setdefault((test, key), (sha, Review(qid, decision, note, rule_verdict)))
    return {k: v for k, v in out.items() if k not in split}


def apply_reviews(
    con: duckdb.DuckDBPyConnection,
    verdicts: list[tuple[GoldenTest, Verdict]],
    answers: dict[str, Answer],
    sha_of: dict[str, str],
) -> tuple[list[tuple[GoldenTest, Verdict]], int]:
    """The verdicts with each recorded decision applied where the same test produced the same answer, or an answer
    that makes the same claims (a verdict of a test that did not run or whose answerer failed is never replaced);
    and how many were applied. A decision reused for the same claims is recorded for the new answer, with the rule's
    verdict on it and the answer decided on (`same_claims_as`), so the correction views read it like any other."""
    known, claimed = reviews(con), None
    out, applied, derived = [], 0, []
    for t, v in verdicts:
        a = answers.get(t.question_id)
        if not a or a.error or v.verdict in ("did_not_run", "error"):
            out.append((t, v))
            continue
        test, sha = sha_of[t.question_id], answer_sha(a.text)
        r, reason = known.get((test, sha)), "reviewed"
        if r is None:
            claimed = by_claims(con) if claimed is None else claimed
            key = claims_key(a.text)
            hit = claimed.get((test, key)) if key else None
            if hit:
                r, reason = hit[1], "reviewed (the same claims as an answer decided before)"
                note = f"same claims as answer {hit[0][:12]}" + (f": {r.note}" if r.note else "")
                derived.append([test, sha, t.question_id, r.decision, note, v.verdict, a.text, v.reason, hit[0]])
        if r is None:
            out.append((t, v))
            continue
        applied += 1
        note = f": {r.note}" if r.note else ""
        out.append((t, dataclasses.replace(v, verdict=r.decision, matched_by="review", reason=f"{reason}{note}")))
    if derived:
        with transaction(con):
            con.executemany(
                "INSERT OR REPLACE INTO reviews (test_sha, answer_sha, question_id, decision, note, rule_verdict, "
                "answer, decided_at, rule_reason, same_claims_as) VALUES (?, ?, ?, ?, ?, ?, ?, now(), ?, ?)",
                derived,
            )
    return out, applied


@dataclass(frozen=True)
class Pending:
    question_id: str
    kind: str
    verdict: str
    reason: str
    answer: str
    test_sha: str
    eval_run_id: str


def latest(con: duckdb.DuckDBPyConnection, only_unsure: bool = True) -> list[Pending]:
    """The latest judged run's verdicts that await a person (`needs_review`), or all of them."""
    where = "AND v.verdict = 'needs_review'" if only_unsure else ""
    rows = con.execute(
        "SELECT v.question_id, v.kind, v.verdict, v.reason, coalesce(a.answer, ''), v.test_sha, v.eval_run_id "
        "FROM latest_verdicts v LEFT JOIN answers a USING (eval_run_id, question_id) "
        f"WHERE true {where} ORDER BY v.question_id"
    ).fetchall()
    return [Pending(*r) for r in rows]


def decide_review(con: duckdb.DuckDBPyConnection, question_id: str, decision: str, note: str | None) -> Pending:
    """Record a person's decision on the latest run's verdict of `question_id` and apply it to that run at once;
    later runs that produce the same answer reuse it. Raises ReviewError for an unknown test or decision."""
    if decision not in DECISIONS:
        raise ReviewError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    rows = {p.question_id: p for p in latest(con, only_unsure=False)}
    if not rows:
        raise ReviewError("no judged evaluation run yet: run `ragpipe ci` first")
    p = rows.get(question_id)
    if p is None:
        raise ReviewError(f"no test {question_id!r} in the latest run; `ragpipe review` lists the open ones")
    if p.verdict in ("did_not_run", "error"):
        raise ReviewError(f"{question_id}: its verdict is {p.verdict}; there is no answer to review ({p.reason})")
    prior = con.execute(
        "SELECT rule_verdict, rule_reason FROM reviews WHERE test_sha = ? AND answer_sha = ?",
        [p.test_sha, answer_sha(p.answer)],
    ).fetchone()
    rule_verdict, rule_reason = prior if prior else (p.verdict, p.reason)  # a second decision keeps the rule's
    with transaction(con):
        con.execute(
            "INSERT OR REPLACE INTO reviews (test_sha, answer_sha, question_id, decision, note, rule_verdict, answer, "
            "decided_at, rule_reason) VALUES (?, ?, ?, ?, ?, ?, ?, now(), ?)",
            [p.test_sha, answer_sha(p.answer), question_id, decision, note, rule_verdict, p.answer, rule_reason],
        )
        con.execute(
            "UPDATE verdicts SET verdict = ?, matched_by = 'review', reason = ? "
            "WHERE eval_run_id = ? AND question_id = ?",
            [decision, "reviewed" + (f": {note}" if note else ""), p.eval_run_id, question_id],
        )
    return dataclasses.replace(p, verdict=decision)
