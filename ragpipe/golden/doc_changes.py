"""Near-miss tests about changes: reference documentation dates what changed in a thing ("Changed in version 3.4:
The strict parameter was removed.", under the definition of `html.parser.HTMLParser`). Asked what changed in the same
thing in a neighbouring version that has no such note, a careless reader gives the note's change: the note is the
trap and its change the trap's value. Pure text; the thing a note is said of is the definition it stands under."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ragpipe.golden.absence import Evidence
from ragpipe.golden.near_miss import Candidate, Sentence, Span, sentences_of
from ragpipe.reading import content_words

# "Changed in version 3.4: ...", "New in version 3.6: the fold argument.", "Deprecated since version 3.9: ..."
_NOTE = re.compile(
    r"^(Changed in|New in|Deprecated since|Added in) version (\d+\.\d+)(?:\.\d+)?(?:: (?P<change>.+)|\.)$"
)
_ASKED = {
    "Changed in": "What changed in {subject} in version {version}?",
    "New in": "What was added to {subject} in version {version}?",
    "Added in": "What was added to {subject} in version {version}?",
    "Deprecated since": "What was deprecated in {subject} in version {version}?",
}
# A definition line of reference documentation (Sphinx's permalink mark ends it): "class zipfile.ZipFile(file,
# mode='r')¶", "os.pwrite(fd, str, offset, /)¶", "move_to_end(key, last=True)¶", "os.RWF_HIPRI¶".
_DEFINITION = re.compile(
    r"^(?P<class>class |exception )?(?:(?:abstractmethod|classmethod|staticmethod|async|coroutine|awaitable) )*"
    r"(?P<name>[A-Za-z_][\w.]*)(?:\(.*\))?(?: ->.*)?\s*¶$"
)
_CHANGE_WORDS = (3, 30)  # a change said in a few words to a sentence; a longer one is a paragraph, no value


@dataclass
class _Scope:
    """Where a document is while it is read: the definition a note stands under, and the class around it."""

    subject: str = ""
    klass: str = ""
    chunk_id: str = ""

    def enter(self, name: str, is_class: bool, chunk_id: str) -> None:
        if is_class:
            self.klass = name
        elif "." in name:
            self.klass = ""  # a module-level definition ends the class
        self.subject = f"{self.klass}.{name}" if self.klass and "." not in name and not is_class else name
        self.chunk_id = chunk_id


@dataclass
class Notes:
    """Every change note of a corpus: those with a change (the candidates) and the versions each subject's notes
    name (all notes, "New in version 3.7." included)."""

    candidates: list[Candidate] = field(default_factory=list)
    versions: dict[str, set[str]] = field(default_factory=dict)  # subject -> "major.minor" of each of its notes
    added: dict[str, str] = field(default_factory=dict)  # subject -> the version it was new in
    latest: tuple[int, ...] = (0,)  # the newest version any note names: the documentation's own

    naming: dict[str, list[Sentence]] = field(default_factory=dict)  # version -> the sentences that name it

    def of(self, subject: str) -> set[str]:
        return self.versions.get(subject, set())

    def naming_version(self, version: str, sentences: list[Sentence]) -> list[Sentence]:
        """The sentences that name a version, searched once per version (many notes ask about the same one)."""
        if version not in self.naming:
            pattern = version_pattern(version)
            self.naming[version] = [s for s in sentences if pattern.search(s.text)]
        return self.naming[version]


def change_notes(rows: Iterable[tuple[str, str, str]]) -> Notes:
    """The change notes of chunks given in document order ((chunk id, doc id, text)). A note is a candidate only in
    the chunk of the definition it stands under: a passage that does not say what changed is no trap (and retrieval
    finds the thing and its note together)."""
    notes = Notes()
    doc, scope = "", _Scope()
    found: list[tuple[Candidate, bool]] = []
    for chunk_id, doc_id, text in rows:
        if doc_id != doc:
            doc, scope = doc_id, _Scope()
        for line in text.split("\n"):
            line = line.strip()
            d = _DEFINITION.match(line)
            if d and not _heading(line):
                scope.enter(d.group("name"), bool(d.group("class")), chunk_id)
                continue
            if line.endswith("¶"):  # a section heading: what follows is no longer said of the definition above
                scope = _Scope()
                continue
            note = _NOTE.match(line)
            if not note or not scope.subject:
                continue
            version = note.group(2)
            named = {v.group(1) for v in re.finditer(r"(?<![\d.])(\d+\.\d+)(?:\.\d+)?(?![\d.]*\d)", line)}
            notes.versions.setdefault(scope.subject, set()).update(named)  # "New in 3.9: backported to 3.7 and 3.8"
            notes.latest = max(notes.latest, _number(version))
            if note.group(1) == "New in" and not note.group("change"):
                notes.added.setdefault(scope.subject, version)
            c = _candidate(chunk_id, doc_id, line, scope.subject)
            if c:
                found.append((c, chunk_id == scope.chunk_id))
    once = Counter(c.sentence.text for c, _ in found)  # a quote found twice stamps nothing
    notes.candidates = [c for c, near in found if near and once[c.sentence.text] == 1]
    return notes


def _heading(line: str) -> bool:
    """A one-word section title ("Flags¶", "Examples¶") has a definition's shape but names no code: no dot, no
    brackets, a capital and then lower case (a constant is upper case, an attribute lower)."""
    return bool(re.fullmatch(r"[A-Z][a-z]+\s*¶", line))


def _candidate(chunk_id: str, doc_id: str, line: str, subject: str) -> Candidate | None:
    """The note's first sentence is the trap; its change, in a few words of prose, the value."""
    first = next(sentences_of(chunk_id, doc_id, line), None)
    note = _NOTE.match(first.text) if first else None
    change = note.group("change") if note else None
    if not first or not note or not change:
        return None
    change = change.rstrip(".")
    if not _CHANGE_WORDS[0] <= len(change.split()) <= _CHANGE_WORDS[1]:
        return None
    start = note.start("change")
    version = Span("version", f"version {note.group(2)}", note.start(2) - len("version "), note.end(2), "changes")
    value = Span("change", change, start, start + len(change))
    return Candidate(first, value, version, frozenset(content_words(subject)), subject)


