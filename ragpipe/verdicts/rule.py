"""The verdict rule. A test whose anchor chunk was not retrieved did not run, whatever the model said.

anchor (trap for negatives, evidence for positives) not fully retrieved -> did_not_run (with the reason)
answerer error                                                          -> error
negative: refuses, and every value it states is cited as what the source says  -> pass (refusal, refusal_citing_trap)
          states the trap's value as the answer, plainly or hedged        -> fail (took the trap)
positive: states the expected answer, not as a guess                      -> pass
otherwise                                                                 -> fail
Separately, a test validated under another embedder is flagged unverified.

An answer is read clause by clause (ragpipe.refusal): "The docs don't say; they only give 1.0 for the removal"
refuses and cites the trap; "The docs don't say, but it is probably 1.7" refuses and then answers anyway. A clause
that states a value plainly beside a refusal is the one case the rules cannot settle: it fails, or, with a `[judge]`
configured, goes to the judge (`needs_judge`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragpipe.core import VERDICTS  # noqa: F401  (re-exported)
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import Reading, answer_matches, content_words, digits, numbers, read_answer

IMPL_VERSION = "2"  # 2: refusal grammar, trap cited vs taken, number words and units (ragpipe.refusal, ragpipe.match)


@dataclass(frozen=True)
class Verdict:
    question_id: str
    kind: str
    verdict: str
    reason: str
    anchor_ids: tuple[str, ...]
    anchor_retrieved: bool
    refused: bool
    took_trap: bool
    matched_by: str
    unverified: bool
    needs_judge: bool = False  # the rules could not settle it: a refusal beside a plainly stated value


def took_trap(answer: str, trap_value: str | None) -> bool:
    """Did the answer state the trap's tempting value ("$51.2 million", also as "51.2M")?"""
    if not trap_value:
        return False
    # Word-bounded (answer_matches' contains): a bare substring test would read "15%" as stating a "5%" trap.
    return answer_matches(answer, trap_value).matched


def _new_numbers(clause: str, question: str) -> list[float]:
    """Numbers a clause states that the question did not already hold ("2022" in "revenue for 2022?" is not one)."""
    asked = numbers(digits(question))
    return [x for x in numbers(digits(clause)) if not any(abs(x - y) < 1e-9 for y in asked)]


def _states(r: Reading, value: str | None, question: str) -> bool:
    """Does the clause state the value? Eagerly: 40 % of a long value's words are enough to count as stating it."""
    return bool(value) and answer_matches(r.clause, value or "", question, share=0.4).matched


# Words about the source and the answering, not about the subject: they never make a clause "about something else".
_META = content_words(
    "documents document docs context text passage passages source sources excerpt excerpts based "
    "according mention mentioned mentions state stated states say says said provided information "
    "given answer question specifically explicitly directly"
)


def _qualified(clause: str, question: str, value: str | None) -> bool:
    """Does the clause tie its value to something the question did not ask about ("$48.7 million for Q3 2023" when
    asked about 2022, "the HR-400 carries 45 kg" when asked about the HR-600)? Then it reports what the source
    says about something else rather than answering: a token with a digit, or two content words, that neither the
    question nor the value holds (words about the source do not count)."""
    new = content_words(clause) - content_words(question) - content_words(value or "") - _META
    return any(any(ch.isdigit() for ch in w) for w in new) or len(new) >= 2


def _read_negative(readings: list[Reading], question: str, trap_value: str | None) -> tuple[str, str, bool]:
    """(outcome, clause, unsure) for a negative test's answer. Outcomes: refusal, refusal_citing_trap, took_trap,
    hedged_trap, hedged, answered. `unsure`: the rules cannot settle it (a judge may)."""
    refused = any(r.refusal for r in readings)
    trap_cited, unclear = False, None
    for r in readings:
        trap = _states(r, trap_value, question)
        if r.refusal:
            trap_cited = trap_cited or trap
            continue
        if refused and r.answers_anyway:
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        if not (trap or _new_numbers(r.clause, question)):
            continue  # states no value
        qualified = _qualified(r.clause, question, trap_value if trap else None)
        if (
            ((r.hedge or r.approx) and not r.citation)
            or (refused and r.infers and not r.citation)
            or (refused and r.based_on and not (r.citation or qualified))
        ):
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        if not refused:
            return ("took_trap" if trap else "answered"), r.clause, False
        if r.citation or qualified:
            trap_cited = trap_cited or trap
            continue
        unclear = unclear or (r.clause, trap)
    if not refused:
        return "answered", "", True  # no refusal the grammar knows, and no value either
    if unclear:
        return ("took_trap" if unclear[1] else "answered"), unclear[0], True
    return ("refusal_citing_trap" if trap_cited else "refusal"), "", False


_CORRECTS = re.compile(r"\b(?:actually|in\s+fact|really|instead|rather|correct|current|outdated|older|superseded)\b")
_TURN = re.compile(r"^(?:but|however|yet|though|although|so|actually|in\s+fact|instead|still|nevertheless)\b")


def _disowned(readings: list[Reading], stating: list[int]) -> bool:
    """The expected value appears only as what the documents say, and a later clause turns away from it ("The docs
    say three days, but that is from an older policy, so it is two days")."""
    if not all(readings[i].citation for i in stating):
        return False
    return any(
        _TURN.search(r.clause) and (_CORRECTS.search(r.clause) or numbers(digits(r.clause)))
        for r in readings[max(stating) + 1 :]
    )


