"""How a negative test's answer stands, clause by clause: refused, citing the trap, taking it (plainly or hedged),
or answering from outside the retrieved text (ragpipe.verdicts.rule turns the outcome into a verdict)."""

from __future__ import annotations

import json
import re

from ragpipe.reading import (
    Grounds,
    Reading,
    answer_matches,
    content_words,
    digits,
    framing,
    generalizing,
    guesses,
    keys,
    names_in,
    numbers,
    outside,
    quantities,
    sentences,
    signed_from,
    standing,
    unsupported,
)
from ragpipe.verdicts.entailed import said_as_written, supported

_SOURCES = re.compile(r"(?:sources?|references?|citations?)\b[\w ]{0,20}:")
# Any word that denies: an answer without one cannot be declining, whatever words it uses.
_DENIES = re.compile(
    r"\b(?:not|no|never|none|nothing|nowhere|without|neither|nor|cannot|unable|unknown|unclear|absent|silent|lack\w*|"
    r"miss\w*|(?:do|does|did|is|are|was|were|has|have|had|ca|wo|could|would|should)n'?t)\b|n't\b"
)

# advice on where to find the answer ("I'd recommend asking the MIA team directly", "your best bet would be to look in
# the build files", "that appendix would be the best place to confirm it"): it names a source, not an answer
_CONSULT = re.compile(
    r"\b(?:recommend|suggest|advise)\w*\s+(?:that\s+you\s+)?(?:ask|contact|consult|check|look|refer|verify|confirm|"
    r"escalat|rais|fil)\w*|\bplease\s+(?:check|consult|see|refer\s+to|contact|ask|look\s+(?:in|at))\b|"
    r"\byou\s+(?:may|might|could)\s+(?:want\s+to|be\s+able\s+to)\s+(?:check|consult|look|ask|contact|refer)\b|"
    r"\b(?:would\s+be|is)\s+(?:where|the\s+place)\s+to\s+(?:look|check)\b|"
    r"^\W*for\s+the\s+(?:exact|precise|definitive)\s+\w+\W+(?:check|consult|see)\b|\bnext\s+step\W+(?:consult|check|"
    r"contact|ask)\b|\byour\s+best\s+bet\b|\b(?:best|the)\s+place\s+to\s+(?:confirm|check|look|find)\b|"
    r"\brather\s+than\s+guessing\b|^\W*(?:please\s+)?(?:consult|contact|ask|refer\s+to|check\s+with)\b"
)

# words that put a refusal on the source: "the passages don't say", "not documented", "answer found: no"
_SOURCE = re.compile(
    r"\b(?:documents?|documentation|documented|docs?|passages?|context|texts?|excerpts?|sources?|manual|notes|"
    r"material|retrieved|provided|stated|mentioned|covered|specified|listed|say|says|found|answerable)\b"
)


def _new_numbers(clause: str, question: str) -> list[float]:
    """Numbers a clause states that the question did not already hold ("2022" in "revenue for 2022?" is not one)."""
    asked = numbers(digits(question))
    return [x for x in numbers(digits(clause)) if not any(abs(x - y) < 1e-9 for y in asked)]


def _states(r: Reading, value: str | None, question: str) -> bool:
    """Does the clause state the value? Eagerly: 40 % of a long value's words are enough to count as stating it."""
    return _states_text(r.clause, value or "", question)


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
    # an amount (a percentage, money, a number with its unit) is the value itself, which does not qualify itself:
    # "in 2021 it fell 9 %", asked about 2021, gives 9 % for what was asked; "4.3" in "HaloOS 4.3" still qualifies
    new -= _amounts(clause)
    return any(any(ch.isdigit() for ch in w) for w in new) or len(new) >= 2


def _amounts(clause: str) -> set[str]:
    """The numbers of a clause written as amounts: before a percent sign or a unit, after a currency sign."""
    units = {f"{raw:g}" for raw, _, unit in quantities(clause) if unit}
    signed = re.findall(
        r"(\d[\d,]*(?:\.\d+)?)\s?(?:%|percent\b|per\s?cent\b)|[$\u20ac\u00a3]\s?(\d[\d,]*(?:\.\d+)?)", clause
    )
    return units | {n for pair in signed for n in pair if n}


