"""Absence shown, never assumed: a near-miss question stands only when no sentence of the corpus pairs its qualifier
with its attribute. The search is exhaustive (every sentence of every chunk), and its evidence is kept: the pattern
searched, how many sentences name the qualifier, the closest of them and why none answers."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from ragpipe.core import normalize_text
from ragpipe.golden.alternatives import forms, shift_year
from ragpipe.golden.asking import parse
from ragpipe.golden.near_miss import _ORDINALS, Candidate, Sentence, Span, qualifiers, values
from ragpipe.golden.titles import document_period, document_title, named_by_year, termly

PAIRS = 0.5  # a sentence under the qualifier holding this share of the attribute (by rarity) may answer it
PAIRS_WITH_VALUE = 0.25  # ... or this share, when it states a value of the kind asked for
_FAMILY = {"q": "quarter", "fy": "year", "split": "year"}  # kinds of period that name the same periods
# a period a year before the one a sentence is said of, named by where it stands ("compared with 3,240 at the same
# time last year", "against 101,600 in Q2 last year", "a year earlier")
_YEAR_BEFORE = re.compile(
    r"\b(?:last year|(?:a|one) year (?:earlier|before|ago)|the (?:previous|prior|preceding) year|the year before)\b",
    re.I,
)
# a level stated by its change over the period ("the pay gap narrowed from 8.4% to 7.6%"): the value after "from" is
# the level of the period before
_CHANGED_FROM = re.compile(
    r"(?:\b(?:rose|fell|grew|dropped|declined|narrowed|widened|increased|decreased|improved|eased|climbed|went (?:up|down)|"
    r"rising|falling|growing|dropping|declining|narrowing|widening|increasing|decreasing)\b[^.;]{0,60}?|\b(?:up|down) )"
    r"from\s+[£$€]?\d[\d,.]*(?P<after>[^.;,]{0,30})",
    re.I,
)
# a figure stated for every period of its kind ("publishes about 55 new titles a year"): it answers each of them
_NOT_AGO = r"(?!\s+(?:earlier|before|ago|later|after|on)\b|['\u2019]s\b)"  # "a year earlier" is one period
# how often a thing is done ("audits compliance at least once a year") is no figure of each period
_NOT_HOW_OFTEN = r"(?<!\bonce )(?<!\btwice )(?<!\btimes )"
_EVERY = {  # "a quarterly dividend", "the monthly report" name no figure of every period: only the adverbs do
    "year": re.compile(rf"{_NOT_HOW_OFTEN}\b(?:a|each|every|per) (?:year|season)\b{_NOT_AGO}|\bannually\b", re.I),
    "quarter": re.compile(rf"{_NOT_HOW_OFTEN}\b(?:a|each|every|per) quarter\b{_NOT_AGO}", re.I),
    "month": re.compile(rf"{_NOT_HOW_OFTEN}\b(?:a|each|every|per) month\b{_NOT_AGO}", re.I),
}
_CUMULATIVE = re.compile(
    r"\b(?:(?<!up )to date|half[- ]year|first half|(?:six|nine) months (?:to|ended|ending))\b", re.I
)
# a quarter named without a year ("Quarter 1 figures were", "in the first quarter"): its title's year's
_BARE_QUARTER = re.compile(
    r"\b(?:quarter ([1-4])|Q([1-4])|(first|second|third|fourth) quarter)\b(?!,?\s*(?:of\s+)?(?:19|20)\d\d| last year)",
    re.I,
)
_QUARTER_BEFORE = re.compile(r"\bQ([1-4]) (?:of )?last year\b", re.I)


def _modifies(text: str, end: int) -> bool:
    """The name that ends at text[end] modifies the noun after it ("the Greyhollow mines"), in the sentence's parse."""
    last = next((t for t in parse(text) if t.idx < end <= t.idx + len(t)), None)
    return last is not None and last.dep_ in ("compound", "amod", "nmod") and last.head.i > last.i


def headings(text: str) -> list[str]:
    """A chunked document's title and headings: its short lines that end in no stop ("2. Why this version has
    changed"), not its sentences, list items or flattened tables."""
    return [ln for ln in text.splitlines() if ln.strip() and len(ln.split()) <= 12 and ln.rstrip()[-1] not in ".:;?!"]


