"""Whether a clause's subject can stand in a question on its own: it names what it is about (not a pronoun, not
"these patients" or "its budget", not "the figure" of something unsaid), and no aside parts it from its verb. Read
over spaCy's dependency parse by asking.py, which builds the question."""

from __future__ import annotations

from typing import Any

_POINTING = {"this", "these", "those", "such", "that"}  # "of these patients": the referent stayed in the document
_REFERRING = _POINTING | {"its", "their", "our", "his", "her"}
_STANDING_IN = {"one", "each", "both", "either", "neither", "some", "many", "most", "all", "none"}  # "One is ..."
_PRONOUNS = {"it", "they", "them", "he", "she", "him", "her", "this", "these", "those"}
_GENERIC = {"figure", "number", "total", "rate", "share", "proportion", "amount", "level", "result", "score", "value"}


def doc_spaced(t: Any) -> bool:
    """A dash with a space before it ("plants - both"), not a hyphen inside a name ("Caldwell-Ferris")."""
    return bool(t.doc[t.i - 1].whitespace_)


def points_back(tokens: list[Any]) -> bool:
    """A determiner or a pronoun that points back to something the question does not say ("these patients", "this
    scheme", "the display that accompanied it")."""
    pointing = any(t.lower_ in _POINTING and t.dep_ in ("det", "predet", "amod") for t in tokens)
    return pointing or any(t.pos_ == "PRON" and t.lower_ in _PRONOUNS for t in tokens)  # "... accompanied it"


def aside_after(subject: Any, verb: Any) -> bool:
    """Between the subject and its verb stands an aside set off by a comma ("absence, meaning ..., accounted"), or
    the subject holds one ("Underlying commercial traffic, excluding the wind farm, rose": which wind farm?)."""
    commas = [t for t in subject.doc[subject.left_edge.i : verb.i] if t.text == ","]
    return any(not t.nbor(1).like_num for t in commas)  # "at September 30, 2023" is a date, no aside


def names_its_referent(subject: Any) -> bool:
    """The subject is a noun phrase that says what it is about: not a pronoun ("it", "they", "we") and not one that
    points back ("its budget", "this plant", "the station's crew")."""
    words = [t for t in subject.subtree]
    if subject.pos_ == "PRON" or subject.lower_ in _REFERRING or subject.lower_ in _STANDING_IN:
        return False
    if subject.lower_ in _GENERIC and all(t.i == subject.i or t.dep_ == "det" for t in words):
        return False  # "the figure", "the total": of what?
    if any(t.dep_ == "poss" and t.pos_ == "NOUN" and any(d.lower_ == "the" for d in t.children) for t in words):
        return False  # "the station's lifeboats": which station?
    if any(t.text in (":", "-", "\u2013", "\u2014") and doc_spaced(t) for t in words):
        return False  # "Improving - Diagnostic waits": a heading run into its list item
    return not any(t.lower_ in _REFERRING and t.dep_ in ("det", "poss") and t.head == subject for t in words)