def change_siblings(c: Candidate, notes: Notes, named: Iterable[str]) -> list[str]:
    """Neighbouring versions to ask about, nearest first: versions the corpus names, none newer than the
    documentation's own or older than the subject, none that the subject's notes name."""
    major, minor = _number(c.qualifier.text.split()[-1])[:2]
    known = set(named)
    added = _number(notes.added.get(c.subject, "0"))
    out = []
    for d in (1, -1, 2, -2):
        v = f"{major}.{minor + d}"
        if minor + d >= 0 and v in known and added <= _number(v) <= notes.latest and v not in notes.of(c.subject):
            out.append(f"version {v}")
    return out


def change_question(c: Candidate, version: str) -> str:
    note = _NOTE.match(c.sentence.text)
    if note is None:
        raise ValueError(f"not a change note: {c.sentence.text[:80]!r}")  # candidates are read with _NOTE
    return _ASKED[note.group(1)].format(subject=c.subject, version=version.split()[-1])


def search_change(c: Candidate, version: str, notes: Notes, sentences: list[Sentence]) -> Evidence:
    """Does the corpus say what changed in the subject in `version`? Its notes do not name the version (siblings
    are chosen so); a sentence anywhere that names the version and the subject may."""
    number = version.split()[-1]
    pattern = version_pattern(number)
    naming = notes.naming_version(number, sentences)
    answer = next(change_answer(c, number, naming), None)
    own = ", ".join(sorted(notes.of(c.subject), key=_number))
    reason = (
        f"the change notes under {c.subject} name version(s) {own}, not {number}; none of the {len(naming)} "
        f"sentence(s) of the corpus that name {number} names {c.subject.rsplit('.', 1)[-1]}"
    )
    found = (answer.chunk_id, answer.text) if answer else None
    return Evidence(pattern.pattern, len(naming), [], found, reason)


def version_pattern(version: str) -> re.Pattern[str]:
    """A version as the corpus may write it: 3.9 also as 3.9.1, never as 3.90 or 13.9."""
    return re.compile(rf"(?<![\d.]){re.escape(version)}(?!\d)")


def change_answer(c: Candidate, version: str, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
    """Sentences that may say what changed in the subject in `version`: one that names the version and the
    subject's own name (its last part, "DictReader" of "csv.DictReader"), wherever it stands."""
    pattern, leaf = version_pattern(version), re.escape(c.subject.rsplit(".", 1)[-1])
    named = re.compile(rf"(?<![\w.]){leaf}(?!\w)")
    return (s for s in sentences if pattern.search(s.text) and named.search(s.text))


def _number(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))