@dataclass
class Evidence:
    """What was searched and what came closest; `answered_by` is the sentence that answers, when one does."""

    pattern: str
    naming: int  # sentences that name the qualifier
    closest: list[tuple[str, str, float]] = field(default_factory=list)  # (chunk id, sentence, share of attribute)
    answered_by: tuple[str, str] | None = None  # (chunk id, sentence)
    reason: str = ""  # why it is absent, where a search says it in its own words (changes.py)

    @property
    def absent(self) -> bool:
        return self.answered_by is None

    def why(self, qualifier: str) -> str:
        if self.answered_by:
            return f"the corpus pairs {qualifier!r} with the question's words: {self.answered_by[1]!r}"
        if self.reason:
            return self.reason
        if not self.naming:
            return f"no document of the corpus names {qualifier!r}"
        best = self.closest[0][2] if self.closest else 0.0
        return (
            f"{self.naming} sentence(s) name {qualifier!r} or stand in a document that does; none holds more than {best:.0%} of the question's words "
            f"by rarity (an answer needs {PAIRS:.0%}, or {PAIRS_WITH_VALUE:.0%} beside a value of the kind asked for)"
        )


class Corpus:
    """Every sentence of the current chunks, searched by pattern (a full scan: absence is a claim about all of it).

    A qualifier that names a document (its path, its title, a heading) may be what every sentence of it is said of
    ("Revenue for the quarter was ..." in q1-2023.md): such sentences count as naming it. One named only inside a
    sentence or a table (a policy's version history, "3.0 | 1 April 2019") does not."""

    def __init__(self, sentences: Iterable[Sentence], documents: dict[str, str], passages: Iterable[Sentence] = ()):
        self.sentences = list(sentences)  # prose: what a question may be made of
        self.searched = self.sentences + list(passages)  # and tables, lists, headings: what absence searches
        self.rows: list[Candidate] = []  # its tables' measures (tables.row_candidates): questions made of them
        self.documents = documents  # doc id -> its text as chunked (the path is part of what names a qualifier)
        self.titles = {d: next((ln for ln in text.splitlines() if ln.strip()), "") for d, text in documents.items()}
        self.periods = {  # by title, or by the heading under an organisation's name (`titled` tells them apart)
            d: p for d, text in documents.items() if (p := document_period(document_title(text), text)) is not None
        }
        self._titled = {  # a first line's period, not a term's: where undated figures are asked of another period
            d: p
            for d, p in self.periods.items()
            if document_period(self.titles[d]) is not None
            and not termly(self.titles[d])
            and not named_by_year(self.titles[d])
        }
        self.by_chunk: dict[str, list[Sentence]] = {}
        self.df: dict[str, int] = {}
        self._groups: dict[str, frozenset[str]] = {}
        self._cased: dict[str, set[bool]] | None = None  # word -> its cases inside sentences (common_case)
        self._named: dict[str, set[bool]] | None = None  # word -> its cases after a lower-case word
        self._before: dict[Sentence, str] = {}  # year_before, read once per sentence (every search asks again)
        for s in self.searched:
            for w in s.words:
                self.df[w] = self.df.get(w, 0) + 1
            self.by_chunk.setdefault(s.chunk_id, []).append(s)

    def naming(
        self, pattern: re.Pattern[str], group: str, within: Iterable[Sentence] | None = None, kind: str = ""
    ) -> list[Sentence]:
        """The sentences said of a qualifier: those that name it, and those of a document that names it which name
        no other qualifier of its group (a sentence that says "in 2023" is not said of the 2022 in its title). A
        document whose title names a period of the same kind (a quarterly report, for a quarter) states its figures
        for that period: it names another quarter only in a sentence that says so."""
        docs = {d for d, text in self.documents.items() if self._names(d, text, pattern, kind)}
        pool = self.searched if within is None else within
        return [
            s
            for s in pool
            if pattern.search(s.text)
            or (s.doc_id in docs and group not in self.groups_of(s.text))
            or pattern.search(self.year_before(s))
            or pattern.search(self.titles_quarter(s))
        ]

    def titles_quarter(self, s: Sentence) -> str:
        """A quarter the sentence names without its year ("Quarter 1 figures ... were"), as that quarter of the year
        its document's title names (the Q2 2023/24 report's "Quarter 1" is Q1 2023/24), each it names; '' where it
        names none."""
        title = self.periods.get(s.doc_id)
        bare = _BARE_QUARTER.findall(s.text) if title is not None else []
        year = re.search(r"(?:19|20)\d\d(?:[/-]\d\d)?", title.text) if bare and title is not None else None
        if year is None:
            return ""
        ns = [next(g for g in found if g) for found in bare]  # "Q1 Q2 Q3 YTD": each of them
        return "; ".join(f"Q{n if n.isdigit() else _ORDINALS.index(n.lower()) + 1} {year.group(0)}" for n in ns)

    def year_before(self, s: Sentence) -> str:
        """The period a year before the sentence's own, where the sentence names it by where it stands ("at the
        same time last year", "Q2 last year", or a level's change "from 8.4% to 7.6%", whose first value is the year
        before's): its own is the first period it names, or its document's title's; '' where it names none that way."""
        if s not in self._before:
            self._before[s] = self._year_before(s)
        return self._before[s]

    def _year_before(self, s: Sentence) -> str:
        last_year = _YEAR_BEFORE.search(s.text) is not None
        changed = _CHANGED_FROM.search(s.text)
        if not (last_year or changed):
            return ""
        if not last_year and changed and qualifiers(changed.group("after"), ("periods",)):
            return ""  # "rose from $40.1 million in 2022": the sentence names the period it changed from
        named = next(iter(qualifiers(s.text, ("periods",))), None)
        own = named or self.periods.get(s.doc_id)
        year = re.search(r"\d{4}", own.text) if own is not None else None
        if own is None or year is None:
            return ""
        before = shift_year(own.text, int(year.group(0)) - 1)
        quarter = _QUARTER_BEFORE.search(s.text)
        if quarter:  # "Q2 last year" in the third quarter's report: the second quarter, a year before
            n = int(quarter.group(1))
            before = re.sub(r"\bQ[1-4]\b", f"Q{n}", before)
            before = re.sub(r"(?i)\b(?:first|second|third|fourth)(?= quarter)", _ORDINALS[n - 1], before)
        return before

    def _names(self, doc_id: str, text: str, pattern: re.Pattern[str], kind: str) -> bool:
        title = self.periods.get(doc_id)
        if title is not None and _FAMILY.get(kind, kind) == _FAMILY.get(title.kind, title.kind):
            return bool(pattern.search(title.text))
        return bool(pattern.search(doc_id) or any(pattern.search(h) for h in headings(text)))

    def groups_of(self, text: str) -> frozenset[str]:
        """The kinds of qualifier a sentence or a document names, read once per text (every search asks again)."""
        if text not in self._groups:
            self._groups[text] = frozenset(q.group for q in qualifiers(text))
        return self._groups[text]

    def share(self, attribute: frozenset[str], words: frozenset[str]) -> float:
        """How much of the attribute a sentence holds, each word weighted by its rarity in the corpus (a word of every
        other sentence, like the company's name, says little about what a sentence is about). Words meet at four
        letters here ("shipments" and "shipped"): absence errs towards finding an answer."""
        attribute, words = _stems(attribute), _stems(words)
        weight = {w: math.log((len(self.searched) + 1) / (1 + self.df.get(w, 0))) + 0.1 for w in attribute}
        total = sum(weight.values())
        return sum(weight[w] for w in attribute & words) / total if total else 0.0

    def search(self, c: Candidate, qualifier: str, within: Iterable[Sentence] | None = None) -> Evidence:
        """Does any sentence under `qualifier` answer what `c` asks: half of its words, or a value of the kind asked
        for beside a quarter of them or beside every word of what the figure is of (`c.core`)? A figure stated for
        every period ("55 new titles a year") answers each: half of the words, or, in the candidate's own document,
        every word of what it is of. The closest three are kept as evidence."""
        pattern = forms(qualifier, c.qualifier.kind)
        naming = self.naming(pattern, c.qualifier.group, within, c.qualifier.kind)
        if c.label:  # a table's row asks for its measure: a sentence that does not say it ("visitors") answers none
            naming = [s for s in naming if _states_measure(c.core, s.words)]
        scored = sorted(((s, self.share(c.attribute, s.words)) for s in naming), key=lambda x: (-x[1], x[0].chunk_id))
        ev = Evidence(pattern.pattern, len(naming), [(s.chunk_id, s.text, share) for s, share in scored[:3]])
        if c.qualifier.kind in ("quarter", "q") and c.value.kind in ("count", "money"):  # Q1 = YTD - Q2
            lines = self.searched if c.label else [c.sentence]  # a sentence's measure is its own, not its subject's
            summed = next((s for s in lines if self._summed(c, s)), None)
            if summed is not None:
                ev.answered_by = (summed.chunk_id, summed.text)
                return ev
        core = _stems(c.core)
        every = _EVERY.get(_FAMILY.get(c.qualifier.kind, c.qualifier.kind))
        if every is not None and within is None:
            for s in self.searched:  # "publishes about 55 titles a year": every year's
                if every.search(s.text) and c.qualifier.group not in self.groups_of(s.text):
                    own = s.doc_id == c.sentence.doc_id and bool(core) and core <= _stems(s.words)  # "The press"
                    told = own or self.share(c.attribute, s.words) >= PAIRS
                    if told and _states_alike(c.value, s.text):
                        ev.answered_by = (s.chunk_id, s.text)
                        return ev
        for s, share in scored:
            alike = share >= PAIRS_WITH_VALUE or bool(core and core <= _stems(s.words))  # "Revenue ... was $56.9M"
            if share >= PAIRS or (alike and _states_alike(c.value, s.text)):
                ev.answered_by = (s.chunk_id, s.text)
                break
        return ev

    def common_case(self, question: str) -> str:
        """A capital a question took from the first word of its sentence ("What was Berth occupancy in May 2022?")
        lowered, where the corpus writes the word and the next in lower case inside its sentences and never with a
        capital there ("Berth N5" is a name, "berth occupancy" is not; "Riverside" keeps its capital wherever it
        stands)."""
        if self._cased is None:
            self._cased = {}
            for s in self.sentences:
                for m in re.finditer(r"(?<=\s)([A-Za-z][a-z]+)(?=\s+(\w+))", s.text):
                    key = f"{m.group(1).lower()} {m.group(2).lower()}"
                    self._cased.setdefault(key, set()).add(m.group(1)[0].isupper())
        words = question.split(" ")
        for i in range(1, len(words) - 1):
            w, key = words[i], f"{words[i].lower()} {words[i + 1].lower().strip('?,.;:')}"
            if w[:1].isupper() and w[1:].islower() and self._cased.get(key) == {False}:
                words[i] = w.lower()
        return " ".join(words)

    def _summed(self, c: Candidate, s: Sentence) -> bool:
        """Another line states the row's measure in a document that sums quarters ("Year to date (1 April to 30
        September)", "half-year"), or the trap itself sums them ("£5.4m in the quarter, giving £11.3m for the year to
        date"): one quarter is the sum less the others, so no quarter of it is unanswerable."""
        if s.text == c.sentence.text:
            return bool(_CUMULATIVE.search(s.text))
        if not _states_measure(c.core, s.words):
            return False
        return bool(_CUMULATIVE.search(self.documents.get(s.doc_id, "")))

    def titled(self, doc_id: str) -> Span | None:
        """The period a document's first line names, where its undated figures are asked of another period: not a
        heading under an organisation's name (its undated sentences are as often the organisation's as the
        period's), not a school's term ("in the term" is no year)."""
        return self._titled.get(doc_id)

    def as_written(self, name: str) -> str:
        """The name with "the" where the corpus mostly writes it so inside its sentences ("the Tarrowdale Courier";
        "Northmoor Air" stays bare); "the Greyhollow mines" is the mines', not the town's."""
        found = [
            m.group(1)
            for s in self.sentences
            for m in re.finditer(rf"(\w+)\W+{re.escape(name)}\b", s.text)
            if not _modifies(s.text, m.end())
        ]
        definite = sum(w.lower() == "the" for w in found)
        return f"the {name}" if name and definite > len(found) - definite else name

    def written_as_name(self, label: str) -> bool:
        """The corpus writes the label's first word with a capital inside running text (after a word in lower case:
        "at Thornby") and never in lower case, or its first two words so ("the Record Office", though "a record" is
        lower): a name, whose capital a question keeps."""
        words = label.lower().split()
        return any(self._cases().get(" ".join(words[:n])) == {True} for n in (1, 2) if len(words) >= n)

    def topic(self, title: str) -> bool:
        """The title names a topic in a place ("Tourism in Santa Irene", "Trams in Kravnice": words the corpus
        writes in lower case inside running text, then "in"), not a thing a figure is of ("Jazz Oudeveld")."""
        about = re.match(r"^(\w+)(?: \w+)? in [A-Z]", title)
        return about is not None and False in self._cases().get(about.group(1).lower(), set())

    def _cases(self) -> dict[str, set[bool]]:
        """Each word (and pair of words) the corpus writes after a word in lower case: with a capital, without, or
        both."""
        if self._named is None:
            self._named = {}
            word = r"([^\W\d_]{2,})\b"
            for s in self.sentences:
                for m in re.finditer(rf"(?<=[a-z,] ){word}(?:(?= {word}))?", s.text):
                    one, two = m.group(1), m.group(2)
                    self._named.setdefault(one.lower(), set()).add(one[0].isupper())
                    if two:
                        pair = f"{one} {two}".lower()
                        self._named.setdefault(pair, set()).add(one[0].isupper() and two[0].isupper())
        return self._named

    def neighbours(self, chunk_ids: Iterable[str]) -> list[Sentence]:
        return [s for cid in chunk_ids for s in self.by_chunk.get(cid, [])]

    def unnamed_answer(self, c: Candidate, retrieved: Iterable[Sentence]) -> Sentence | None:
        """A retrieved sentence (outside the trap's chunk) that states what is asked, where neither it nor its
        document names any qualifier of the kind: it may answer the question in words the search cannot read."""
        group = c.qualifier.group
        for s in retrieved:
            if s.chunk_id == c.sentence.chunk_id or group in self.groups_of(s.text):
                continue
            if group in self.groups_of(s.doc_id + "\n" + self.documents.get(s.doc_id, "")):
                continue
            if self.share(c.attribute, s.words) >= PAIRS and _states_alike(c.value, s.text):
                return s
        return None


