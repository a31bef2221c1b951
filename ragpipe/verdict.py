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
from dataclasses import dataclass
from typing import Any

from ragpipe.answer import Answer
from ragpipe.golden import GoldenTest
from ragpipe.grounding import Grounds, grounds, has_verb, names_in, outside, proposes, standing, unsupported
from ragpipe.match import answer_matches, content_words, digits, numbers
from ragpipe.refusal import Reading, read_answer, unwrap
from ragpipe.vocabulary import VERDICTS  # noqa: F401  (re-exported)

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


def _rejected(answer: str, value: str | None, question: str) -> bool:
    """Is the value, wherever the answer writes it, negated or said of something else ("Not 2019: that is the year
    of the audit", "Jane Roe chaired the audit committee, not the board")? Then it is cited, not taken."""
    return bool(value) and standing(answer, value or "", question) in ("negated", "contrasted")


def _new_facts(answer: str, clause: str, question: str) -> list[str]:
    """Numbers and names the clause states that the question does not hold."""
    asked = content_words(question)
    return [f for f in names_in(answer, clause) if not content_words(f) <= asked]


def _read_negative(
    readings: list[Reading], answer: str, question: str, trap_value: str | None, g: Grounds
) -> tuple[str, str, bool]:
    """(outcome, clause, unsure) for a negative test's answer. Outcomes: refusal, refusal_citing_trap, took_trap,
    hedged_trap, hedged, outside, answered. `unsure`: the rules cannot settle it (a judge or a person may)."""
    refused = any(r.refusal for r in readings)
    rejected = _rejected(answer, trap_value, question)
    trap_cited, unclear = False, None
    for r in readings:
        trap = _states(r, trap_value, question)
        offered = _new_facts(answer, r.clause, question)
        if r.refusal and not (r.hedge and offered):  # "possibly X, since they aren't mentioned again" offers X
            trap_cited = trap_cited or trap
            continue
        if refused and r.own_knowledge and not r.citation:
            return "outside", f"{r.clause} [attributed to the answerer's own knowledge, not the retrieved text]", False
        away = outside(answer, r.clause, g)
        if refused and away:  # a refusal, then content neither the retrieved text nor the question holds
            return "outside", f"{r.clause} [not in the retrieved text: {', '.join(dict.fromkeys(away))}]", False
        if refused and not r.citation:
            new, total = unsupported(answer, r.clause, g)
            if new >= 3 and new >= 0.5 * total:  # a claim of its own, in words the retrieved text does not use
                return "outside", f"{r.clause} [{new} of its {total} content words not in the retrieved text]", False
        if trap and rejected:
            trap_cited = True
            continue
        if refused and r.answers_anyway:
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        values = trap or bool(_new_numbers(r.clause, question))
        if refused and r.hedge and not r.citation and proposes(answer, r.clause, question):
            return ("hedged_trap" if trap else "hedged"), r.clause, False  # a guess beside a refusal proposes
        if not (values or offered):
            continue  # states no value
        qualified = _qualified(r.clause, question, trap_value if trap else None)
        approx = r.approx and (trap or not g.known)  # "around 1300" taken from the retrieved text reports it
        if (r.hedge or approx) and not r.citation:
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        if not values:  # names only: an answer without a refusal, else what the retrieved text says
            if not refused:
                return "answered", r.clause, False
            continue
        if (refused and r.infers and not r.citation) or (refused and r.based_on and not (r.citation or qualified)):
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        if not refused:
            return ("took_trap" if trap else "answered"), r.clause, False
        if r.citation or qualified:
            trap_cited = trap_cited or trap
            continue
        if trap and has_verb(answer, r.clause):  # the trap's value claimed of what was asked, beside a refusal
            return "took_trap", r.clause, False
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


_ASIDE = {
    "negated": "negated",
    "contrasted": "said of something else",
    "range": "one end of a range",
    "alternative": "one of alternatives",
    "conjoined": "one of several it names",
}
_CONCLUDES = re.compile(
    r"^(?:so|therefore|thus|hence|which\s+means|that\s+means|and\s+so)\b|\b(?:final\s+answer|the\s+answer\s+(?:is|would\s+be))\b"
)


def _concludes_otherwise(
    answer: str, readings: list[Reading], stating: list[int], expected: str, question: str
) -> str | None:
    """A conclusion after the expected value ("..., so the other university would be the Warsaw School of
    Economics") that names something the expected answer does not hold: the answer it settles on."""
    known = content_words(expected) | content_words(question)
    for r in readings[max(stating) + 1 :] if stating else []:
        if _CONCLUDES.search(r.clause) and not answer_matches(r.clause, expected).matched:
            other = [
                f for f in names_in(answer, r.clause) if re.search(r"\d|^[A-Z]", f) and not content_words(f) <= known
            ]
            if other:
                return r.clause
    return None


_NEGATING = re.compile(r"\b(?:not|no|never|none|except|without|nor|neither|cannot)\b|n't\b")


