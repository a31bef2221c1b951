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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragpipe.core import VERDICTS  # noqa: F401  (re-exported)
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import (
    Grounds,
    Match,
    Reading,
    answer_matches,
    cased,
    conversions,
    digits,
    foreign_unit,
    grounds,
    is_refusal,
    misnamed,
    numbers,
    outside,
    prepare,
    read_answer,
    refuses,
    signed_from,
    spellings,
    states_converted,
    unwrap,
    wrong_unit,
)
from ragpipe.verdicts.entailed import finding, replaced_claim, said_as_written
from ragpipe.verdicts.negatives import labelled_otherwise, read_negative
from ragpipe.verdicts.positives import (
    ASIDE,
    aside,
    bound_denied,
    concludes_otherwise,
    disowned,
    first_code,
    heads,
    needs_whole,
    opposed_claim,
    quoted_source,
    rival_first,
    said_of_other,
    states_core,
    terse,
    unsaid_beside,
    whole,
)
from ragpipe.verdicts.rivals import reworded, rival_code, swapped_pairs, swapped_words, unstated

IMPL_VERSION = "16"  # bump too when the entailment reader's shipped layers change (ragpipe/reading/entailer/)
# 16: an option spelled two ways ("-s (--strict)", "-n, --name=NAME") is named by either spelling on its own, unpaired
#     with another and neither denied; a null asked of, C's NULL and "null-terminated" refuse nothing; a common noun
#     opening a label or a table's cell ("| Replacement |", "Date:") is no name.
# 15 and earlier versions: docs/verdicts.md, "Versions of the rule"


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


def _in(words: str, clause: str) -> bool:
    return bool(words) and re.search(r"(?<!\w)" + re.escape(words) + r"(?!\w)", clause) is not None


def _restates(clause: str, fact: str, expected: str) -> bool:
    """Is `fact`, with the words right after it, the expected value in another form ("5000 ms", "10^13")?"""
    at = clause.find(fact.lower())
    return at >= 0 and answer_matches(clause[max(0, at - 2) : at + len(fact) + 14], expected).matched


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
    stamp_reason: str = "",
    contexts: Sequence[str] = (),
) -> Verdict:
    """The verdict of one test. `contexts`: the retrieved texts the answerer saw; content beside a refusal that they
    do not hold is an answer from outside the context (without them that cannot be checked)."""
    anchor = "trap" if test.kind == "negative" else "evidence"
    unverified = test.embedder_tag != current_embedder_tag
    got = set(retrieved)
    present = [i for i in anchor_ids if i in got]
    all_in = bool(anchor_ids) and len(present) == len(anchor_ids)
    text = unwrap(answer.text)
    readings = read_answer(text, refusal_phrases) if text else []
    if _NULL.search(f"{test.expected_answer} {test.question}") or "NULL" in text:  # a null asked of, or C's NULL:
        readings = [  # "The prefix is null.", "x = NULL;" refuse nothing (where nothing else in the clause does)
            replace(r, refusal=refuses(_NULL.sub(" ", r.clause), refusal_phrases))
            if r.refusal and _NULL.search(r.clause)
            else r
            for r in readings
        ]
    refused = any(r.refusal for r in readings)

    def v(verdict: str, reason: str, trap: bool = False, how: str = "", unsure: bool = False) -> Verdict:
        if unsure and verdict != "pass":
            verdict = "needs_review"  # the rules cannot settle it: a judge rules, or a person; it never passes
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
    if not text.strip():
        return v("fail", "empty answer")
    g = grounds(tuple(contexts), f"{test.question} {test.source or ''}")  # the document's name is no outside fact
    if test.kind == "negative":
        return _negative(test, text, readings, g, v, answer.text, tuple(contexts))
    passages = grounds(tuple(contexts), "")  # the retrieved texts alone: the question states nothing
    return _positive(test, text, readings, g, passages, v, tuple(contexts))


def _negative(
    test: GoldenTest, text: str, readings: list[Reading], g: Grounds, v: Any, raw: str, contexts: tuple[str, ...]
) -> Verdict:
    outcome, clause, unsure = read_negative(readings, text, test.question, test.trap_value, g, contexts)
    if outcome == "took_trap" and unsure and labelled_otherwise(raw, test.question, test.trap_value or ""):
        outcome = "refusal_citing_trap"  # "LL miss: up to 200 cycles" beside "no cost is given for a TLB miss"
    quoted = repr(clause[:160])
    refused = any(r.refusal for r in readings)
    if outcome == "refusal":
        return v("pass", "refused with the trap in context", how="refusal")
    if outcome == "refusal_citing_trap":
        return v(
            "pass",
            f"refused; cites the trap's value {test.trap_value!r} only as what the documents say",
            how="refusal_citing_trap",
        )
    if outcome == "outside":
        return v("fail", f"refused, then answered from outside the context: {quoted}")
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
    return v("fail", f"answered instead of refusing: {text[:120]!r}", unsure=unsure)


