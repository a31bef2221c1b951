"""Whether a positive test's answer asserts the expected value as its answer: not disowned, not a rival option
first, not negated, contrasted, a range end or one of alternatives, not concluding otherwise; a long span restated
whole (ragpipe.verdicts.rule turns these into a verdict)."""

from __future__ import annotations

import re

from ragpipe.reading import (
    Grounds,
    Reading,
    answer_matches,
    claims_of,
    content_words,
    digits,
    facts,
    hedge_leads,
    in_clause,
    is_identifier,
    names_in,
    numbers,
    opposed,
    prepare,
    reassigned,
    said_there,
    spellings,
    standing,
    swapped,
    table_row,
)
from ragpipe.verdicts.entailed import said_as_written

_CORRECTS = re.compile(r"\b(?:actually|in\s+fact|really|instead|rather|correct|current|outdated|older|superseded)\b")
_TURN = re.compile(r"^(?:but|however|yet|though|although|so|actually|in\s+fact|instead|still|nevertheless)\b")


def disowned(readings: list[Reading], stating: list[int], expected: str = "") -> bool:
    """The expected value appears only as what the documents say, and a later clause turns away from it ("The docs
    say three days, but that is from an older policy, so it is two days"): with a word that corrects, or a number
    the expected answer does not hold ("so it replaces just the first one" turns nowhere)."""
    if not all(readings[i].citation for i in stating):
        return False
    own = set(numbers(digits(expected)))
    return any(
        _TURN.search(r.clause) and (_CORRECTS.search(r.clause) or set(numbers(digits(r.clause))) - own)
        for r in readings[max(stating) + 1 :]
    )


def _shape(token: str) -> str:
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "d", token.lower()))


def rival_first(answer: str, expected: str, question: str) -> str | None:
    """For a choice the question offers ("the HR-200 or the HR-400?"): another option of the same form as the
    expected one, named in the answer before it ("The HR-200 is the heavier arm, while the HR-400 is lighter").
    A plain word's options are the words the question joins with "or" ("fixed or free?")."""
    e = expected.strip()
    if " " in e or e.lower() not in question.lower():
        return None
    if _shape(e) == "a":
        joined = re.findall(r"([\w-]+)\s+or\s+([\w-]+)", question)
        tokens = [t for pair in joined if e.lower() in (pair[0].lower(), pair[1].lower()) for t in pair]
    else:
        tokens = re.findall(r"[\w.\-]+", question)
    options = {t for t in tokens if t.lower() != e.lower() and _shape(t) == _shape(e)}

    def at(word: str) -> int:
        m = re.search(r"(?<![\w.-])" + re.escape(word.lower()) + r"(?![\w-])", answer.lower())
        return m.start() if m else -1

    firsts = [(at(o), o) for o in options if 0 <= at(o) < at(e)]
    return min(firsts)[1] if firsts else None


ASIDE = {
    "negated": "negated",
    "contrasted": "said of something else",
    "range": "one end of a range",
    "alternative": "one of alternatives",
    "conjoined": "one of several it names",
}
_FINAL = re.compile(r"\b(?:final\s+answer|the\s+answer\s+(?:is|would\s+be))\b")  # it names the answer itself
_CONCLUDES = re.compile(
    r"^(?:so|therefore|thus|hence|which\s+means|that\s+means|and\s+so|actually|in\s+fact)\b|\b(?:final\s+answer|the\s+answer\s+(?:is|would\s+be))\b"
)


def concludes_otherwise(
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
            said = set(numbers(digits(r.clause))) - set(numbers(digits(question)))
            final = _FINAL.search(r.clause) and len(content_words(r.clause) - known - _SAID_OF) > 0
            if (
                other or final or (said and not said <= set(numbers(digits(expected))))
            ):  # "Final answer: a few thousand"
                return r.clause
    return None


_NEGATING = re.compile(r"\b(?:not|no|never|none|except|without|nor|neither|cannot)\b|n't\b")


def whole(answer: str, expected: str) -> bool:
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


def needs_whole(expected: str, question: str) -> bool:
    """A long span (more than two words the question does not hold), or one that negates a part of itself ("Async
    functions (not plain functions)"), is stated by words only when restated whole: the same words can say the
    opposite ("plain functions rather than async functions")."""
    return len(content_words(expected) - content_words(question)) > 2 or bool(_NEGATING.search(expected.lower()))


def first_code(answer: str, expected: str, question: str) -> str | None:
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


_SAID_OF = content_words(
    "documents document docs context text passage source based according mention mentioned states say says said "
    "provided answer question also default usual final"
)


def _kind(value: str) -> str:
    return "number" if numbers(digits(value)) else "other"


def _fenced(answer: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"```.*?(?:```|$)", answer, flags=re.S)]


