"""Needles (five types), their distractors, and the questions and prompts that ask for them."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------------------- needles
_SYLL = [
    "ar",
    "bel",
    "cor",
    "dun",
    "el",
    "fen",
    "gar",
    "hol",
    "is",
    "jor",
    "kel",
    "lor",
    "mar",
    "nev",
    "or",
    "pel",
    "quin",
    "ros",
    "sal",
    "tor",
    "ul",
    "vel",
    "wen",
    "yar",
    "zan",
    "bri",
    "dra",
    "tev",
    "mon",
    "sk",
]
_PLACE_SUFFIX = ["by", "wick", "holm", "mere", "stead", "ford"]
_SPECIES = ["heron", "tortoise", "ferret", "magpie", "salamander", "lynx", "otter", "kestrel", "ibex", "axolotl"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _word(rng: random.Random, n: int = 2) -> list[str]:
    return [rng.choice(_SYLL) for _ in range(n)]


def _cap(parts: list[str]) -> str:
    return "".join(parts).capitalize()


def _near(parts: list[str], rng: random.Random) -> list[str]:
    """A near-miss invented word: the same syllables but the last one."""
    other = [s for s in _SYLL if s != parts[-1]]
    return parts[:-1] + [rng.choice(other)]


def _person(rng: random.Random) -> tuple[list[str], list[str]]:
    return _word(rng, rng.choice((2, 3))), _word(rng, 2)


def _name(p: tuple[list[str], list[str]]) -> str:
    return f"{_cap(p[0])} {_cap(p[1])}"


@dataclass(frozen=True)
class Reasoning:
    kind: str  # compare | order | negate
    question: str
    expected: str  # "yes" | "no" | a name


@dataclass(frozen=True)
class Needle:
    type: str
    key: str  # what the question is about (a place, a vault, a person, a table)
    fields: dict[str, str]  # the expected answer, field by field
    parts: tuple[str, ...]  # the inserted texts: one sentence, two sentences (cross-sentence) or a table
    surface: int  # which of the type's surface expressions
    question: str
    rewritten: str
    reasoning: Reasoning
    wrong: tuple[
        tuple[str, str, str], ...
    ] = ()  # (where, field, value): near-miss values inside this needle (table rows)

    @property
    def text(self) -> str:
        return " ".join(self.parts)


SCHEMAS: dict[str, dict[str, str]] = {  # field -> JSON type, per needle type
    "proper_noun": {"name": "string"},
    "numeric": {"code": "integer"},
    "negative": {"day": "string"},
    "cross_sentence": {"pet_name": "string", "species": "string"},
    "table_cell": {"crates": "integer", "inspector": "string"},
}


def json_schema(needle_type: str, with_quote: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {f: {"type": [t, "null"]} for f, t in SCHEMAS[needle_type].items()}
    if with_quote:
        props = {"quote": {"type": ["string", "null"]}, **props}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _pick(rng: random.Random, choices: list[str], not_value: str | None) -> str:
    return rng.choice([c for c in choices if c != not_value])


def _proper_noun(rng: random.Random, key_parts: Any, avoid: dict[str, str], surface: int) -> tuple[Needle, Any]:
    """A lighthouse keeper: who keeps the lighthouse of a place (a name; the follow-up negates it or not)."""
    kp = _near(key_parts, rng) if key_parts else _word(rng, 2) + [rng.choice(_PLACE_SUFFIX)]
    place = "Port " + _cap(kp)
    name = _name(_person(rng))
    while name == avoid.get("name"):
        name = _name(_person(rng))
    text = [
        f"The lighthouse keeper of {place} is {name}.",
        f"{name} keeps the lighthouse at {place}.",
        f"At {place}, the lighthouse is kept by {name}.",
    ][surface]
    other = _name(_person(rng)) if rng.random() < 0.5 else name
    return Needle(
        "proper_noun",
        place,
        {"name": name},
        (text,),
        surface,
        f"Who is the lighthouse keeper of {place}?",
        f"Name the person who keeps the lighthouse at {place}.",
        Reasoning(
            "negate",
            f"Is it true that {other} is the lighthouse keeper of {place}?",
            "yes" if other == name else "no",
        ),
    ), kp


def _numeric(rng: random.Random, key_parts: Any, avoid: dict[str, str], surface: int) -> tuple[Needle, Any]:
    """A vault's access code (seven digits; the follow-up compares it with a threshold)."""
    kp = _near(key_parts, rng) if key_parts else _word(rng, 2)
    vault = f"{_cap(kp)} vault"
    code = str(rng.randint(1_000_000, 9_999_999))
    while code == avoid.get("code"):
        code = str(rng.randint(1_000_000, 9_999_999))
    text = [
        f"The access code of the {vault} is {code}.",
        f"To open the {vault}, enter the access code {code}.",
        f"{code} is the access code that opens the {vault}.",
    ][surface]
    threshold = int(code) + rng.choice((-1, 1)) * rng.randint(1, 500_000)
    return Needle(
        "numeric",
        vault,
        {"code": code},
        (text,),
        surface,
        f"What is the access code of the {vault}?",
        f"Which number opens the {vault}?",
        Reasoning(
            "compare",
            f"Is the access code of the {vault} greater than {threshold}?",
            "yes" if int(code) > threshold else "no",
        ),
    ), kp


