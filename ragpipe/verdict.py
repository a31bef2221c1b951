"""The verdict rule. A test whose anchor chunk was not retrieved did not run, whatever the model said.

anchor (trap for negatives, evidence for positives) not fully retrieved -> did_not_run (with the reason)
answerer error                                                          -> error
answer matches                                                           -> pass
otherwise                                                                -> fail
Separately, a test validated under another embedder is flagged unverified.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragpipe.answer import Answer
from ragpipe.golden import GoldenTest
from ragpipe.match import answer_matches, is_refusal

VERDICTS = ("pass", "fail", "did_not_run", "error")


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


def took_trap(answer: str, trap_value: str | None) -> bool:
    """Did the answer state the trap's tempting value ("$51.2 million", also as "51.2M")?"""
    if not trap_value:
        return False
    # Word-bounded (answer_matches' contains): a bare substring test would read "15%" as stating a "5%" trap.
    return answer_matches(answer, trap_value).matched


def decide(
    test: GoldenTest,
    anchor_ids: tuple[str, ...],
    stamp_status: str,
    retrieved: list[str],
    answer: Answer,
    refusal_phrases: tuple[str, ...],
    current_embedder_tag: str,
) -> Verdict:
    anchor = "trap" if test.kind == "negative" else "evidence"
    unverified = test.embedder_tag != current_embedder_tag
    got = set(retrieved)
    present = [i for i in anchor_ids if i in got]
    all_in = bool(anchor_ids) and len(present) == len(anchor_ids)
    refused = bool(answer.text) and is_refusal(answer.text, refusal_phrases)

    def v(verdict: str, reason: str, trap: bool = False, how: str = "") -> Verdict:
        return Verdict(test.question_id, test.kind, verdict, reason, anchor_ids, all_in, refused, trap, how, unverified)

    if not all_in:
        if stamp_status == "missing":
            return v("did_not_run", f"{anchor} missing from corpus: its quote is no longer in any document")
        if not anchor_ids:
            return v("did_not_run", f"no {anchor} chunk id: stamp the test (ragpipe golden restamp --write)")
        if len(anchor_ids) > 1 and present:
            return v("did_not_run", f"{anchor} split across {len(anchor_ids)} chunks and only {len(present)} retrieved")
        return v("did_not_run", f"{anchor} chunk {', '.join(anchor_ids)} not retrieved in top {len(retrieved)}")
    if answer.error:
        return v("error", f"answerer error: {answer.error}")
    if test.kind == "negative":
        trap = took_trap(answer.text, test.trap_value)
        if trap:
            return v("fail", f"took the trap: the answer states {test.trap_value!r}", trap=True)
        if refused:
            return v("pass", "refused with the trap in context", how="refusal")
        return v("fail", f"answered instead of refusing: {answer.text[:120]!r}")
    m = answer_matches(answer.text, test.expected_answer)
    if m.matched:
        return v("pass", f"answer matches expected ({m.how})", how=m.how)
    if refused:
        return v("fail", "refused although the evidence was retrieved")
    return v("fail", f"answer does not state {test.expected_answer!r}: {answer.text[:120]!r}")