def said_of_other(answer: str, readings: list[Reading], stating: list[int], expected: str, question: str) -> str | None:
    """What a value is said of: the clauses stating the expected value tie it to something the question did not ask
    ("the 1 MiB buffer is used on macOS"), while a parallel clause (the same attribute of the question: "buffer")
    gives a rival value of its kind to something the question did ask and they do not name ("Windows keeps the
    usual 64 KiB buffer"). Returns that clause. Code examples, negated rivals and the expected answer's own facts
    are no rivals."""
    if not stating:
        return None
    want = content_words(expected)
    asked = content_words(question) - want - _SAID_OF
    held = set().union(*(content_words(readings[i].clause) for i in stating))
    if not held - asked - want - _SAID_OF:
        return None  # the expected value is said plainly, of nothing new
    kind, fences = _kind(expected), _fenced(answer)
    for i, r in enumerate(readings):
        words = content_words(r.clause)
        if i in stating or not (words & asked) - held or not words & asked & held:
            continue
        rivals = [
            f.text
            for f in facts(answer)
            if in_clause(f.text, r.clause)
            and _kind(f.text) == kind
            and not content_words(f.text) <= asked | want
            and not any(a <= f.start < b for a, b in fences)
            and standing(answer, f.text, question) not in ("negated", "contrasted")
        ]
        if rivals:
            return r.clause
    return None


_ASKS_COUNT = re.compile(
    r"^\W*(?:how\s+(?:many|much|long|old|far|large|big|often|tall|high)|what\s+(?:percentage|number|amount|share))\b"
)
_DATE_WORDS = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+\d{4}\b|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{4}\b|\b(?:1[0-9]|20)\d\d\b"
)


def _counts(text: str, question: str) -> set[float]:
    """The quantities a text states that the question does not hold, dates and years left out."""
    plain = _DATE_WORDS.sub(" ", digits(text).lower())
    return set(numbers(plain)) - set(numbers(digits(question)))


def core(expected: str, question: str) -> float | None:
    """The one quantity a "how many / how much / how long" question asks for, inside a long expected span ("How many
    men did Duquesne send?" -> 500 of "Contrecœur led 500 men south from Fort Venango on April 5, 1754"), or None."""
    if len(content_words(expected) - content_words(question)) <= 2 or not _ASKS_COUNT.search(question.lower()):
        return None
    values = _counts(expected, question)
    return next(iter(values)) if len(values) == 1 else None


# where an expected answer's own value ends and what it adds about the value begins: a parenthesis, "i.e."
_ADDS = re.compile(r"\s*(?:\(|,?\s+i\.e\.[,\s])")  # not a semicolon: "X; Y" may answer two things


def heads(expected: str) -> list[str]:
    """The value an expected answer gives before what it adds about it, and a one-word alternative name it gives in
    parentheses: "1000 entries (can be overridden by OCTAVE_HISTSIZE)" -> ["1000 entries"]; "Approximate minimum degree
    (GLP_ORD_AMD)" -> ["Approximate minimum degree", "GLP_ORD_AMD"]; "the -s option (--standard)" -> ["the -s option",
    "-s", "--standard"]. A bare yes or no, a head of more than six words,
    or an expected answer with a second part after a semicolon has none: []."""
    if spellings(expected):
        return spellings(expected)
    m = _ADDS.search(expected)
    if not m or re.search(r";(?![^()]*\))", expected):  # "X (...); Y" answers two things: X is not all of it
        return []
    if re.match(
        r"\s*\([^()]*\)\s*(?:(?:and|or|&)\s+\S|,\s*[^,()]{1,30}\()", expected[m.start() :]
    ):  # "%r (in) and %s (out)"
        return []
    head = expected[: m.start()].strip(" ,.;:'\"\u2018\u2019\u201c\u201d")  # "'1048576' (1 megabyte)": the number
    if not head or len(head.split()) > 6 or head.lower() in ("yes", "no"):
        return []
    out = [head]
    named = re.fullmatch(r"(?:the\s+)?(\S+)\s+(?:option|flag|switch|command|variable|key)", head, re.I)
    if named:  # "the -s option" is named by "-s"
        out.append(named.group(1))
    inside = re.match(r"\(\s*([^()\s]+)\s*\)\s*$", expected[m.start() :].strip())
    if inside and not re.fullmatch(r"[\d.,]+", inside.group(1)):
        out.append(inside.group(1))
    return out


def states_core(answer: str, expected: str, question: str) -> bool:
    """The answer gives exactly that quantity and no other: "500 men.", "Five hundred." answer it whole."""
    value = core(expected, question)
    if value is None or _counts(answer, question) != {value}:
        return False
    return len(_NEGATING.findall(answer.lower())) == len(_NEGATING.findall(expected.lower()))  # "not 500" is unsure


def aside(answer: str, expected: str, question: str) -> str | None:
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
    if re.search(
        r"\b(?:unlike|except|besides|instead|rather|apart|aside|excluding|versus|vs|other\s+than)\b", expected.lower()
    ):
        ignore.add("contrasted")  # "any value except `0`": the contrast is part of the answer
    if _NEGATING.search(expected.lower()):
        ignore.add("negated")
    how = standing(answer, expected, question, frozenset(ignore))
    return ASIDE.get(how)