def _negative(rng: random.Random, key_parts: Any, avoid: dict[str, str], surface: int) -> tuple[Needle, Any]:
    """The weekday a ferry does not sail (the follow-up asks about a day it does or does not)."""
    kp = _near(key_parts, rng) if key_parts else _word(rng, 2) + [rng.choice(_PLACE_SUFFIX)]
    place = _cap(kp)
    day = _pick(rng, _DAYS, avoid.get("day"))
    text = [
        f"The ferry from {place} does not sail on {day}s.",
        f"On {day}s no ferry leaves {place}.",
        f"Every day except {day}, the ferry from {place} sails.",
    ][surface]
    asked = day if rng.random() < 0.5 else _pick(rng, _DAYS, day)
    return Needle(
        "negative",
        place,
        {"day": day},
        (text,),
        surface,
        f"On which day of the week does the ferry from {place} not sail?",
        f"Which weekday has no ferry departing from {place}?",
        Reasoning("negate", f"Does the ferry from {place} sail on {asked}s?", "no" if asked == day else "yes"),
    ), kp


def _cross_sentence(rng: random.Random, key_parts: Any, avoid: dict[str, str], surface: int) -> tuple[Needle, Any]:
    """A curator's pet, across two sentences: the person in one, the animal in the other."""
    if key_parts:
        kp = (_near(key_parts[0], rng), key_parts[1])  # same surname, near-miss first name
    else:
        kp = _person(rng)
    person = _name(kp)
    museum = f"{_cap(_word(rng, 2))} Museum"
    species = _pick(rng, _SPECIES, avoid.get("species"))
    pet = _cap(_word(rng, 2))
    while pet == avoid.get("pet_name"):
        pet = _cap(_word(rng, 2))
    first = [
        f"{person} was appointed curator of the {museum}.",
        f"The {museum} named {person} as its curator.",
        f"Since the spring, {person} has been the curator of the {museum}.",
    ][surface]
    second = [
        f"The curator of the {museum} keeps a {species} named {pet}.",
        f"A {species} called {pet} belongs to the curator of the {museum}.",
        f"The curator of the {museum} owns a {species}, and its name is {pet}.",
    ][surface]
    asked = species if rng.random() < 0.5 else _pick(rng, _SPECIES, species)
    return Needle(
        "cross_sentence",
        person,
        {"pet_name": pet, "species": species},
        (first, second),
        surface,
        f"What is the name and species of the animal kept by {person}?",
        f"Which animal does {person} keep, and what is it called?",
        Reasoning("compare", f"Is the animal kept by {person} a {asked}?", "yes" if asked == species else "no"),
    ), kp


def _table_cell(rng: random.Random, key_parts: Any, avoid: dict[str, str], surface: int) -> tuple[Needle, Any]:
    """Crates and inspector of one depot in a Markdown ledger (the other rows are wrong values)."""
    kp = (
        (_near(key_parts[0], rng), key_parts[1])
        if key_parts
        else (_word(rng, 2), [_cap(_word(rng, 2)) for _ in range(4)])
    )
    title = f"{_cap(kp[0])} depot ledger"
    depots = list(kp[1])
    target = rng.randrange(4) if not key_parts else key_parts[2]
    crates = [rng.randint(100, 999) for _ in depots]
    while str(crates[target]) == avoid.get("crates"):
        crates[target] = rng.randint(100, 999)
    inspectors = [_cap(_word(rng, 2)) for _ in depots]
    while inspectors[target] == avoid.get("inspector"):
        inspectors[target] = _cap(_word(rng, 2))
    cols = [("Depot", depots), ("Crates", [str(c) for c in crates]), ("Inspector", inspectors)]
    order = [(0, 1, 2), (0, 2, 1), (2, 0, 1)][surface]
    head = "| " + " | ".join(cols[i][0] for i in order) + " |"
    rows = ["| " + " | ".join(cols[i][1][r] for i in order) + " |" for r in range(4)]
    table = "\n".join([f"{title}:", head, "|" + "---|" * 3, *rows])
    depot = depots[target]
    other = rng.choice([i for i in range(4) if i != target])
    wrong = tuple(
        (f"row {depots[r]}", f, v)
        for r in range(4)
        if r != target
        for f, v in (("crates", str(crates[r])), ("inspector", inspectors[r]))
    )
    more = depot if crates[target] > crates[other] else depots[other]
    return Needle(
        "table_cell",
        title,
        {"crates": str(crates[target]), "inspector": inspectors[target]},
        (table,),
        surface,
        f"According to the {title}, how many crates are at the {depot} depot, and who inspects it?",
        f"In the {title}, what crate count and inspector are listed for {depot}?",
        Reasoning("order", f"In the {title}, which depot holds more crates: {depot} or {depots[other]}?", more),
        wrong,
    ), (kp[0], kp[1], target)