def _rejected(answer: str, value: str | None, question: str) -> bool:
    """Is the value, wherever the answer writes it, negated or said of something else ("Not 2019: that is the year
    of the audit", "Jane Roe chaired the audit committee, not the board")? Then it is cited, not taken."""
    return bool(value) and standing(answer, value or "", question) in ("negated", "contrasted")


# "<the value> is for A, not B": the value placed under its own condition, the asked one denied. Also "... is a
# different comparison": the value said to answer another question.
_FOR_NOT = re.compile(
    r"\b(?:is|are|was|were|applies|apply|refers|refer|relates|relate|covers|cover|concerns)\s+(?:only\s+)?"
    r"(?:to|for|in|about)\s+(?P<a>[^,;:]+?),?\s+(?:and\s+|but\s+)?not\s+(?:to\s+|for\s+|in\s+|about\s+)?(?P<b>[^,;:.]+)"
)
_OTHER = re.compile(  # the value's own short phrase is the subject: "the 12 % figure is a different comparison"
    r"^\W*(?:\S+\s+){0,4}?(?:is|are|was|were|refers\s+to|applies\s+to|belongs\s+to)\s+(?:for\s+)?(?:a|an)\s+"
    r"(?:different|separate|unrelated)\s+(?:comparison|measure|metric|period|figure|quantity|baseline|year|quarter)\b"
)


def _placed_elsewhere(clause: str, question: str) -> bool:
    """Does the clause tie the value to a condition the question did not ask about while denying the one it did
    ("the 12 % figure is for 2019, not 2021" asked about 2021), or call it an answer to another comparison? Then it
    cites the trap as what the documents say of something else: a refusal in other words. Its twin, "the 12 % figure
    is for 2021, not 2019", states the trap for what was asked."""
    asked = content_words(question)
    m = _FOR_NOT.search(clause)
    if m:
        a, b = content_words(m.group("a")) - _META, content_words(m.group("b")) - _META
        return bool(b & asked) and bool(a) and not a & asked
    return _OTHER.search(clause) is not None


def _labels(answer: str, value: str) -> list[str]:
    """The labels the answer writes the value under: a JSON key, the cells before it on a table row, the words before
    ":", "-", "->" or "=" on its line ("LL miss: up to 200 cycles", "| Front-Cover Text | at most 5 words |")."""
    try:
        data = json.loads(answer)
    except ValueError:
        data = None
    if isinstance(data, dict):
        out: list[str] = []
        stack: list[tuple[str, object]] = list(data.items())
        while stack:
            key, item = stack.pop()
            if isinstance(item, dict):
                stack.extend((f"{key} {k}", x) for k, x in item.items())
            elif _states_text(json.dumps(item), value):
                out.append(key.replace("_", " "))
        return out
    out = []
    for line in answer.splitlines():
        if not _states_text(line, value):
            continue
        at = line.lower().find(value.strip("`_*").lower())
        before = line[: max(at, 0)] if at >= 0 else ""
        before = re.split(r"[.!?;]\s", before)[-1]  # the label opens its line or its sentence
        m = re.match(r"^\W*(.{1,60}?)\s*(?::|\||\s[\u2013\u2014-]\s|\u2192|->|=)", before)
        if m and len(m.group(1).split()) <= 6:
            out.append(m.group(1))
    return out


def labelled_otherwise(answer: str, question: str, value: str) -> bool:
    """Beside a refusal, is the value written only under labels of its own, each naming something the question does
    not ask about ("LL miss: up to 200 cycles" asked about a TLB miss, {"legacy_algorithm": "MD5"} asked about the
    default hash)? Then it lists what the source says of something else. "Revenue: $48.7 million", asked about
    revenue, states it."""
    labels = _labels(answer, value)
    asked = _label_words(question)
    return bool(labels) and all(_label_words(label) - _META - asked for label in labels)


def _label_words(text: str) -> set[str]:
    """Content words, and the two-letter abbreviations a label uses ("LL miss", "l1_hits")."""
    short = {w.lower() for w in re.findall(r"(?<![^\W_])[A-Za-z][A-Za-z\d](?![^\W_])", text)}
    return content_words(text) | (short - _TWO_LETTER_WORDS)


_TWO_LETTER_WORDS = frozenset("of to in on at by is it as an or be no do if up so we my me us he am go vs".split())


def _states_text(text: str, value: str, question: str = "") -> bool:
    return bool(value) and answer_matches(text, value, question, share=0.4).matched


