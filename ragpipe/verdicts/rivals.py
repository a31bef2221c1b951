"""What an answer puts in the expected value's place: code of the expected answer's family ("--cache-sim=yes" for
"--branch-sim=yes"), another number ("100 to 200" for "101 to 200"), or the expected answer's values swapped between
the subjects it pairs them with ("103 bytes on Linux and 107 bytes on macOS" for "107 bytes on Linux and 103 bytes on
macOS"); and the verdict on an answer that does not state the expected answer (a fail, or for a reviewer where it may
be a rewording)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ragpipe.reading import answer_matches, content_words, digits, facts, keys, numbers, other_bases, versions
from ragpipe.verdicts.entailed import replaced_claim
from ragpipe.verdicts.positives import needs_whole


def _kin(a: str, b: str) -> bool:
    """Two pieces of code of one family: a shared head or tail up to a separator ("GLP_ORD_QMD" and "GLP_ORD_AMD",
    "--cache-sim" and "--branch-sim", "XZ_DEFAULTS" and "XZ_OPT", "$prefix/lib/gettext" and "$prefix/share/gettext"),
    neither holding the other; or one written with another separator ("wget.log" and "wget-log")."""
    if a in b or b in a:
        return False
    if len(a) == len(b) and re.sub(r"[-_.]", "", a) == re.sub(r"[-_.]", "", b):
        return True
    head = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[::-1], b[::-1]]))
    return (head >= 3 and a[head - 1] in "_-.=:/@") or (tail >= 4 and a[-tail] in "_-.=:/@")


def _codes(text: str) -> list[str]:
    """Code the text names, and its e-mail addresses ("bug-gzip@gnu.org"), in lower case."""
    emails = re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)
    return [f.text.lower().strip("`.,") for f in facts(text) if f.kind == "code"] + [e.lower() for e in emails]


def rival_code(answer: str, expected: str, question: str) -> tuple[str, str] | None:
    """(named, wanted): the answer names code of the family of a piece of the expected answer that it leaves out
    ("GLP_ORD_QMD" where the expected answer is "GLP_ORD_AMD", "--cache-sim=yes" for "--branch-sim=yes"); a
    placeholder of the expected answer ("DELAYED/x-day", "vgcore.NNNNN") stands for a family and has no rival."""
    low, asked, want = answer.lower(), question.lower(), expected.lower()
    missing = [c for c in _codes(expected) if c not in low and not _PLACEHOLDER.search(c)]
    for named in _codes(answer):
        if named in want or named in asked:
            continue
        rival = next((c for c in missing if _kin(named, c)), None)
        if rival:
            return named, rival
    return None


def rival_number(answer: str, expected: str, question: str) -> tuple[float, float] | None:
    """(stated, wanted): the answer leaves out a number of the expected answer and states another one that neither
    the expected answer nor the question holds ("a number in the range 100 to 200" for "a number from 101 to 200",
    "at most 15 words" for "at most 25 words"): a rewording keeps the numbers."""
    if re.search(r"\b[A-Z]\s*=", expected):
        return None  # a form with placeholders ("~bpoNuX (N = ...)"): any number is an instance of it
    asked, want = set(numbers(digits(question))), set(numbers(digits(expected)))
    quoted = [m.span() for m in re.finditer(r'"[^"\n]*"|`[^`]*`', answer)]  # an example quoted is no claim
    said = {
        x
        for f in facts(answer)
        if f.kind == "number" and not re.search(r"[A-Za-z]", f.text) and not any(a <= f.start < b for a, b in quoted)
        for x in numbers(other_bases(digits(f.text)))  # "2^20" is one number
    }
    missing, other = want - set(numbers(digits(answer))) - asked, said - want - asked  # missing: nowhere at all
    other = {  # the same number scaled: 0.5 for 50 %, 48.7 of "48.7 million", 50 % for 0.5
        x
        for x in other
        if not any(abs(x * k - w) < 1e-9 * max(1.0, w) or x == w * 100 for w in want for k in (100, 1e3, 1e6, 1e9))
    }
    if missing and other:
        return min(other), min(missing)
    return None


_PLACEHOLDER = re.compile(r"(?<![a-z])(?:x|n+|nnn\w*)(?![a-z])|<|\.\.\.")
_JOINS = r"[,;]|\s(?:and|then|while|whereas|but)\s"
_PAIRS = re.compile(_JOINS)  # how an expected answer joins its pairs
_SEGMENT = re.compile(_JOINS + r"|\n|\.\s")  # and an answer's sentences and lines
_DATED = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d", re.I
)


def _segments(text: str) -> list[str]:
    return [s for s in _SEGMENT.split(text.lower()) if s.strip()]


def _holds(segment: str, value: str) -> bool:
    if re.fullmatch(r"-?\d[\d,.]*", value):
        return re.search(r"(?<![\w.-])" + re.escape(value) + r"(?![\w.]*\d)", segment) is not None
    return re.search(r"(?<![\w-])" + re.escape(value) + r"(?![\w-])", segment) is not None


def swapped_pairs(answer: str, expected: str) -> tuple[str, str] | None:
    """(value, subject): an expected answer that pairs values with subjects ("107 bytes on Linux and 103 bytes on
    macOS", "-1 when run on Valgrind, 0 otherwise") and an answer that gives a value only beside another value's
    subject ("103 bytes on Linux and 107 bytes on macOS"): the same values, swapped. Words that every part of the
    expected answer shares ("bytes") pair nothing."""
    if _DATED.search(expected):
        return None  # a date's parts ("January 1st, 1970", "2.11 (November 2016)") are one value, not pairs
    parts = [p for p in _PAIRS.split(expected.lower()) if p.strip()]
    values = [v for v in dict.fromkeys(re.findall(r"`[^`]+`|(?<![\w.])-?\d[\d,.]*\d|(?<![\w.])-?\d", expected))]
    values = [v.strip("`").lower() for v in values]
    if len(values) < 2:
        return None
    owner = {v: next((i for i, p in enumerate(parts) if _holds(p, v)), -1) for v in values}
    if -1 in owner.values() or len(set(owner.values())) < len(values):
        return None  # two values in one part, or a value the parts do not show alone: no pairing to read
    value_words = content_words(" ".join(values))
    words = [content_words(p) - value_words for p in parts]
    shared = set.intersection(*(words[i] for i in owner.values()))
    partner = {v: words[owner[v]] - shared for v in values}
    for v in values:
        others = set().union(*(partner[o] for o in values if o != v)) - partner[v]
        holding = [s for s in _segments(answer) if _holds(s, v)]
        if (
            holding
            and partner[v]
            and all(content_words(s) & others and not content_words(s) & partner[v] for s in holding)
        ):
            return v, next(iter(content_words(holding[0]) & others))
    return None


def replaced_number(text: str, expected: str, question: str, v: Any) -> Any:
    """The fail of an answer giving another number in place of one of the expected answer's numbers, or None."""
    number = rival_number(text, expected, question)
    if number is None:
        return None
    return v("fail", f"gives {number[0]:g} where the expected answer {expected!r} has {number[1]:g}")


def reworded(text: str, expected: str, question: str, contexts: Sequence[str], v: Any) -> Any:
    """The answer shares most words of a long expected answer but does not say it whole: a fail where it changes a
    number of it ("100 to 200" for "101 to 200") or swaps a word of the retrieved text for its rival ("the high 64
    bits" for "the low 64 bits"); else whether it says the same is for a reviewer."""
    number = replaced_number(text, expected, question, v)
    if number:
        return number
    contradicted = replaced_claim(text, contexts, f"{question} {expected}")
    if contradicted:
        return v("fail", f"shares most words of {expected!r}, but says {contradicted}")
    return v("fail", f"shares most words of {expected!r}; whether it says the same is for a reviewer", unsure=True)


def unstated(text: str, expected: str, question: str, stated: set[float], v: Any, contexts: Sequence[str] = ()) -> Any:
    """The answer does not state the expected answer: a fail, or for a reviewer where it may be a rewording (unless
    it swaps a word of the retrieved text for its rival)."""
    rival = rival_code(text, expected, question)
    if rival:  # "GLP_ORD_QMD" where the expected answer has "GLP_ORD_AMD": another of its kind, not a rewording
        return v("fail", f"names {rival[0]!r} where the expected answer has {rival[1]!r}")
    number = replaced_number(text, expected, question, v) if needs_whole(expected, question) else None
    if number:  # "up to a max of 5 minutes" for "until it reaches 10 minutes"
        return number
    # A paraphrase that shares much of the expected answer is for a judge or a reviewer to read; it never passes.
    need = content_words(expected) - content_words(question)
    close = (
        answer_matches(text, expected, question, share=0.5).matched
        or (bool(stated) and stated <= set(numbers(digits(expected))))
        or (len(need) >= 5 and len(need & content_words(text)) >= 2)  # a long span, perhaps in other words
    )
    want = versions(expected)  # one version expected, another stated ("1.17.1" for "1.17.11"): not close, wrong
    other = len(want) == 1 and bool(set(versions(text)) - set(want))
    contradicted = replaced_claim(text, contexts, f"{question} {expected}") if close and not other else None
    if contradicted:
        return v("fail", f"answer does not state {expected!r}, and says {contradicted}")
    return v("fail", f"answer does not state {expected!r}: {text[:120]!r}", unsure=close and not other)


def swapped_words(answer: str, expected: str) -> tuple[str, str] | None:
    """(word, partner): an expected answer of two parts ("line buffered for interactive devices, fully buffered
    otherwise", "diagnostics to standard error and help to standard output") and an answer that crosses them both
    ways: one of its segments opens like one part and ends like the other, and another segment the other way round
    ("fully buffered for interactive devices ... line buffered otherwise"). Each part is read by the words only it
    holds: its first and its last. A segment holding both parts' first words is an aside, not a swap ("line
    buffered when interactive (fully buffered otherwise)")."""
    parts = [p for p in _PAIRS.split(expected.lower()) if p.strip()]
    if len(parts) != 2 or _DATED.search(expected):
        return None
    a, b = (re.findall(r"[a-z0-9]+", p) for p in parts)
    own_a, own_b = ([w for w in mine if keys(w) and w not in theirs] for mine, theirs in ((a, b), (b, a)))
    if len(own_a) < 2 or len(own_b) < 2:
        return None
    a_first, a_last, b_first, b_last = own_a[0], own_a[-1], own_b[0], own_b[-1]
    segments = [set(re.findall(r"[a-z0-9]+", s)) for s in _segments(answer)]

    def crossed(first: str, last: str, own_last: str, other_first: str) -> bool:
        return any(first in s and last in s and own_last not in s and other_first not in s for s in segments)

    if crossed(a_first, b_last, a_last, b_first) and crossed(b_first, a_last, b_last, a_first):
        return a_first, b_last
    return None
