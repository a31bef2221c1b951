"""Where a value stands in the answer's sentence, from spaCy's dependency parse: asserted, negated ("not 2019"),
said of something else ("unlike the older client, which used UTF-8"), one end of a range ("from 2 to 8"), one of
alternatives ("either A or B"), or beside another of its kind ("both the priority and weight fields")."""

from __future__ import annotations

import re
from typing import Any

from ragpipe.reading.grounding import parse
from ragpipe.reading.match import content_words, digits

# Prepositions and adverbs that put what they govern beside the answer instead of being it.
_CONTRAST = {"unlike", "except", "besides", "instead", "rather", "apart", "aside", "excluding", "versus", "vs", "vs."}
_BOUNDS = {"later", "newer", "higher", "above", "more", "greater", "earlier", "lower", "less", "fewer", "so", "older"}
_NEGATORS = {"not", "never", "no", "n't", "nor", "neither"}


def _spans(doc: Any, value: str) -> list[Any]:
    """Token spans of the doc that hold `value` (case-insensitive, whitespace-tolerant)."""
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(p) for p in value.lower().split()) + r"(?!\w)"
    out = []
    for m in re.finditer(pattern, doc.text.lower()):
        span = doc.char_span(m.start(), m.end(), alignment_mode="expand")
        if span is not None:
            out.append(span)
    return out


def _negated(span: Any) -> bool:
    """ "Not 2019", "the audit committee, not the board", "it is not UTF-8": a negation stands right before the value,
    governs it, or negates the copula whose subject or attribute it is. A negated verb with the value as its object
    ("shall not exceed $2.2 million") states a bound, not a denial."""
    doc = span.doc
    i = span.start - 1
    while i >= 0 and doc[i].is_punct and doc[i].text in "`'\"*(":  # quotes and markup around the value
        i -= 1
    before = doc[i] if i >= 0 else None
    if before is not None and before.lower_ in _NEGATORS:
        return True
    if span.start > 1 and doc[span.start - 1].dep_ == "det" and doc[span.start - 2].lower_ in _NEGATORS:
        return True  # "not the board"
    root = span.root
    if any(c.dep_ == "neg" for c in root.children):
        return True
    if root.dep_ == "pobj" and root.head.dep_ == "prep" and root.head.head.pos_ in ("VERB", "AUX"):
        verb = root.head.head  # "did not originate in Scandinavia": the place of a denied act
        if any(c.dep_ == "neg" for c in verb.children):
            return True
    head = root.head
    copula = head.pos_ == "AUX" or head.lower_ in ("is", "was", "are", "were", "be", "been")
    return copula and root.dep_ in ("attr", "acomp", "nsubj") and any(c.dep_ == "neg" for c in head.children)


_CONTRAST_BEFORE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|unlike|except(?:\s+for)?|other\s+than|as\s+opposed\s+to|in\s+place\s+of)"
    r"\s+(?:the\s+|an?\s+)?[`*\"']*$"
)


def _contrasted(span: Any) -> bool:
    """The value sits under "unlike", "except", "instead of", "rather than", ... (a preposition, adverb or
    conjunction that governs it, or that comes right before it where the parse lost the link: "uses a 64 KiB buffer
    instead of 1 MiB."): said of something else."""
    if _CONTRAST_BEFORE.search(span.doc.text[: span.start_char].lower()):
        return True
    for start in (span.root, span[0]):  # a long value's first word may hang under the contrast, not its root
        for anc in [start, *start.ancestors]:
            if anc.dep_ == "ROOT":
                break
            if anc.lower_ in _CONTRAST and anc.pos_ in ("ADP", "ADV", "SCONJ", "CCONJ"):
                return True
    return False