def _not_the_answer(
    text: str, readings: list[Reading], stating: list[int], expected: str, question: str, v: Any
) -> Verdict | None:
    """The expected value is in the answer, but not as its answer: a rival option first, disowned, beside other code,
    an aside (negated, a range end, ...), a conclusion or a parallel clause that answers otherwise."""
    rival = rival_first(text, expected, question)
    if rival:
        return v(
            "fail",
            f"names {rival!r} before {expected!r}, both options of the question: which one it "
            f"gives as the answer is for a judge to read",
            unsure=True,
        )
    if stating and disowned(readings, stating, expected):
        return v(
            "fail",
            f"cites {expected!r} as what the documents say, then answers otherwise: {readings[-1].clause[:120]!r}",
        )
    denied = bound_denied(text, expected)
    if denied:
        return v("fail", f"gives {denied!r} where the expected answer is a bound: {expected!r}")
    rival = first_code(text, expected, question)
    if rival:
        return v(
            "fail",
            f"names `{rival}` before {expected!r}: which one it gives as the answer is for a reviewer",
            unsure=True,
        )
    why = aside(text, expected, question)
    if why == ASIDE["conjoined"]:
        return v(
            "fail",
            f"names {expected!r} beside another of its kind: which one it answers is for a reviewer",
            unsure=True,
        )
    if why:
        return v("fail", f"states {expected!r} only as {why}, not as the answer: {text[:120]!r}")
    other = concludes_otherwise(text, readings, stating, expected, question)
    if other:
        return v("fail", f"mentions {expected!r}, then concludes with {other[:120]!r}: for a reviewer", unsure=True)
    other = said_of_other(text, readings, stating, expected, question)
    if other:
        return v(
            "fail",
            f"states {expected!r} of something the question did not ask, and gives what it asked another value: "
            f"{other[:120]!r}: for a reviewer",
            unsure=True,
        )
    return None


def _beside(
    text: str,
    readings: list[Reading],
    stating: list[int],
    g: Grounds,
    passages: Grounds,
    test: GoldenTest,
    contexts: tuple[str, ...],
    v: Any,
) -> Verdict | None:
    """The expected value is stated as the answer: what else the answer says, checked against the retrieved texts
    (a wrong conversion, names and numbers they do not hold, a claim they contradict or do not make)."""
    expected, question = test.expected_answer, test.question
    swap = swapped_pairs(text, expected) or swapped_words(text, expected)
    if swap:  # "103 bytes on Linux" where the expected answer pairs 107 with Linux
        return v(
            "fail", f"gives {swap[0]!r} beside {swap[1]!r}, which the expected answer {expected!r} pairs otherwise"
        )
    converted, misconverted = conversions(text, expected)
    if misconverted:
        return v("fail", f"states {expected!r}, then converts it wrongly: {', '.join(misconverted)!r}")
    signature = signed_from([r.clause for r in readings])  # "Kind regards, Customer Support" states nothing
    extra = [  # claims the retrieved text does not hold; in the clause stating the value, not the value's own
        f  # other form ("5000 ms" for "five seconds", "18.3 km" for "60,000 feet")
        for i, r in enumerate(readings[:signature])
        for f in outside(text, r.clause, g)
        if f.lower() not in expected.lower()
        and not re.fullmatch(r"\d", f)
        and not (i in stating and _restates(r.clause, f, expected))
        and not any(f.lower() in c.lower() or c.lower() in f.lower() for c in converted)
    ]
    if extra:  # the expected value, beside claims the retrieved text does not hold
        return v(
            "fail",
            f"states {expected!r}, beside {', '.join(dict.fromkeys(extra))} that the retrieved text does not "
            "hold: for a reviewer",
            unsure=True,
        )
    swapped_word = replaced_claim(text, contexts, f"{question} {expected}")
    if swapped_word:
        return v("fail", f"states {expected!r}, but also {swapped_word}, which the retrieved text contradicts")
    claim = opposed_claim(readings, expected, g)
    if claim:
        return v("fail", f"states {expected!r}, beside a claim the retrieved text contradicts: {claim}", unsure=True)
    unsaid = unsaid_beside(text, readings, stating, passages, expected, question)
    if unsaid:
        return v("fail", f"states {expected!r}, {unsaid}: for a reviewer", unsure=True)
    for c in converted:  # a right conversion is the value itself, no claim of its own
        text = text.replace(c, "")
    read = finding(text, contexts, f"{question} {expected}", is_refusal)
    if read and read.label == "contradicted":
        return v(
            "fail",
            f"states {expected!r}, but also {read.claim[:160]!r}, which the retrieved text contradicts: "
            f"{read.premise[:160]!r} (entailment reader, p={read.p:.2f})",
        )
    if read:
        return v(
            "fail",
            f"states {expected!r}, beside a claim the retrieved text does not make: {read.claim[:160]!r} "
            f"(entailment reader, p={read.p:.2f}): for a reviewer",
            unsure=True,
        )
    return None


