"""What a clause says of its value, read from the same parse as the questions (asking.py): the verb that states
it, the subject it is stated of, and whether a period in the sentence belongs to that clause."""

from __future__ import annotations

from typing import Any

from ragpipe.golden.asking import _EVENTS, _LEVELS, _SET_AT, _SUBJECTS, _head, _subject, _tokens, parse

# What an organisation's output is stated of: its name, or the noun that stands for it ("the company", "the Trust")
_ORGANISATIONS = set(
    "company firm group business corporation trust charity council authority service agency board society association "
    "university college school hospital hospice museum gallery library theatre club team airline airport port "
    "operator network utility bank brewery studio orchestra broadcaster newspaper force department".split()
)
TEMPLATES = {
    "level": "what was <measure>",
    "count": "how many <things> (how much money) were <done>",
    "output": "how many <things> did <organisation> <do>",
}


def template(text: str, value: tuple[int, int]) -> str:
    """The template (TEMPLATES) that a question of the value at text[start:end] fills, as a table's row is asked:
    'level', the value is what a measure was, reached or had ("Capital spending was £2.1 million", "The general
    reserve rose to £8.6 million", "The scheme had 87 referrals"); 'count', the counted things or the money are the
    subject of a passive ("50 older vehicles were withdrawn", "£14,250 in surcharges was paid into the fund");
    'output', an organisation, or a named part of one, did them ("Halvorsen shipped 1,184 robot arms", "ABS Local
    published 21,400 news stories"). '' for any other statement: what a cause, a person or an event did ("Ground
    movement caused 1,402 bursts", "Officers removed 3,400 heaters from sale after broadcast") reads as one
    happening, and its question as the sentence taken apart."""
    doc = parse(text)
    tokens = _tokens(doc, value)
    if not tokens:
        return ""
    phrase = _head(tokens)
    moved = phrase.head if phrase.dep_ == "pobj" else phrase
    verb = moved.head
    if phrase.dep_ in _SUBJECTS:  # things counted, not a share ("78% were answered": of what?)
        counted = (phrase.pos_ == "NOUN" or tokens[0].text in "£$€") and tokens[-1].text not in ("%", "percent")
        return "count" if counted and any(c.dep_ == "auxpass" for c in verb.children) else ""
    if verb.lemma_ in _SET_AT and moved.lower_ == "at":
        return "level"  # "Tuition was set at $79,460"
    subject = _subject(verb)
    if subject is None or subject.dep_ != "nsubj":
        return ""
    of_what = any(t.dep_ == "prep" and t.lower_ == "of" for t in phrase.children)  # "1,243 km of adopted road"
    level = moved.i == phrase.i and phrase.dep_ in ("attr", "acomp", "dobj") and verb.lemma_ in {"be", "have"} | _LEVELS
    if level or (moved.lower_ in ("to", "at", "by") and verb.lemma_ in _LEVELS):  # "rose to £8.6 million"
        return "" if of_what else "level"  # "grew to 1,243 km of adopted road": "what was the network?"
    named = subject.pos_ == "PROPN" or subject.ent_type_ == "ORG" or subject.lemma_.lower() in _ORGANISATIONS
    return "output" if phrase.dep_ == "dobj" and named else ""


def governing_verb(text: str, start: int, end: int) -> str:
    """The lemma of the verb that states the value at text[start:end] ("awarded ... for $27.4 million": "award"),
    '' when the parse finds none."""
    t = _verb_of(parse(text), (start, end))
    return t.lemma_.lower() if t is not None else ""


def _verb_of(doc: Any, span: tuple[int, int]) -> Any:
    """The nearest verb above the first token of a character span, or None."""
    t = next(iter(_tokens(doc, span)), None)
    while t is not None and t.pos_ not in ("VERB", "AUX"):
        t = None if t.head.i == t.i else t.head
    return t


