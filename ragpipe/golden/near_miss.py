"""Near-miss tests read from the corpus: a sentence that states a value (an amount, a share, a count, a date, a
version, a name) under a qualifier (a period, a version, a named thing) is the trap of a question that asks for the
same value under a sibling qualifier. Pure text; whether the corpus answers the new question is absence.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from ragpipe.golden.asking import Asked, wh_question
from ragpipe.golden.clauses import core_words, said_of
from ragpipe.golden.prose import askable, english, readable
from ragpipe.reading import content_words

QUALIFIER_KINDS = ("periods", "versions", "names", "changes")  # what a qualifier can be (--kinds)

_ORDINALS = ["first", "second", "third", "fourth"]
_MONTHS = "January February March April May June July August September October November December".split()
YEAR = _YEAR = r"(?:1[5-9]\d\d|20[0-4]\d)"
_FYEAR = rf"{_YEAR}(?:[/\u2013-]\d\d(?![\d%/-]))?"  # a year, or a financial year written "2022/23"

# Qualifiers, most specific first: a span taken by one is not read again by a later one.
_QUALIFIERS: list[tuple[str, str, re.Pattern[str]]] = [
    (
        "periods",
        "quarter",
        re.compile(rf"\b(first|second|third|fourth) quarter (?:of )?(?:fiscal (?:year )?)?({_FYEAR})\b", re.I),
    ),
    ("periods", "q", re.compile(rf"\bQ([1-4])(\s?|\s+FY\s?|\s+of\s+)({_FYEAR})\b")),
    ("periods", "month", re.compile(rf"\b(?:\d{{1,2}} )?({'|'.join(_MONTHS)})( \d{{1,2}},)? ({_YEAR})\b")),
    ("periods", "split", re.compile(rf"(?<![\w.$/])({_YEAR})[/\u2013-](\d\d)(?![\w%/.\u2013-])")),  # "2022/23"
    ("periods", "fy", re.compile(rf"\b(FY\s?|fiscal (?:year )?)({_FYEAR})\b", re.I)),
    (
        "periods",
        "year",
        re.compile(rf"(?<![\w.$\u2013\u2014-]){_YEAR}(?![\w.%\u2013\u2014-]|,\d|['\u2019]s\b)"),  # "1960's": a decade
    ),
    ("versions", "version", re.compile(r"\b(version|release|Python|Debian|v)\s?(\d+\.\d+(?:\.\d+)?)\b(?!\.\d)", re.I)),
    (
        "names",
        "shaped",
        re.compile(r"\b([A-Z][A-Za-z]{1,9})-(\d{1,5})\b(?!\.\d)|\b([A-Z]{2,6}) (\d{1,5})\b(?![.,-]\d)"),
    ),
    ("names", "code", re.compile(r"`([A-Za-z_][\w-]*(?:::|\.)[A-Za-z_][\w-]*)`")),
]

# Values: what the question asks for, with the words that ask for it.
_VALUES: list[tuple[str, re.Pattern[str]]] = [
    ("money", re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand)|[MBK]\b)?", re.I)),
    ("percent", re.compile(r"\b\d+(?:\.\d+)?\s?(?:%|percent\b)", re.I)),
    ("date", re.compile(rf"\b(?:{'|'.join(_MONTHS)}) \d{{1,2}}, {_YEAR}\b")),
    ("version", re.compile(r"\b(?:version\s|v)?\d+\.\d+\.\d+\b|\b[A-Z][\w-]* (?P<v>\d+\.\d+)\b(?!\.\d|%)")),
    ("count", re.compile(r"(?<![\w.$-])\d(?:[\d,]*\d)?(?:\.\d+)?(?P<noun>(?: [a-z][a-z-]+){0,2})(?![\w%-])")),
    ("code", re.compile(r"`[^`\n]{1,40}`")),
]
_WH = {
    "money": "how much",
    "percent": "what percentage",
    "date": "what date",
    "version": "which version",
    "code": "what",
}
_LEAD = re.compile(
    r"^(?:however|in addition|additionally|also|by contrast|in contrast|meanwhile|finally|overall|for example|"
    r"note that|notably|as a result|by comparison|in total),?\s+",
    re.I,
)
_CLAUSE_END = re.compile(r",\s|[;:(]|\s[-\u2013\u2014]\s|\.\s|$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")
_MARKED_LINE = re.compile(r"^\s*(?:[-*#|>+=]|\d+[.)]\s)")  # a heading, a list item, a table row, a quote
_CLAUSE_BREAK = re.compile(r"[;:]|,\s|\s(?:and|but|while|whereas|which|who|as|if|unless|when)\s")


@dataclass(frozen=True)
class Span:
    kind: str  # a qualifier's shape (quarter, year, version, ...) or a value's kind (money, count, ...)
    text: str
    start: int
    end: int
    group: str = ""  # qualifiers: the kind the user selects (periods, versions, names)


@dataclass(frozen=True)
class Sentence:
    chunk_id: str
    doc_id: str
    text: str
    words: frozenset[str]


@dataclass(frozen=True)
class Candidate:
    """A sentence, the value it states and the qualifier it states it under; the attribute is what the question
    asks of the qualifier: the content words of the asking clause, less the qualifier and the asking words."""

    sentence: Sentence
    value: Span
    qualifier: Span
    attribute: frozenset[str]
    subject: str = ""  # of a change note (changes.py): the definition it stands under
    core: frozenset[str] = frozenset()  # what the figure is of ("revenue"): absence's surest sign of an answer
    label: str = ""  # of a table's row (tables.py): the measure it names, asked by a template
    columns: tuple[str, ...] = ()  # ... and the periods the table states it for
    of: str = ""  # ... and what it is a measure of, where the table states it of its article's subject


def sentences_of(chunk_id: str, doc_id: str, text: str) -> Iterator[Sentence]:
    """The prose sentences of a chunk as written (each a verbatim slice of its document), 30-400 characters: a
    heading, a list item or a table row is its own line, and no trap."""
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.split("\n")
        if any(_MARKED_LINE.match(line) for line in lines):
            lines = [line for line in lines if not _MARKED_LINE.match(line)]
            units = lines  # what is left of a marked block is a line each
        else:
            units = [paragraph]
        for unit in units:
            for raw in _SENTENCE_END.split(unit):
                s = raw.strip()
                if 30 <= len(s) <= 400 and _prose(s):
                    yield Sentence(chunk_id, doc_id, s, frozenset(content_words(s)))


def passages_of(chunk_id: str, doc_id: str, text: str) -> Iterator[Sentence]:
    """What sentences_of leaves out (a table row or a whole table flattened into a line, a list item, a heading, a
    long or short line): no trap is made of it, but absence searches it too ("Q3 2023 ... 84.7%" in a table answers
    a question of the third quarter)."""
    kept = {s.text for s in sentences_of(chunk_id, doc_id, text)}
    for line in text.split("\n"):
        s = line.strip()
        if s and s not in kept and not any(k in s for k in kept) and re.search(r"\d", s):
            yield Sentence(chunk_id, doc_id, s, frozenset(content_words(s)))


def _prose(text: str) -> bool:
    """Running text, not code or a table flattened into a line (a run of spaces, a fence, mostly symbols)."""
    if "```" in text or re.search(r"\S {3,}\S", text):
        return False
    return sum(ch.isalpha() or ch == " " for ch in text) >= 0.6 * len(text)


def qualifiers(text: str, groups: Iterable[str] = QUALIFIER_KINDS) -> list[Span]:
    taken: list[Span] = []
    for group, kind, pattern in _QUALIFIERS:
        if group not in groups:
            continue
        for m in pattern.finditer(text):
            if kind == "year" and _counts(m.group(0), text[m.end() :]):
                continue  # "2048 bits", "1500 packages": a number of things, not a year
            if kind == "split" and int(m.group(2)) != (int(m.group(1)) + 1) % 100:
                continue  # "2019-21": a range of years, not one financial year
            if not any(m.start() < t.end and t.start < m.end() for t in taken):
                taken.append(Span(kind, m.group(0), m.start(), m.end(), group))
    return sorted(taken, key=lambda s: s.start)


def _counts(number: str, after: str) -> bool:
    """The number is followed by what it counts."""
    words = re.match(r"(?: [a-z][a-z-]+){0,2}", after)
    noun = _noun(words.group(0)) if words else ""
    return bool(noun) and _counted(number, noun)


def values(text: str, besides: Iterable[Span]) -> list[Span]:
    """The values a sentence states, outside its qualifiers. A count is a number with the noun after it ("1,184
    robot arms"), or a bare number that a verb states ("was 651"); a bare number elsewhere is a list item, a section,
    a port: no question asks for it alone."""
    taken = list(besides)
    found: list[Span] = []
    for kind, pattern in _VALUES:
        for m in pattern.finditer(text):
            start, end = m.span("v") if "v" in pattern.groupindex and m.group("v") else m.span()
            if any(start < t.end and t.start < end for t in taken + found):
                continue
            if kind == "version" and m.group("v") and m.group(0).split()[0].lower() in _NOT_NOUNS:
                continue  # "In 3.1 this was changed": a word, not the name of what has the version
            if kind == "count":
                if _LABELS.search(text[:start]):
                    continue  # "axis 2", "section 4": a number that names, not one that counts
                noun = _noun(m.group("noun"))
                if not noun and not _STATED.search(text[:start]):
                    continue
                if noun and not _counted(m.group(0)[: m.start("noun") - m.start()], noun):
                    continue  # "1.1 when no", "2 scheme", "0 it returns": not a number of things
                end = m.start("noun") + (len(noun) + 1 if noun else 0)
            found.append(Span(kind, text[start:end], start, end))
    return sorted(found, key=lambda s: s.start)


_NOT_NOUNS = set(
    "was were is are be been has have had in of to and or for at on by with from as that which per than into over "
    "under after before during since each the a an more less most least new may might can could will would should "
    "must not also only still when where while if then so it its this these those across among against within "
    "without about thus always perhaps plus versus towards".split()
)
_LABELS = re.compile(
    r"\b(?:axis|step|section|chapter|page|figure|table|item|line|level|phase|tier|class|type|rule|article|clause|"
    r"part|stage|grade|no\.?|number|model|port|room|floor|unit|appendix|listing|exhibit|schedule)\s$",
    re.I,
)
_STATED = re.compile(r"\b(?:was|were|is|are|reached|totaled|totalled|of|at)\s$")


_UNITS = set(
    "mm cm m km kg g mg lb ms s min h kb mb gb tb kib mib gib bytes bits hz khz mhz ghz px pt dpi usd eur".split()
)


def _counted(number: str, noun: str) -> bool:
    """A count is a whole number of things: a plural noun ("400 developers") or a unit ("912 mm", "7 bits")."""
    words = noun.split()
    plural = any(w.endswith("s") and not w.endswith(("ss", "us", "is")) for w in (words[0], words[-1]))
    return "." not in number and ((plural and number != "1") or words[0].lower() in _UNITS)


def _noun(words: str) -> str:
    """The noun phrase after a number: the words up to the first that cannot be part of it."""
    kept: list[str] = []
    for w in words.split():
        if w in _NOT_NOUNS or w.endswith(("ed", "ing", "ly")):
            break
        kept.append(w)
    return " ".join(kept)


def candidates(
    sentence: Sentence, groups: Iterable[str] = QUALIFIER_KINDS, titled: Iterable[Span] = ()
) -> list[Candidate]:
    """Every (value, qualifier) pair said of each other: the one value in the qualifier's clause (two there are a
    list, and the question would be ambiguous); a value in another clause is not said of the qualifier (one that
    opens the sentence, "In 2006, ...", is said of all of it). `titled`: its document's period, where the sentence
    is said of it (titles.titled_spans)."""
    text = sentence.text
    quals = qualifiers(text, groups) if askable(text) else []
    quals += list(titled) if quals or askable(text) else []
    if not quals:
        return []
    vals = [
        v
        for v in values(text, qualifiers(text))
        if not _THRESHOLD.search(text[: v.start] + "|" + v.text)
        and text.count("(", 0, v.start) <= text.count(")", 0, v.start)
        and not re.match(r":\d", text[v.end : v.end + 2])
    ]  # a bound ("over 78 weeks"), an aside in brackets ("(71% agree)"), a time ("03:10") is no figure to ask for
    vals = vals or names(text, qualifiers(text))
    out = []
    for q in quals:
        if _BOUNDING.search(text[: q.start]) or text.count("(", 0, q.start) > text.count(")", 0, q.start):
            continue  # "since 2002": a bound, another year inside it may be answered by it; "(PEP 249)": a citation
        said = [
            v
            for v in vals
            if q.start == q.end or _said_of(text, v, q) and said_of(text, (v.start, v.end), (q.start, q.end))
        ]
        if len(said) != 1:
            continue
        asked = question(Candidate(sentence, said[0], q, frozenset()))
        attribute = frozenset(content_words(asked) - content_words(q.text) - _ASKING)
        core = content_words(core_words(text, (said[0].start, said[0].end), (q.start, q.end)))
        if attribute and readable(asked):
            out.append(Candidate(sentence, said[0], q, attribute, core=frozenset(core - content_words(q.text))))
    return out


# A duration named as a bound ("waiting over 78 weeks", "within four hours"): a standard, not a figure to ask for
_THRESHOLD = re.compile(
    r"\b(?:over|under|within|than|least|longer|beyond|up to)\s+\|\S+\s(?:weeks?|days?|hours?|minutes?|months?|years?)$",
    re.I,
)


def _said_of(text: str, v: Span, q: Span) -> bool:
    """No clause break between the value and the qualifier, an opening phrase ("In 2006, ...") governing it all."""
    between = text[min(v.end, q.end) : max(v.start, q.start)]
    if q.end <= v.start and _OPENING.match(text[: q.start]) and text[q.end : q.end + 1] in (",", ":"):
        between = between[1:]
    return not _CLAUSE_BREAK.search(between)


_BOUNDING = re.compile(  # a bound ("since 2002") or the base of a comparison ("compared with 2019")
    r"\b(?:since|until|till|before|after|from|by|through|between|to|prior to|as of|compared (?:with|to)|"
    r"relative to|than|versus|vs\.?|against)\s+(?:the\s+)?(?:same\s+\w+\s+(?:of|in)\s+)?$",
    re.I,
)
_CLAUSE_START = re.compile(r"^[^,;:]{0,60}[,:]")  # an opening phrase ("In 2006,") belongs to the main clause
_OPENING = re.compile(r"^(?:[A-Z][a-z]*(?: the| of| in)?(?: (?:early|late|mid|year|version|release))? ?)?$")
_NAMED = {"PERSON": "who", "ORG": "what", "GPE": "where", "LOC": "where", "FAC": "what", "PRODUCT": "what",
          "EVENT": "what", "WORK_OF_ART": "what", "LAW": "what"}  # fmt: skip


def names(text: str, besides: Iterable[Span]) -> list[Span]:
    """The named things a sentence states (a person, an organization, a place, ...; spaCy's entities), outside its
    qualifiers and not a modifier of another word ("the Warsaw area", "John Paul II's visits", "the poet Zygmunt
    Laukowski" name no answer): a sentence that states no amount, count or date may still answer "who" or "what"."""
    taken = list(besides)
    found = []
    for e in english()(text, disable=["tagger", "attribute_ruler", "parser", "lemmatizer"]).ents:
        if e.label_ not in _NAMED or any(e.start_char < t.end and t.start < e.end_char for t in taken):
            continue
        before, after = text[: e.start_char].split()[-1:], text[e.end_char :]
        modifies = re.match(r"\s*([a-z]+)", after)  # "the Warsaw area"; not "returned to Montreal in 1749"
        if (modifies and modifies.group(1) not in _NOT_NOUNS | _GOVERNS) or re.match(r"'s|\)", after):
            continue
        if before and before[0] not in _GOVERNS and not before[0].endswith(","):
            continue
        if re.match(r"\s[A-Z]", after) or not re.fullmatch(r"(?:the )?[A-Z][A-Za-z.' -]*[a-z]", e.text):
            continue  # "Collin" of "Collin Winter", "David A.": part of a longer name, or not a name
        found.append(Span(e.label_, e.text, e.start_char, e.end_char))
    return found


_GOVERNS = set(
    "by to in at from with for as was were is are became become named called of on into under than and or "
    "include includes included including".split()
)


_ASKING = content_words("how much many what percentage date which version who where")  # the asking words


def question(c: Candidate, new_qualifier: str | None = None) -> str:
    """The question asked of the sentence, its qualifier replaced by the new one (or kept, for a positive): built
    from the parse (asking.py: "What percentage was non-revenue water for fiscal year 2024?"). A period's question
    is that or nothing (''); another qualifier's, where the parse gives none, is the sentence spliced (_spliced)."""
    text, v, q = c.sentence.text, c.value, c.qualifier
    wh, v_start = _wh(v), v.start
    if v.kind in ("PERSON", "ORG") and re.search(r"\bby $", text[: v.start]):
        wh = "whom"  # "largely developed by Loudoun" -> "by whom"; a thing stays "by what"
    named = re.search(r"([A-Z][\w-]*) $", text[: v.start]) if v.kind == "version" else None
    if named:  # "HaloOS 4.0 was released ..." -> "Which HaloOS version was released ..."
        wh, v_start = f"which {named.group(1)} version", named.start()
    new = new_qualifier if new_qualifier is not None else q.text
    titled = text[q.start : q.end] != q.text  # "the quarter", or nothing: the title's period
    shown = f"the {new}" if titled and q.kind == "quarter" else new  # "during the second quarter of 2023"
    built = wh_question(text, Asked((v_start, v.end), wh, (q.start, q.end), shown))
    if built and re.search(rf"\b{re.escape(shown)},? (?:and|or) ", built):
        built = None  # "during 2020/21 and development work": the parse joined the period to the next clause
    if built and q.start == q.end:  # asked before the question
        built = f"In {shown}, {built[:1].lower()}{built[1:]}"
    if built or q.group == "periods":
        return built or ""
    return _spliced(c, wh, v_start, new)


def _spliced(c: Candidate, wh: str, v_start: int, new: str) -> str:
    """The sentence asked back: its value replaced by the words that ask for it, its qualifier by the new one, cut
    after the clause that holds both ("Gross margin for the third quarter of 2024 was what percentage?")."""
    text, v, q = c.sentence.text, c.value, c.qualifier
    place = re.search(r"\b(?:in|at|to) $", text[: v.start]) if wh == "where" else None
    if place:  # "arrived in New France" -> "arrived where"
        v_start = place.start()
    end = max(v.end, q.end)
    cut = _CLAUSE_END.search(text, end)
    stop = cut.start() if cut else len(text)
    first = min(v_start, q.start)
    opening = _CLAUSE_START.match(text) if q.start == first else None
    breaks = [m.end() for m in _CLAUSE_BREAK.finditer(text, 0, first) if not opening or m.start() >= opening.end()]
    out, at = [], breaks[-1] if breaks else 0  # from the start of the clause that holds both
    if v.kind in _NAMED and not re.sub(r"(?i)\bthe\b", "", text[at:v_start]).strip():
        wh = "who" if v.kind == "PERSON" else "what"  # the subject: "Polonia was relegated" -> "What was relegated"
    for s, e, repl in sorted([(v_start, v.end, wh), (q.start, q.end, new)]):
        out += [text[at:s], repl]
        at = e
    out.append(text[at:stop])
    asked = re.sub(r"\s+", " ", "".join(out)).strip().rstrip(".!,;: ")
    asked = _LEAD.sub("", asked)
    asked = asked.replace("`", "")
    return asked[:1].upper() + asked[1:] + "?"


def _wh(v: Span) -> str:
    if v.kind in _NAMED:
        return _NAMED[v.kind]
    if v.kind == "count":
        noun = v.text.split(maxsplit=1)[1:]
        return f"how many {noun[0]}" if noun else "what"
    return _WH[v.kind]