def _stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(w if any(ch.isdigit() for ch in w) else w[:4] for w in words)


def _states_measure(core: frozenset[str], words: frozenset[str]) -> bool:
    """Half of the words of what a row measures ("Average weekly circulation"), one at least, are in the sentence."""
    held = len(_stems(core) & _stems(words))
    return held >= 1 and 2 * held >= len(core)


def _states_alike(value: Span, text: str) -> bool:
    """A value of the kind asked for; for a count, of the same thing counted ("1,247 robot arms" for "how many
    robot arms"; "2.34 million tonnes" for "how many tonnes")."""
    found = [v for v in values(text, []) if v.kind == value.kind]
    if value.kind != "count" or len(value.text.split()) < 2:
        return bool(found)
    noun = value.text.split()[-1][:4]
    scaled = re.search(rf"\d[\d,.]*\s(?:(?:million|billion|thousand)\s)?{re.escape(noun)}", text, re.I)
    return bool(scaled) or any(len(v.text.split()) > 1 and v.text.split()[-1][:4] == noun for v in found)


def agreeing(c: Candidate, corpus: Corpus) -> tuple[bool, list[str]]:
    """A positive's answer in exactly one place, or the same everywhere: every sentence that pairs the qualifier with
    the attribute states the same value (of the same kind) as the candidate's sentence."""
    others = []
    for s in corpus.naming(forms(c.qualifier.text, c.qualifier.kind), c.qualifier.group):
        if s.text == c.sentence.text:
            continue
        if corpus.share(c.attribute, s.words) < PAIRS:
            continue
        stated = [v.text for v in values(s.text, []) if v.kind == c.value.kind]
        if stated and normalize_text(c.value.text) not in {normalize_text(x) for x in stated}:
            others.append(s.text)
    return (not others, others)


def literal(pattern: str) -> str:
    """A search pattern as a person reads it (for the review sheet)."""
    return re.sub(r"\(\?<!\[[^\]]*\]\)|\(\?!\[[^\]]*\](?:\|[^)]*)?\)|\\b", "", pattern).replace("\\", "")