_NULL = re.compile(r"\bnull\b", re.I)


def _positive(
    test: GoldenTest,
    text: str,
    readings: list[Reading],
    g: Grounds,
    passages: Grounds,
    v: Any,
    contexts: tuple[str, ...],
) -> Verdict:
    expected, question = test.expected_answer, test.question
    readings = [  # a refusing clause of the retrieved text, quoted, refuses nothing
        replace(r, refusal=False) if r.refusal and said_as_written(r.clause, contexts, question) else r
        for r in readings
    ]
    refused = any(r.refusal for r in readings)
    wrong = misnamed(text, expected)  # "-s (--strict)": not "--strict-time", not "-m" as its short form
    if wrong and not refused:
        return v("fail", f"{wrong}, where the expected answer is the option {expected!r}")
    m = answer_matches(text, expected, question) if not wrong else Match(False, "")
    stating = [i for i, r in enumerate(readings) if answer_matches(r.clause, expected, question).matched] or [
        i for i, r in enumerate(readings) if m.matched and _in(prepare(expected), r.clause)
    ]  # an identifier ("GLP_ENODFS") is matched whole in the answer, and its clause holds it prepared ("glp enodfs")
    unit = wrong_unit(text, expected)
    if unit:
        return v("fail", f"gives {unit!r} where the expected answer is {expected!r}: another unit, another quantity")
    foreign = foreign_unit(text, expected, question, " ".join(contexts))
    if foreign and foreign[1]:
        return v(
            "fail", f"gives {foreign[0]!r} where the expected answer is {expected!r}: another unit, another quantity"
        )
    if foreign and contexts:
        return v(
            "fail",
            f"gives {foreign[0]!r}: a unit that neither the expected answer {expected!r} nor the retrieved text puts with "
            "that number: for a reviewer",
            unsure=True,
        )
    if not m.matched and states_converted(text, expected):  # "18.3 km" for "60,000 feet"
        m = Match(True, "converted")
        stating = [i for i, r in enumerate(readings) if states_converted(r.clause, expected)]
    misread = _not_the_answer(text, readings, stating, expected, question, v) if m.matched else None
    if misread:
        return misread
    if not m.matched and states_core(text, expected, question):  # "500 men." where the span tells more around it
        m = Match(True, "core")
        stating = [i for i, r in enumerate(readings) if states_core(r.clause, expected, question)]
    # "1000" for "1000 entries (can be overridden by ...)", when the answer says nothing the expected answer, the
    # question and the framing do not: a terse answer gives the value; one that says more is for a reviewer
    values = heads(expected) if not m.matched and not wrong else []
    for head in values if values and (terse(text, expected, question, contexts) or spellings(expected)) else []:
        symbols = re.search(r"[^\w\s]", head) is not None  # "~bpoNuX" is not "+bpoNuX": code is read as written
        written = head in text if cased(head) else head.lower() in text.lower()  # "'B' 'Z' 'H'" is not "'B' 'Z' 'h'"
        if answer_matches(text, head, question).matched and (not symbols or written):
            m = Match(True, "head")
            stating = [i for i, r in enumerate(readings) if answer_matches(r.clause, head, question).matched]
            break
    hedged = {i for i in stating if readings[i].hedge and not quoted_source(text, readings[i].clause, contexts)}
    if m.matched and (not stating or any(i not in hedged and not readings[i].refusal for i in stating)):
        rival = rival_code(text, expected, question)  # matched by its words, with another address or path in it
        if rival:
            return v("fail", f"names {rival[0]!r} where the expected answer has {rival[1]!r}")
        if (
            m.how == "words"
            and needs_whole(expected, question)
            and not whole(text, expected)
            and not states_core(text, expected, question)
        ):
            return reworded(text, expected, question, contexts, v)
        if refused:  # it states the value and also says the source does not hold it
            return v("fail", f"states {expected!r} and also refuses: which it means is for a reviewer", unsure=True)
        beside = _beside(text, readings, stating, g, passages, test, contexts, v)
        if beside:
            return beside
        return v("pass", f"answer matches expected ({m.how})", how=m.how)
    if m.matched and stating and all(i in hedged for i in stating):
        return v("fail", f"states {expected!r} only as a guess: {readings[stating[0]].clause[:120]!r}")
    stated = set(numbers(digits(text))) - set(numbers(digits(question)))
    if refused and not stated:
        return v("fail", "refused although the evidence was retrieved")
    return unstated(text, expected, question, stated, v, contexts)