def _ranged(span: Any) -> bool:
    """ "From 2 to 8", "between 2 and 8", "2-8 workers": the value is one end of a range ("up to 3 days" is a bound,
    stated; "2023-09-12" is a date)."""
    doc = span.doc
    marks = {c.lower_ for c in span.root.children if c.dep_ == "quantmod"}
    if marks & {"between", "from"} or (
        marks & {"to", "and", "-", "\u2013"} and any(c.dep_ == "quantmod" and c.like_num for c in span.root.children)
    ):
        return True
    window = doc[max(0, span.start - 4) : min(len(doc), span.end + 3)].text.lower()
    value = re.escape(span.text.lower())
    num = r"[\w.,$%]+"
    return bool(
        re.search(rf"\b(?:between\s+(?:{num}\s+){{0,2}}?and|from\s+(?:{num}\s+){{0,2}}?to)\s+{value}(?!\w)", window)
        or re.search(rf"\b(?:between\s+{value}\s+(?:{num}\s+)?and|from\s+{value}\s+(?:{num}\s+)?to)\s+\S", window)
        or re.search(rf"(?<![\d\-.]){value}\s*(?:\u2013|-|\s+to\s+)\s*\d+(?![\d\-.])", window)
        and not re.search(r"\b\d{4}-(?:0?[1-9]|1[0-2])\b", window)  # "2022-12" is a month
        or re.search(rf"(?<![\d\-.])\d+\s*(?:\u2013|-|\s+to\s+)\s*{value}(?![\d\-.])", window)
    )


def _joined(root: Any, conjunction: str) -> bool:
    """Is the token coordinated by `conjunction` ("or", "and") with another noun, name or number, as the head of
    the coordination or as one of its conjuncts?"""
    kinds = ("NOUN", "PROPN", "NUM")

    def coordinates(head: Any) -> bool:
        return any(c.dep_ == "cc" and c.lower_ == conjunction for c in head.children)

    heads = coordinates(root) and any(c.dep_ == "conj" and c.pos_ in kinds for c in root.children)
    return heads or (root.dep_ == "conj" and root.head.pos_ in kinds and coordinates(root.head))


def _alternative(span: Any) -> bool:
    """ "Either A or B", "A or B": the value is one of alternatives of its kind joined by "or" ("3.9 or newer" is a
    bound)."""
    doc = span.doc
    after = [t for t in doc[span.end : span.end + 4] if not (t.is_punct or t.is_space)]
    if after[:1] and after[0].lower_ == "or" and len(after) > 1 and after[1].lower_ in _BOUNDS:
        return False  # "1.17.11 or later", "3.9 or newer": a bound
    sentence = span.sent
    before = doc[sentence.start : span.start]
    either = any(t.lower_ == "either" for t in before) and any(t.lower_ == "or" for t in sentence)
    near = [t for t in doc[max(0, span.start - 3) : span.start] if not (t.is_punct or t.is_space)]
    or_next = bool(after[:1] and after[0].lower_ == "or") or bool(near[-1:] and near[-1].lower_ == "or")
    return _joined(span.root, "or") or either or or_next


def _conjoined(span: Any) -> bool:
    """ "Both the priority and weight fields": the value paired by "both ... and" with another of its kind (a list
    that merely says more, "Scandinavia and northern Europe", is not)."""
    root = span.root
    doc = span.doc
    window = doc[max(0, span.start - 6) : min(len(doc), span.end + 6)]
    if not any(t.lower_ == "both" for t in window):
        return False
    if re.search(r"\bboth\b[^.;]*\band\b", window.text.lower()):
        return True
    return _joined(root, "and")


def standing(answer: str, value: str, question: str = "", ignore: frozenset[str] = frozenset()) -> str:
    """How the answer holds `value`: "asserted" when at least one occurrence is stated plainly, else why not:
    "negated", "contrasted" (said of something else), "range", "alternative" or "conjoined" (beside another of its
    kind). Where the value is not written as
    such, its most distinctive word is read instead (a number, else a word the question does not hold: "Amherst"
    for "General Amherst", "two" for "over two million"). "absent" when neither occurs."""
    doc = parse(answer)
    spans = _spans(doc, value)
    if not spans:
        asked = content_words(question)
        words = [w for w in re.findall(r"[\w.\-]+", value) if content_words(w) and not content_words(w) <= asked]
        words.sort(key=lambda w: not any(ch.isdigit() for ch in w))
        for w in words:
            spans = _spans(doc, w) or _spans(doc, digits(w))
            if spans:
                break
    if not spans:
        return "absent"
    reasons = []
    for span in spans:
        for name, test in (
            ("negated", _negated),
            ("contrasted", _contrasted),
            ("range", _ranged),
            ("alternative", _alternative),
            ("conjoined", _conjoined),
        ):
            if name not in ignore and test(span):
                reasons.append(name)
                break
        else:
            return "asserted"
    return reasons[0]
