"""The entailment reader's training data, made from documents by rule (weak supervision, as FactCC made claims for
summaries): each example is a claim, the premise it is read against (ragpipe.reading.premises), and a label.

supported      a sentence of the passage, or the same made shorter or framed: a clause of it, its parenthesis
               dropped, a number written another way, "According to the documentation, ...".
contradicted   the same sentence with a negation added or removed, a number changed, a word turned to its
               opposite ("increases"/"decreases", "before"/"after"), or a name swapped for another of the passage.
not_in_context a sentence from elsewhere in the same document (the hard case: same topic, not said here); the
               sentence with an invented reason, judgement, attribution or consequence built from another
               document's words; a sentence of another document.

The recipe is a function of (documents, seed): the same inputs give the same examples.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragpipe.reading.premises import keys, premise, sentences

LABELS = ("supported", "contradicted", "not_in_context")
WINDOW = 6  # sentences in a passage around the anchor


@dataclass(frozen=True)
class Example:
    claim: str
    premise: str
    label: str
    how: str  # the transform that made it (for the per-kind validation figures)
    doc: str


_NEGATIONS = [
    (r"\b(is|are|was|were|does|do|did|can|will|should|must|may|could|would|has|have)\s+not\b", r"\1"),
    (r"\b(can)not\b", r"\1"),
    (r"\b(is|are|was|were|does|do|did|will|should|must|has|have)n't\b", r"\1"),
    (r"\b(is|are|was|were|can|will|should|must|may|could|would)\b(?!\s+not)", r"\1 not"),
]
_OPPOSITES = [
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("before", "after"),
    ("more", "less"),
    ("larger", "smaller"),
    ("higher", "lower"),
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("true", "false"),
    ("always", "never"),
    ("first", "last"),
    ("minimum", "maximum"),
    ("required", "optional"),
    ("faster", "slower"),
    ("allowed", "forbidden"),
    ("above", "below"),
    ("start", "end"),
    ("input", "output"),
    ("read", "write"),
    ("left", "right"),
    ("open", "closed"),
    ("public", "private"),
    ("include", "exclude"),
    ("includes", "excludes"),
    ("add", "remove"),
    ("adds", "removes"),
    ("earlier", "later"),
    ("many", "few"),
    ("all", "no"),
    ("must", "must not"),
    ("success", "failure"),
    ("synchronous", "asynchronous"),
    ("upper", "lower"),
    ("longer", "shorter"),
    ("older", "newer"),
    ("strong", "weak"),
    ("rise", "fall"),
    ("accept", "reject"),
    ("accepts", "rejects"),
    ("ignore", "use"),
    ("ignores", "uses"),
]
_REASONS = [
    "because {x}",
    "since {x}",
    "which is why {x}",
    "as a result of {x}",
    "a decision taken after {x}",
    "so that {x}",
    "in order to avoid {x}",
]
_JUDGEMENTS = [
    "which the authors call {a}",
    "a choice most users consider {a}",
    "which the maintainers regret",
    "as recommended by {n}",
    "which {n} introduced",
    "according to a survey by {n}",
    "a rule {n} insisted on",
    "which is widely seen as {a}",
    "which later caused {x}",
    "and this was criticised by {n}",
]
_ADJECTIVES = [
    "wasteful",
    "a mistake",
    "outdated",
    "the best practice",
    "controversial",
    "unusual",
    "dangerous",
    "elegant",
    "too slow",
    "a temporary workaround",
    "the industry standard",
    "experimental",
]
_WORDS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six", "7": "seven",
          "8": "eight", "9": "nine", "10": "ten", "12": "twelve", "100": "a hundred"}  # fmt: skip
_NAME = re.compile(r"`[^`]+`|\b[A-Z][A-Za-z0-9]+(?:[ -][A-Z][A-Za-z0-9]+)*\b|\b[a-z]+_[a-z_]+\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _clause(rng: random.Random, s: str) -> str | None:
    parts = [p.strip(" ,;") for p in re.split(r";|,\s+(?:and|but|which|while|so)\s+|\s+\u2014\s+", s)]
    parts = [p for p in parts if len(p.split()) >= 5]
    return (rng.choice(parts).rstrip(".") + ".") if len(parts) >= 2 else None


def _supported(rng: random.Random, s: str) -> tuple[str, str] | None:
    how = rng.choice(["verbatim", "clause", "parenthesis", "number_form", "framed", "words_dropped"])
    if how == "verbatim":
        return s, how
    if how == "clause":
        c = _clause(rng, s)
        return (c, how) if c else None
    if how == "parenthesis":
        out = re.sub(r"\s*\([^()]{2,80}\)", "", s)
        return (out, how) if out != s else None
    if how == "number_form":
        m = next((m for m in _NUMBER.finditer(s) if m.group() in _WORDS or len(m.group()) >= 4), None)
        if not m:
            return None
        v = m.group()
        alt = _WORDS.get(v) or (f"{int(v):,}" if v.isdigit() and len(v) >= 4 else None)
        return (s[: m.start()] + alt + s[m.end() :], how) if alt else None
    if how == "framed":
        lead = rng.choice(["According to the documentation, ", "The text says that ", "Based on the passage, ",
                           "As the source explains, ", "In short: "])  # fmt: skip
        return lead + _lower_first(s), how
    words = s.split()
    drop = [i for i, w in enumerate(words) if w.lower() in {"also", "usually", "simply", "only", "just", "then",
                                                            "however,", "generally", "typically", "currently"}]  # fmt: skip
    return (" ".join(w for i, w in enumerate(words) if i not in drop[:2]), how) if drop else None


def _contradicted(rng: random.Random, s: str, names: Sequence[str]) -> tuple[str, str] | None:
    how = rng.choice(["negation", "number", "opposite", "name"])
    if how == "negation":
        pattern, repl = rng.choice(_NEGATIONS)
        out = re.sub(pattern, repl, s, count=1)
        return (out, how) if out != s else None
    if how == "number":
        nums = [m for m in _NUMBER.finditer(s) if not re.fullmatch(r"(1[89]|20)\d\d", m.group())]
        if not nums:
            return None
        m = rng.choice(nums)
        v = float(m.group())
        new = rng.choice([v * 2, v + 1, v * 10, max(0.0, v - 1) if v > 1 else v + 3])
        text = str(int(new)) if new == int(new) and "." not in m.group() else f"{new:.{len(m.group().split('.')[-1])}f}"
        return (s[: m.start()] + text + s[m.end() :], how) if text != m.group() else None
    if how == "opposite":
        pairs = [(a, b) for a, b in _OPPOSITES + [(b, a) for a, b in _OPPOSITES] if re.search(rf"\b{a}\b", s)]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        return re.sub(rf"\b{a}\b", b, s, count=1), how
    own = [m.group() for m in _NAME.finditer(s) if m.start() > 0]
    others = [n for n in names if n not in s and n.lower() not in s.lower()]
    if not own or not others:
        return None
    return s.replace(rng.choice(own), rng.choice(others), 1), how


def _phrase(rng: random.Random, elsewhere: Sequence[str]) -> str:
    """A noun phrase of another document's sentence: from a determiner, four to eight words."""
    words = rng.choice(elsewhere).rstrip(".").split()
    starts = [i for i, w in enumerate(words[:-3]) if w.lower() in ("the", "a", "an", "its", "their", "this")]
    start = rng.choice(starts) if starts else rng.randrange(max(1, len(words) - 6))
    return " ".join(words[start : start + rng.randint(4, 8)]).strip(",;:")