# a hedge on a yes or no: "not stated directly, but probably yes, it saves the workspace", "Probably not." answer a
# yes/no question
_HEDGED_YES_NO = re.compile(
    r"\b(?:probably|prob|likely|presumably|perhaps|possibly|maybe|i\s+(?:think|guess|believe))\s+(?:yes|no|not)(?=\s*[,.;:!]|\s*$)"
)


# the asked thing itself put forward as likely: "it's probably 'i'", "it is presumably limited only by memory" (not
# where it may be said: "it is probably documented elsewhere")
_HEDGED_VALUE = re.compile(
    r"\bit\s+(?:is|was|would\s+be|will\s+be|should\s+be)\s+(?:probably|presumably|likely|most\s+likely|possibly|"
    r"perhaps|maybe)\s+(?!(?:documented|covered|mentioned|described|listed|found|available|explained|stated|given|"
    r"specified|defined|elsewhere|in\s+the|on\s+the|somewhere|part\s+of\s+the\s+(?:docs|documentation|manual))\b)\S"
)


def _guess(r: Reading, trap: bool, trap_value: str | None, question: str) -> str | None:
    """The outcome of a clause beside a refusal that puts an answer forward as likely, or None: a hedged yes or no
    ("probably not"), or the asked thing itself ("it's probably 'i'"), where a trap cited before the guess ("since the
    docs say X, it is presumably Y") is not offered."""
    if r.hedge and _HEDGED_YES_NO.search(r.clause):
        return "hedged"
    guess = _HEDGED_VALUE.search(r.clause)
    if not guess:
        return None
    return "hedged_trap" if trap and _states_text(r.clause[guess.start() :], trap_value or "", question) else "hedged"


def _new_facts(answer: str, clause: str, question: str) -> list[str]:
    """Numbers and names the clause states that the question does not hold."""
    asked = content_words(question)
    return [f for f in names_in(answer, clause) if not content_words(f) <= asked]


_MONTHS = frozenset("jan feb mar apr may jun jul aug sep oct nov dec".split())


def _restates(clause: str, contexts: tuple[str, ...]) -> bool:
    """Does the clause restate a retrieved sentence (every content word of it there, with as many negations), saying
    what its values are of (two words at least, not numbers or months)? Then it reports that sentence. "He was 21."
    and "It was March 5, 2024." say a value, not what it is of: they restate nothing."""
    words = keys(clause)
    said_of = {w for w in words if w.isalpha() and w[:3] not in _MONTHS}
    return len(words) >= 3 and len(said_of) >= 2 and said_as_written(clause, contexts)


def _usual_there(clause: str, contexts: tuple[str, ...]) -> bool:
    """Is what the clause calls usual said so by the retrieved text: one of its sentences with the same words
    ("usually", "normally") and three in five of the clause's other words? Then the clause reports that sentence
    ("posts are moderated and usually take about a day", where the text has "usually around a day"), not what is
    usual elsewhere ("Generally, though, binaries go into /usr/local/bin" beside a text that uses the word)."""
    words = generalizing(clause)  # none where a lone "Typically, though," before it made the clause general
    rest = keys(clause) - keys(" ".join(words))
    return bool(words) and any(
        all(w in generalizing(s) for w in words) and len(rest & keys(s)) >= max(2, 0.6 * len(rest))
        for text in contexts
        for s in sentences(text)
    )


def _from_outside(r: Reading, answer: str, question: str, g: Grounds, contexts: tuple[str, ...]) -> str | None:
    """Why a clause beside a refusal answers from outside the retrieved text (the clause, with the reason in
    brackets), or None. A clause that says what the text covers in words of its own, read by the entailment reader
    as supported, is no such answer; the reader misses a number or a code changed ("rsa4096" for "rsa2048"), so only
    words it may vouch for. A clause that restates one retrieved sentence (`_restates`) says that sentence, whatever
    it opens with ("unsubscribed messages are moderated and usually reach the list within a day", as the text has it)."""
    if _restates(r.clause, contexts):
        return None
    if r.own_knowledge and not r.citation:
        return f"{r.clause} [attributed to the answerer's own knowledge, not the retrieved text]"
    if (
        r.generalizes
        and not r.citation
        and not _usual_there(r.clause, contexts)
        and guesses(answer, r.clause, question)
    ):
        return f"{r.clause} [what is usual elsewhere, not what the retrieved text says]"
    away = outside(answer, r.clause, g)
    new, total = unsupported(answer, r.clause, g) if not (away or r.citation) else (0, 0)
    if not away and not (new >= 3 and new >= 0.5 * total):  # else a claim in words the retrieved text does not use
        return None
    if not (r.hedge or any(re.search(r"\d", f) for f in away)) and supported(r.clause, contexts, question):
        return None
    if away:  # content neither the retrieved text nor the question holds
        return f"{r.clause} [not in the retrieved text: {', '.join(dict.fromkeys(away))}]"
    return f"{r.clause} [{new} of its {total} content words not in the retrieved text]"