def said_of(text: str, value: tuple[int, int], qualifier: tuple[int, int]) -> bool:
    """The qualifier belongs to the clause that states the value: "by the time the school closed in July 1945, more
    than 2,000 pilots had trained there" does not state the pilots of July 1945 (the year is the closing's)."""
    doc = parse(text)
    v, q = _verb_of(doc, value), _verb_of(doc, qualifier)
    if v is None or q is None:
        return True  # no verb to tell clauses apart: the text decides (_said_of in near_miss.py)
    if not (v.i == q.i or (v.dep_ in ("xcomp", "conj") and v.head.i == q.i)):
        return False
    return not _inside_other_phrase(doc, q, value, qualifier)


def _inside_other_phrase(doc: Any, verb: Any, value: tuple[int, int], qualifier: tuple[int, int]) -> bool:
    """The qualifier modifies a noun that is neither the subject nor the value's phrase, in a phrase before the verb
    or naming an event: "at the start of the pandemic in March 2020, the airline cut its schedule by 85%" dates the
    pandemic, not the cut (after the verb, a parse attaches a period to a noun as often as to the verb)."""
    subject = _subject(verb)
    allowed = {t.i for t in subject.subtree} if subject is not None else set()
    allowed |= {t.i for t in _tokens(doc, value)}
    tokens = [t for t in doc if qualifier[0] <= t.idx < qualifier[1]]
    t = _head(tokens) if tokens else None
    while t is not None and t.i != verb.i and t.head.i != t.i:
        t = t.head
        other = t.i < verb.i or t.lemma_.lower() in _EVENTS  # a fronted phrase, or an event ("... after the flood")
        if other and t.i != verb.i and t.pos_ in ("NOUN", "PROPN") and t.i not in allowed and t not in tokens:
            value_heads = {u.head.i for u in _tokens(doc, value)}
            if t.i not in value_heads:
                return True
    return False


def names_event(text: str, value: tuple[int, int]) -> bool:
    """The value is stated of an event ("A breach of the embankment ... drained 3 miles", "The fire destroyed 40
    homes"), or its clause names one ("includes £310,000 from insurers for the fire"): what happened once, not a
    measure of its period."""
    verb = _verb_of(parse(text), value)
    events = [t for t in verb.subtree if t.lemma_.lower() in _EVENTS] if verb is not None else []
    return any(t.pos_ == "NOUN" and t.dep_ != "compound" for t in events)  # not "fire alarms", "Fire Control"


def decided(text: str, value: tuple[int, int]) -> bool:
    """The value is what a named thing was set to, in the passive ("the Tenancy Sustainment Fund was increased to
    £250,000"): a decision taken once, not a measure that changes by itself ("Arrears rose by £190,000") or an amount
    paid ("£14,250 in surcharges was paid into the Community Fund", where the value is the subject)."""
    verb = _verb_of(parse(text), value)
    subject = _subject(verb) if verb is not None else None
    if subject is None or subject.dep_ != "nsubjpass":
        return False
    phrase = list(subject.subtree)
    return not any(value[0] <= t.idx < value[1] for t in phrase) and any(t.pos_ == "PROPN" for t in phrase)


def core_words(text: str, value: tuple[int, int], qualifier: tuple[int, int]) -> str:
    """What the figure is of, in the sentence's words: the subject that the value is stated of ("Revenue for the
    first quarter of 2024 was $50.2 million": "Revenue"), or, where the value is the subject, what follows it in its
    phrase ("74.2% of patients": "of patients"); the qualifier left out. '' when the parse finds neither."""
    doc = parse(text)
    tokens = _tokens(doc, value)
    if not tokens:
        return ""
    phrase = _head(tokens)
    verb = _verb_of(doc, value)
    if phrase.dep_ in _SUBJECTS or verb is None:
        words = [t for t in phrase.subtree if t not in tokens]
    else:
        subject = _subject(verb)
        words = list(subject.subtree) if subject is not None else []
    return " ".join(t.text for t in words if not (qualifier[0] <= t.idx < qualifier[1]))