def _invented(rng: random.Random, s: str, elsewhere: Sequence[str], names: Sequence[str]) -> tuple[str, str]:
    how = rng.choice(["reason", "judgement"])
    template = rng.choice(_REASONS if how == "reason" else _JUDGEMENTS)
    filler = template.format(
        x=_phrase(rng, elsewhere), a=rng.choice(_ADJECTIVES), n=rng.choice(names) if names else "the committee"
    )
    return f"{s.rstrip('.')}, {filler}.", how


def usable(s: str) -> bool:
    """A sentence worth making claims of: prose of 6 to 45 words, mostly letters."""
    words = s.split()
    letters = sum(c.isalpha() for c in s)
    return (
        6 <= len(words) <= 45
        and letters >= 0.6 * len(s)
        and not s.startswith(("$", ">>>", "#", "|", "<", "*", "-", "`"))
        and not s.endswith(("?", ":"))
        and "```" not in s
        and not re.search(r"<[a-z/][^>]*>|\{\{|\]\(|\s[=(){}]\s", s)
    )


def examples(docs: Iterable[tuple[str, str]], per_doc: int, seed: int) -> list[Example]:
    """Up to `per_doc` examples from each (name, text), about 40 % supported, 30 % contradicted, 30 % not in context."""
    rng = random.Random(seed)
    corpus = [(name, sentences(text)) for name, text in docs]
    corpus = [(n, ss) for n, ss in corpus if sum(usable(s) for s in ss) >= WINDOW]
    out: list[Example] = []
    for d, (name, sents) in enumerate(corpus):
        whole = " ".join(sents)
        other = corpus[(d + 1 + rng.randrange(max(1, len(corpus) - 1))) % len(corpus)][1]
        elsewhere = [s for s in other if usable(s)] or other
        anchors = [i for i, s in enumerate(sents) if usable(s)]
        for i in rng.sample(anchors, min(per_doc, len(anchors))):
            lo = max(0, i - rng.randrange(WINDOW))
            passage = sents[lo : lo + WINDOW]
            s = sents[i]
            names = sorted({m.group() for p in passage for m in _NAME.finditer(p)} - {s})
            roll = rng.random()
            made: tuple[str, str] | None
            label = LABELS[0] if roll < 0.4 else LABELS[1] if roll < 0.7 else LABELS[2]
            context = passage
            if label == "supported":
                made = next(filter(None, (_supported(rng, s) for _ in range(6))), None)
            elif label == "contradicted":
                made = next(filter(None, (_contradicted(rng, s, names) for _ in range(8))), None)
            else:
                kind = rng.random()
                far = [
                    j for j in anchors if abs(j - i) > 3 * WINDOW and len(keys(sents[j]) & keys(" ".join(passage))) >= 2
                ]
                if kind < 0.4 and far:
                    made = (sents[rng.choice(far)], "same_document")
                    context = [p for p in passage if p != made[0]]
                elif kind < 0.9:
                    made = _invented(rng, s, elsewhere, names)
                else:
                    made = (rng.choice(elsewhere), "other_document")
            if label != "supported" and made and made[1] != "same_document" and (made[0] in whole or made[0] == s):
                made = None  # the document says it after all (a number changed to one it gives elsewhere)
            if made and made[0].strip():
                claim, how = made
                out.append(Example(claim, premise(claim, [" ".join(context)]), label, how, name))
    rng.shuffle(out)
    return out
