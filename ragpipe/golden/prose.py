"""What a person can be asked: a trap sentence must be running prose (not a flattened table, a command line or a
fragment), and the question made of it must read as one."""

from __future__ import annotations

import re
from typing import Any

from ragpipe.golden.asking import parser

_WORD = re.compile(r"^[(\"'“‘]?[A-Za-z][A-Za-z'’-]*[)\"'”’,.;:?]*$")
_CODE_CHARS = re.compile(r"[=/\\{}\[\]<>|#@~^*_•⇒]")


def askable(text: str) -> bool:
    """A sentence a question can be made of: it opens with a capital and ends with a full stop, 8-50 words, mostly
    words (not a flattened table, a command line, a list of dates), no code characters and few numbers."""
    tokens = text.split()
    if not (text[0].isupper() and text.endswith(".") and 8 <= len(tokens) <= 50) or _CODE_CHARS.search(text):
        return False
    numbers = sum(any(ch.isdigit() for ch in t) for t in tokens)
    return numbers <= 3 and sum(bool(_WORD.match(t)) for t in tokens) >= 0.8 * (len(tokens) - numbers)


# A question word spliced into a phrase instead of asking it: inside a noun phrase ("the Treaty of where",
# "a group of who", "the how much project"), or before a number that qualified the value ("under what 1974"); a question cut at an
# abbreviation ("on the banks of the St?"), or opening with a pronoun whose referent stayed in the document.
_SPLICED = re.compile(
    r"\b(?:of|the|a|an)\s+(?:where|who|when)\b|\b(?:the|a|an)\s+(?:how (?:much|many)|what|which)\b|"
    r"\b(?:what|where|who|whom|which)\s+\d|\b[A-Z][a-z]{0,2}\?$|"
    r"^(?:It|They|This|These|He|She)\s"
)


def readable(asked: str) -> bool:
    """A question a person could read: five words or more with a finite verb ("Following the defeat of what in
    1815?" has none), opening with a word and not with a conjunction or a relative ("Which had been captured ..."),
    its brackets and quotes closed, its question word asking a whole phrase (_SPLICED)."""
    pairs = [("(", ")"), ("“", "”"), ("[", "]")]
    return (
        len(asked.split()) >= 5
        and not _SPLICED.search(asked)
        and bool(re.match(r"[A-Z][a-z]*\b", asked))
        and not re.match(r"(?:And|But|Or|That|Whose|While|Whereas|Which (?!version\b)[a-z]+)\b", asked)
        and asked.count('"') % 2 == 0
        and all(asked.count(a) == asked.count(b) for a, b in pairs)
        and any(t.tag_ in ("VBD", "VBZ", "VBP", "MD") for t in english()(asked, disable=["ner", "parser"]))
    )


def english() -> Any:
    """spaCy's small English pipeline, loaded once and shared with the questions' parser (asking.py): its entities
    name the values, its tags find the verb; each caller disables what it does not read."""
    return parser()