def _shape(token: str) -> str:
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "d", token.lower()))


def _rival_first(answer: str, expected: str, question: str) -> str | None:
    """For a choice the question offers ("the HR-200 or the HR-400?"): another option of the same form as the
    expected one, named in the answer before it ("The HR-200 is the heavier arm, while the HR-400 is lighter")."""
    e = expected.strip()
    if " " in e or e.lower() not in question.lower():
        return None
    options = {t for t in re.findall(r"[\w.\-]+", question) if t.lower() != e.lower() and _shape(t) == _shape(e)}
    text = answer.lower()
    at = text.find(e.lower())
    firsts = [(text.find(o.lower()), o) for o in options if 0 <= text.find(o.lower()) < at]
    return min(firsts)[1] if firsts else None


def decide(
    test: GoldenTest,
    anchor_ids: tuple[str, ...],
    stamp_status: str,
    retrieved: list[str],
    answer: Answer,
    refusal_phrases: tuple[str, ...],
    current_embedder_tag: str,
    stamp_reason: str = "",
) -> Verdict:
    anchor = "trap" if test.kind == "negative" else "evidence"
    unverified = test.embedder_tag != current_embedder_tag
    got = set(retrieved)
    present = [i for i in anchor_ids if i in got]
    all_in = bool(anchor_ids) and len(present) == len(anchor_ids)
    readings = read_answer(answer.text, refusal_phrases) if answer.text else []
    refused = any(r.refusal for r in readings)

    def v(verdict: str, reason: str, trap: bool = False, how: str = "", unsure: bool = False) -> Verdict:
        return Verdict(
            test.question_id, test.kind, verdict, reason, anchor_ids, all_in, refused, trap, how, unverified, unsure
        )

    if not all_in:
        if stamp_status == "missing":  # the corpus changed under the test: say how (ragpipe.restamp)
            return v(
                "did_not_run",
                f"{anchor} {stamp_reason or 'missing from corpus: its quote is no longer in any document'}",
            )
        if not anchor_ids:
            return v("did_not_run", f"no {anchor} chunk id: stamp the test (ragpipe golden restamp --write)")
        if len(anchor_ids) > 1 and present:
            return v("did_not_run", f"{anchor} split across {len(anchor_ids)} chunks and only {len(present)} retrieved")
        return v("did_not_run", f"{anchor} chunk {', '.join(anchor_ids)} not retrieved in top {len(retrieved)}")
    if answer.error:
        return v("error", f"answerer error: {answer.error}")
    if not answer.text.strip():
        return v("fail", "empty answer")
    if test.kind == "negative":
        outcome, clause, unsure = _read_negative(readings, test.question, test.trap_value)
        quoted = repr(clause[:120])
        if outcome == "refusal":
            return v("pass", "refused with the trap in context", how="refusal")
        if outcome == "refusal_citing_trap":
            return v(
                "pass",
                f"refused; cites the trap's value {test.trap_value!r} only as what the documents say",
                how="refusal_citing_trap",
            )
        if outcome == "took_trap":
            return v("fail", f"took the trap: the answer states {test.trap_value!r}", trap=True, unsure=unsure)
        if outcome == "hedged_trap":
            return v(
                "fail", f"took the trap (hedged): the answer offers {test.trap_value!r} as likely: {quoted}", trap=True
            )
        if outcome == "hedged":
            return v("fail", f"answered anyway (hedged): {quoted}")
        if refused:
            return v("fail", f"refused, then answered anyway: {quoted}", unsure=unsure)
        return v("fail", f"answered instead of refusing: {answer.text[:120]!r}", unsure=unsure)
    m = answer_matches(answer.text, test.expected_answer, test.question)
    rival = _rival_first(answer.text, test.expected_answer, test.question) if m.matched else None
    if rival:
        return v(
            "fail",
            f"names {rival!r} before {test.expected_answer!r}, both options of the question: which one it "
            f"gives as the answer is for a judge to read",
            unsure=True,
        )
    stating = [
        i for i, r in enumerate(readings) if answer_matches(r.clause, test.expected_answer, test.question).matched
    ]
    if m.matched and stating and _disowned(readings, stating):
        return v(
            "fail",
            f"cites {test.expected_answer!r} as what the documents say, then answers otherwise: "
            f"{readings[-1].clause[:120]!r}",
        )
    if m.matched and (not stating or any(not readings[i].hedge and not readings[i].refusal for i in stating)):
        return v("pass", f"answer matches expected ({m.how})", how=m.how)
    if m.matched and all(readings[i].hedge for i in stating):
        return v("fail", f"states {test.expected_answer!r} only as a guess: {readings[stating[0]].clause[:120]!r}")
    stated = set(numbers(digits(answer.text))) - set(numbers(digits(test.question)))
    if refused and not stated:
        return v("fail", "refused although the evidence was retrieved")
    # A paraphrase that shares much of the expected answer is for a judge to read; without one it fails.
    close = answer_matches(answer.text, test.expected_answer, test.question, share=0.5).matched or (
        bool(stated) and stated <= set(numbers(digits(test.expected_answer)))
    )
    return v("fail", f"answer does not state {test.expected_answer!r}: {answer.text[:120]!r}", unsure=close)