def read_negative(
    readings: list[Reading],
    answer: str,
    question: str,
    trap_value: str | None,
    g: Grounds,
    contexts: tuple[str, ...] = (),
) -> tuple[str, str, bool]:
    """(outcome, clause, unsure) for a negative test's answer. Outcomes: refusal, refusal_citing_trap, took_trap,
    hedged_trap, hedged, outside, answered. `unsure`: the rules cannot settle it (a judge or a person may). The
    retrieved `contexts` let the entailment reader clear a clause that says what they cover (_from_outside)."""
    states = [_states(r, trap_value, question) for r in readings]
    placed = {i for i, r in enumerate(readings) if states[i] and _placed_elsewhere(r.clause, question)}
    refused = bool(placed) or any(r.refusal for r in readings)
    rejected = _rejected(answer, trap_value, question)
    trap_cited, unclear = False, None
    signature = signed_from([r.clause for r in readings])  # "Kind regards, Customer Support" and what follows
    for i, r in enumerate(readings[:signature]):
        trap = states[i]
        if i in placed:
            trap_cited = True
            continue
        if refused and not r.refusal and _restates(r.clause, contexts):
            trap_cited = trap_cited or trap
            continue
        offered = _new_facts(answer, r.clause, question)
        # "possibly X, since they aren't mentioned again" offers X; "prob same as corrcoef so rows=all" the trap
        if r.refusal and not (r.hedge and (offered or trap)):
            trap_cited = trap_cited or trap
            continue
        if _SOURCES.match(r.clause):
            continue  # "Sources consulted: passage 2 (Warsaw, 16th-17th c.)": the sources named, no claim
        if framing(r.clause) and not (trap or offered or _new_numbers(r.clause, question)):
            continue  # courtesy or an offer of help: "I'd be happy to escalate this to our documentation team"
        if refused and _CONSULT.search(r.clause) and not (trap or _new_numbers(r.clause, question)):
            continue  # where to look for it, not what it is
        guessed = _guess(r, trap, trap_value, question) if refused else None
        if guessed:
            return guessed, r.clause, False
        why = _from_outside(r, answer, question, g, contexts) if refused else None
        if why:
            return "outside", why, False
        if refused and r.answers_anyway and (trap or _new_numbers(r.clause, question)):  # "... actually, 20 to 1"
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        if trap and rejected:
            trap_cited = True
            continue
        if refused and r.answers_anyway:
            return ("hedged_trap" if trap else "hedged"), r.clause, False
        values = trap or bool(_new_numbers(r.clause, question))
        if refused and r.hedge and not r.citation and guesses(answer, r.clause, question):
            return ("hedged_trap" if trap else "hedged"), r.clause, False  # a guess beside a refusal proposes
        if not (values or offered):
            continue  # states no value
        qualified = _qualified(r.clause, question, trap_value if trap else None)
        approx = r.approx and (trap or not g.known)  # "around 1300" taken from the retrieved text reports it
        if (
            (r.hedge or approx) and not r.citation and not r.clause.rstrip().endswith("?")
        ):  # a question proposes nothing
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
        unclear = unclear or (r.clause, trap)  # a refusal beside a plainly stated value: for a judge or a person
    if not refused:  # no refusal the grammar knows, and no value either: a refusal in other words, or an answer
        said = any(guesses(answer, r.clause, question) for r in readings)
        # a refusal in other words speaks of the source ("Nothing in the notes about that"); "There is no limit,
        # you can add as many rules as you want" denies something of the subject: an answer
        return "answered", "", not (said and not (_DENIES.search(answer.lower()) and _SOURCE.search(answer.lower())))
    if unclear:
        return ("took_trap" if unclear[1] else "answered"), unclear[0], True
    return ("refusal_citing_trap" if trap_cited else "refusal"), "", False