_MAKERS = {
    "proper_noun": _proper_noun,
    "numeric": _numeric,
    "negative": _negative,
    "cross_sentence": _cross_sentence,
    "table_cell": _table_cell,
}


def make_needle(
    needle_type: str, rng: random.Random, key_parts: Any = None, avoid: dict[str, str] | None = None
) -> tuple[Needle, Any]:
    """One needle of a type. `key_parts` given: a near miss of that key (a distractor), with values unlike `avoid`."""
    avoid = avoid or {}
    surface = rng.randrange(3)
    if needle_type not in _MAKERS:
        raise ValueError(f"unknown needle type {needle_type!r}")
    return _MAKERS[needle_type](rng, key_parts, avoid, surface)


def make_needles(needle_type: str, seed: int, n_distractors: int) -> tuple[Needle, list[Needle]]:
    """The needle and its near-miss distractors (same template, a near-miss key, other values)."""
    rng = random.Random(seed)
    needle, kp = make_needle(needle_type, rng)
    distractors = [make_needle(needle_type, rng, key_parts=kp, avoid=needle.fields)[0] for _ in range(n_distractors)]
    # A near miss must not collide with the needle's own key.
    distractors = [d for d in distractors if d.key != needle.key]
    return needle, distractors


# ------------------------------------------------------------------------------------------------- insertion
@dataclass(frozen=True)
class Placement:
    text: str  # the haystack with every insertion
    char: int  # where the needle (its first part) starts
    offset_requested: int  # token offset asked for (depth x haystack tokens)
    offset: int  # token offset where the needle actually starts (after snapping to a sentence boundary)
    depth: float  # actual depth: tokens before the needle / haystack tokens without the needle, in percent
    offset2: int | None  # cross-sentence: the second sentence's token offset
    n_tokens: int  # tokens of the whole text


# ------------------------------------------------------------------------------------------------- questions
def question_text(needle: Needle, method: str) -> str:
    return needle.rewritten if method == "rewritten" else needle.question


def structured_prompt(needle: Needle, method: str, refusal: str) -> str:
    """The question with its JSON answer schema: what a generative subject is asked."""
    q = question_text(needle, method)
    schema = json.dumps(json_schema(needle.type, with_quote=method in ("cite", "locate")))
    nulls = json.dumps({f: None for f in SCHEMAS[needle.type]})
    cite = (
        ' In "quote", copy word for word the sentence(s) or table row of the document that state the answer.'
        if method == "cite"
        else ""
    )
    return (
        f"{q}{cite}\nReply with one JSON object and nothing else, matching this JSON schema: {schema}. "
        f"If the document does not contain the answer, reply {nulls} ({refusal})."
    )


def locate_prompt(needle: Needle, refusal: str) -> str:
    """Locate-then-answer, step 1: copy the evidence, nothing more."""
    return (
        f"Do not answer yet. Copy word for word the sentence(s) or table row of the document needed to answer: "
        f'{needle.question}\nReply with one JSON object: {{"quote": "..."}}; if there is none, '
        f'{{"quote": null}} ({refusal}).'
    )


def reasoning_prompt(task: Reasoning) -> str:
    shape = '{"answer": "yes"} or {"answer": "no"}' if task.expected in ("yes", "no") else '{"answer": "<name>"}'
    return f"{task.question}\nReply with one JSON object and nothing else: {shape}."


# ---------------------------------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Score:
    answer_format: str  # json | text
    schema_ok: bool
    exact: float
    field_score: float
    refused: bool
    hallucinated: bool
    distractor_hit: str | None  # which distractor's value the answer gave (named), if any
    fields: dict[str, Any] = field(default_factory=dict)
    quote: str | None = None