def opposed_claim(readings: list[Reading], expected: str, g: Grounds) -> str | None:
    """A clause beside the expected value that the retrieved text says the opposite of ("HTTPX also follows
    redirects by default" beside "will not follow redirects"). The value may be right; the answer is not sure."""
    for r in readings:
        against = None if r.refusal else opposed(r.clause, g, expected)
        if against:
            return f"{r.clause[:120]!r} (the retrieved text: {against[:120]!r})"
    return None


_ABOVE = r"(?:over|more\s+than|above|at\s+least|upwards\s+of|in\s+excess\s+of|no\s+fewer\s+than|no\s+less\s+than)"
_BELOW = r"(?:under|less\s+than|fewer\s+than|below|at\s+most|up\s+to|no\s+more\s+than)"
_EXACT = r"(?:exactly|precisely)"
_NUMBER = r"\s+(?:\$|\u20ac|\u00a3)?\d"


def bound_denied(answer: str, expected: str) -> str | None:
    """The expected value is a bound ("over two million") and the answer gives its number as exact or as the other
    bound ("exactly two million", "under two million"): the value's own qualifier is contradicted."""
    exp, ans = digits(expected).lower(), digits(answer).lower()
    for bound, rivals in ((_ABOVE, (_EXACT, _BELOW)), (_BELOW, (_EXACT, _ABOVE))):
        if re.search(bound + _NUMBER, exp):
            for rival in rivals:
                m = re.search(r"\b" + rival + _NUMBER, ans)
                if m:
                    return m.group(0).strip()
    return None


def denied_after(readings: list[Reading], stating: list[int], expected: str, question: str) -> str | None:
    """The answer states the expected value, then denies it ("They're fixed... so really they aren't fixed
    there"): the clause that denies it, or None."""
    if len(stating) < 2 or standing(readings[stating[0]].clause, expected, question) == "negated":
        return None
    later = (readings[i].clause for i in stating[1:])
    return next((c for c in later if standing(c, expected, question) == "negated"), None)


def second_value(
    answer: str, readings: list[Reading], stating: list[int], expected: str, question: str, passages: Grounds
) -> str | None:
    """A clause after the expected number that speaks of what the question asks (two of its words) and gives it
    another number, plainly ("The current version is 2.1. ... the current version you should treat as
    authoritative is 2.0"): a second answer, or None. Table rows and code examples list, they do not answer; a
    clause that restates the retrieved text, number and all, reports it ("The first exchange opened in 1817")."""
    want = set(numbers(digits(expected)))
    if not want or not stating:
        return None
    asked = content_words(question) - content_words(expected) - _SAID_OF
    known, fences = want | set(numbers(digits(question))), _fenced(answer)
    for i, r in enumerate(readings):
        if i <= stating[0] or i in stating or r.refusal or len(content_words(r.clause) & asked) < 2:
            continue
        if said_there(answer, r.clause, passages):
            continue
        for f in facts(answer):
            if is_identifier(f.text):
                continue  # "IA-64", "x86", "s390x" name a thing; they are no value for what was asked
            value = set(numbers(digits(f.text)))
            listed = table_row(answer, f.start) or any(a <= f.start < b for a, b in fences)  # a row, or code
            if f.kind == "number" and in_clause(f.text, r.clause) and value and not (value & known or listed):
                if standing(answer, f.text, question) not in ("negated", "contrasted", "range", "alternative"):
                    return r.clause
    return None


def unsaid_beside(
    text: str, readings: list[Reading], stating: list[int], passages: Grounds, expected: str, question: str
) -> str | None:
    """What else the answer says that the retrieved text does not: the value denied later, a second value for
    what was asked, a number taken from another statement of the text."""
    denied = denied_after(readings, stating, expected, question)
    if denied:
        return f"then denies it: {denied[:120]!r}"
    other = second_value(text, readings, stating, expected, question, passages)
    if other:
        return f"and another value for what was asked: {other[:120]!r}"
    code = reassigned(text, passages)
    if code:
        return f"beside {code}"
    for i, r in enumerate(readings):
        swap = (
            None
            if r.refusal
            else swapped(text, r.clause, readings[i - 1].clause if i else "", passages, question, expected)
        )
        if swap:
            return f"beside {swap}"
    return None


def quoted_source(text: str, clause: str, contexts: tuple[str, ...]) -> bool:
    """Is the clause's hedge inside a quotation of the retrieved text as it writes it? Then its "may" and "if" are
    the source's ("The license says: \"A Front-Cover Text may be at most 5 words\""), not the answerer's."""
    for a, b in re.findall(r'"([^"]{12,})"|\u201c([^\u201d]{12,})\u201d', text):
        quote = prepare(a or b).strip(" .")
        if quote and quote in clause and said_as_written(quote, contexts):
            return not hedge_leads(clause.replace(quote, " "))  # and no hedge of the answerer's outside it
    return False


def terse(text: str, expected: str, question: str, contexts: tuple[str, ...]) -> bool:
    """Does the answer say nothing but what the expected answer and the question hold (framing aside, and a sentence
    it restates from the retrieved text adding nothing)?"""
    own = [c for c in claims_of(text) if not said_as_written(c, contexts)]
    return not content_words(" ".join(own)) - content_words(f"{expected} {question} use")  # "Use -q (or --quiet)."