def _whole(answer: str, expected: str) -> bool:
    """A long expected span restated word for word (every content word, the same numbers, the same operators and
    the same number of negations), in any order or inflection: sure enough to pass. Anything less is for a
    reviewer."""
    if not content_words(expected) <= content_words(answer):
        return False
    if not set(numbers(digits(expected))) <= set(numbers(digits(answer))):
        return False
    if not set(re.findall(r"[<>=!:]+", expected)) <= set(re.findall(r"[<>=!:]+", answer)):
        return False
    return len(_NEGATING.findall(expected.lower())) == len(_NEGATING.findall(answer.lower()))


def _first_code(answer: str, expected: str, question: str) -> str | None:
    """Where the expected answer is code (`priority`): another piece of code the answer names first (`weight`), or
    several others beside it (a list of candidates)."""
    want = re.findall(r"`([^`\n]+)`", expected)
    inline = re.sub(r"```.*?```", " ", answer, flags=re.S)
    got = [c.strip().strip(".").lower() for c in re.findall(r"`([^`\n]+)`", inline)]
    if len(want) != 1 or not got:
        return None
    w = want[0].strip().strip(".").lower()
    rivals = [
        c
        for c in got
        if w not in c
        and c not in w
        and c not in question.lower()
        and standing(inline, c) not in ("negated", "contrasted")  # "Not `weight`: ..." rejects it
    ]
    if rivals and rivals[0] == got[0]:
        return rivals[0]
    return ", ".join(rivals) if len(rivals) >= 2 else None


def _aside(answer: str, expected: str, question: str) -> str | None:
    """Why the expected value, as written, is not what the answer asserts (negated, said of something else, an end of
    a range, one of alternatives, beside another of its kind), or None. An expected answer that is itself a range,
    a choice or a list is not checked for being one."""
    ignore = set()
    if re.search(r"\bor\b", expected):
        ignore.add("alternative")
    if re.search(r"\b(?:to|and|between|from)\b|(?<!\d{4})(?<![\d-])\d+\s*[-\u2013]\s*\d+(?![\d-])", expected):
        ignore.add("range")
    if re.search(r"\band\b|[,;&]", expected):
        ignore.add("conjoined")
    how = standing(answer, expected, question, frozenset(ignore))
    return _ASIDE.get(how)


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
        return _negative(test, text, readings, g, v)
    return _positive(test, text, readings, v)


def _negative(test: GoldenTest, text: str, readings: list[Reading], g: Grounds, v: Any) -> Verdict:
    outcome, clause, unsure = _read_negative(readings, text, test.question, test.trap_value, g)
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


def _positive(test: GoldenTest, text: str, readings: list[Reading], v: Any) -> Verdict:
    expected, question = test.expected_answer, test.question
    refused = any(r.refusal for r in readings)
    m = answer_matches(text, expected, question)
    rival = _rival_first(text, expected, question) if m.matched else None
    if rival:
        return v(
            "fail",
            f"names {rival!r} before {expected!r}, both options of the question: which one it "
            f"gives as the answer is for a judge to read",
            unsure=True,
        )
    stating = [i for i, r in enumerate(readings) if answer_matches(r.clause, expected, question).matched]
    if m.matched and stating and _disowned(readings, stating):
        return v(
            "fail",
            f"cites {expected!r} as what the documents say, then answers otherwise: {readings[-1].clause[:120]!r}",
        )
    rival = _first_code(text, expected, question) if m.matched else None
    if rival:
        return v(
            "fail",
            f"names `{rival}` before {expected!r}: which one it gives as the answer is for a reviewer",
            unsure=True,
        )
    aside = _aside(text, expected, question) if m.matched else None
    if aside == _ASIDE["conjoined"]:
        return v(
            "fail",
            f"names {expected!r} beside another of its kind: which one it answers is for a reviewer",
            unsure=True,
        )
    if aside:
        return v("fail", f"states {expected!r} only as {aside}, not as the answer: {text[:120]!r}")
    other = _concludes_otherwise(text, readings, stating, expected, question) if m.matched else None
    if other:
        return v("fail", f"mentions {expected!r}, then concludes otherwise: {other[:120]!r}")
    if m.matched and (not stating or any(not readings[i].hedge and not readings[i].refusal for i in stating)):
        if (
            m.how == "words"
            and len(content_words(expected) - content_words(question)) > 2
            and not _whole(text, expected)
        ):
            return v(
                "fail", f"shares most words of {expected!r}; whether it says the same is for a reviewer", unsure=True
            )
        return v("pass", f"answer matches expected ({m.how})", how=m.how)
    if m.matched and all(readings[i].hedge for i in stating):
        return v("fail", f"states {expected!r} only as a guess: {readings[stating[0]].clause[:120]!r}")
    stated = set(numbers(digits(text))) - set(numbers(digits(question)))
    if refused and not stated:
        return v("fail", "refused although the evidence was retrieved")
    # A paraphrase that shares much of the expected answer is for a judge or a reviewer to read; it never passes.
    need = content_words(expected) - content_words(question)
    close = (
        answer_matches(text, expected, question, share=0.5).matched
        or (bool(stated) and stated <= set(numbers(digits(expected))))
        or (len(need) >= 5 and len(need & content_words(text)) >= 2)  # a long span, perhaps in other words
    )
    return v("fail", f"answer does not state {expected!r}: {text[:120]!r}", unsure=close)
