"""Needle in a haystack: haystacks, needles, insertion by token offset, questions, structured answers and scoring.

Everything here is a pure function of the settings and a seed: the same seed gives the same haystacks, needles,
offsets and questions on every run and machine. Running trials against subjects, storage and the report live in
ragpipe/niah_run.py.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragpipe.match import answer_matches, is_refusal, normalize_text, numbers
from ragpipe.settings import Settings, SettingsError, _build

NEEDLE_TYPES = ("proper_noun", "numeric", "negative", "cross_sentence", "table_cell")
METHODS = ("direct", "rewritten", "cite", "locate")
SUBJECTS = ("retrieval", "full_context")
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
IMPL_VERSION = "1"  # bump when haystacks, needles, questions or scoring change what they produce


# --------------------------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class NiahSettings:
    """The [niah] section of ragpipe.toml (every key optional)."""

    seed: int = 20241129
    lengths: tuple[int, ...] = (2000, 4000, 8000, 16000, 32000)  # haystack tokens before the needle goes in
    depths: tuple[float, ...] = (0.0, 25.0, 50.0, 75.0, 100.0)  # percent of the haystack before the needle
    repetitions: int = 2  # per cell, each with its own seed (another haystack order, another needle)
    needle_types: tuple[str, ...] = NEEDLE_TYPES
    methods: tuple[str, ...] = ("direct",)  # direct | rewritten | cite | locate
    subjects: tuple[str, ...] = SUBJECTS  # retrieval | full_context
    haystack_dir: str = ""  # text files of the haystack theme; "" = the configured corpus
    off_theme_dir: str = ""  # off-theme text files; "" = built-in generated off-theme paragraphs
    off_theme_ratio: float = 0.1  # share of haystack paragraphs that are off-theme
    distractors: int = 1  # near-miss distractor needles (same template, other key and value) per trial
    tokenizer: str = "minilm"  # the named local tokenizer for endpoints: minilm (WordPiece) | a local HF path
    window: int = 0  # the full-context subject's window in tokens; 0 = the answerer's own (openai 128000, smollm2 8192)
    on_overflow: str = "skip"  # skip: label overflow, do not call | truncate: cut the haystack to the window
    cross_gap: float = 0.1  # cross-sentence needles: the second sentence this share of the haystack away
    effective_threshold: float = 0.85  # effective length: longest length whose score stays at or above this
    bias_threshold: float = 0.15  # positional bias: middle depths below the edges by more than this
    reasoning: bool = True  # follow-up compare/order/negate task on the cited or retrieved evidence

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:10]


def niah_settings(settings: Settings) -> NiahSettings:
    """Parse and validate the raw [niah] table kept by ragpipe.settings."""
    raw = dict(getattr(settings, "niah", {}) or {})
    for key in ("lengths", "depths"):
        if key in raw and isinstance(raw[key], list):
            raw[key] = [float(v) if key == "depths" else v for v in raw[key]]
    ns: NiahSettings = _build(NiahSettings, raw, "niah", settings.source)
    src = settings.source
    bad = set(ns.needle_types) - set(NEEDLE_TYPES)
    if bad:
        raise SettingsError(f"{src}: [niah].needle_types has unknown types {sorted(bad)}; allowed: {list(NEEDLE_TYPES)}")
    if set(ns.methods) - set(METHODS):
        raise SettingsError(f"{src}: [niah].methods must be among {list(METHODS)}")
    if set(ns.subjects) - set(SUBJECTS):
        raise SettingsError(f"{src}: [niah].subjects must be among {list(SUBJECTS)}")
    if not ns.lengths or any(not isinstance(n, int) or n < 200 for n in ns.lengths):
        raise SettingsError(f"{src}: [niah].lengths must be integers of at least 200 tokens")
    if not ns.depths or any(not 0 <= d <= 100 for d in ns.depths):
        raise SettingsError(f"{src}: [niah].depths must be percentages between 0 and 100")
    if ns.repetitions < 1 or ns.distractors < 0:
        raise SettingsError(f"{src}: [niah].repetitions must be >= 1 and distractors >= 0")
    if not 0 <= ns.off_theme_ratio < 1:
        raise SettingsError(f"{src}: [niah].off_theme_ratio must be in [0, 1)")
    if ns.on_overflow not in ("skip", "truncate"):
        raise SettingsError(f"{src}: [niah].on_overflow must be skip or truncate")
    return dataclasses.replace(ns, lengths=tuple(sorted(set(ns.lengths))), depths=tuple(sorted(set(ns.depths))))


def haystack_dir(settings: Settings, ns: NiahSettings) -> Path:
    if not ns.haystack_dir:
        return settings.corpus.dir
    p = Path(ns.haystack_dir).expanduser()
    return p if p.is_absolute() else settings.root / p


def off_theme_dir(settings: Settings, ns: NiahSettings) -> Path | None:
    if not ns.off_theme_dir:
        return None
    p = Path(ns.off_theme_dir).expanduser()
    return p if p.is_absolute() else settings.root / p


def sub_seed(*parts: Any) -> int:
    """A stable 63-bit seed from any parts (Python's hash() is salted per process; this is not)."""
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:15], 16)


# -------------------------------------------------------------------------------------------------- tokenizer
class Tokenizer:
    """A local Hugging Face fast tokenizer, used to count, place and check token offsets. Its name is recorded."""

    def __init__(self, name: str, hf: Any):
        self.name = name
        self.hf = hf

    def encode(self, text: str) -> list[int]:
        return list(self.hf(text, add_special_tokens=False)["input_ids"])

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def starts(self, text: str) -> list[int]:
        """The character offset where each token starts."""
        enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True)
        return [s for s, _ in enc["offset_mapping"]]

    def decode(self, ids: list[int]) -> str:
        return str(self.hf.decode(ids))

    def token_index(self, text: str, char: int) -> int:
        """How many tokens lie wholly before character `char`."""
        return bisect.bisect_left(self.starts(text), char)


_TOKENIZERS: dict[str, Tokenizer] = {}


def load_tokenizer(name: str) -> Tokenizer:
    """`minilm`: the WordPiece tokenizer of the packaged all-MiniLM-L6-v2; else a local tokenizer directory."""
    if name in _TOKENIZERS:
        return _TOKENIZERS[name]
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # we tokenize whole haystacks on purpose: no "longer than max length" notices
    if name == "minilm":
        from ragpipe.embed import minilm_path

        hf = AutoTokenizer.from_pretrained(str(minilm_path()))
        label = "minilm-wordpiece (all-MiniLM-L6-v2)"
    else:
        hf = AutoTokenizer.from_pretrained(name)
        label = name
    hf.model_max_length = 10**9
    tok = Tokenizer(label, hf)
    _TOKENIZERS[name] = tok
    return tok


# -------------------------------------------------------------------------------------------------- sentences
_SENT_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_PARA = re.compile(r"\n\s*\n")


def sentences(text: str) -> list[str]:
    out, last = [], 0
    for m in _SENT_END.finditer(text):
        out.append(text[last : m.end()].strip())
        last = m.end()
    if text[last:].strip():
        out.append(text[last:].strip())
    return out


def _is_table(paragraph: str) -> bool:
    return "\n|" in paragraph or paragraph.lstrip().startswith("|")


def boundaries(text: str) -> list[int]:
    """Character positions where a sentence or paragraph starts, plus 0 and the end.

    Positions inside a table are never boundaries: a needle never splits a table row.
    """
    paras = [0] + [m.end() for m in _PARA.finditer(text)]
    found = set(paras) | {len(text)}
    ends = [m.start() for m in _PARA.finditer(text)] + [len(text)]
    for start, end in zip(paras, ends):
        chunk = text[start:end]
        if _is_table(chunk):
            continue
        found.update(start + m.end() for m in _SENT_END.finditer(chunk) if start + m.end() < end)
    return sorted(found)


# ------------------------------------------------------------------------------------------------- haystacks
@dataclass(frozen=True)
class Haystack:
    length_target: int
    rep: int
    seed: int
    tokenizer: str
    source: str
    text: str
    n_tokens: int
    n_paragraphs: int
    n_off_theme: int
    repeats: int  # how many times the source paragraphs were cycled to reach the length
    build_seconds: float = 0.0

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def source_paragraphs(directory: Path) -> list[list[str]]:
    """Documents (sorted by path) as lists of paragraphs, from the text files under `directory`."""
    docs = []
    for p in sorted(directory.rglob("*")):
        if not p.is_file() or p.suffix.lower() not in TEXT_SUFFIXES or p.name.startswith(".") or p.name == "SOURCE.md":
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        paras = [" ".join(x.split()) if not _is_table(x) else x.strip() for x in _PARA.split(text)]
        paras = [q for x in paras if len(x) >= 40 for q in _split_long(x)]
        if paras:
            docs.append(paras)
    if not docs:
        raise FileNotFoundError(f"no usable text files (.txt, .md) under {directory} to build haystacks from")
    return docs


def _split_long(paragraph: str, limit: int = 2000, per: int = 6) -> list[str]:
    """Essays stored without paragraph breaks become blocks of a few sentences (so off-theme text can go between)."""
    if len(paragraph) <= limit or _is_table(paragraph):
        return [paragraph]
    sents = sentences(paragraph)
    return [" ".join(sents[i : i + per]) for i in range(0, len(sents), per)]


_OFF_VOCAB = {
    "veg": ["leeks", "parsnips", "chickpeas", "shallots", "fennel", "lentils", "turnips", "barley"],
    "spice": ["cumin", "saffron", "nutmeg", "paprika", "cardamom", "sumac"],
    "weather": ["light drizzle", "scattered showers", "clear skies", "a stiff easterly wind", "morning fog"],
    "sport": ["the relay team", "the rowing crew", "the under-12 side", "the chess club", "the cycling squad"],
    "star": ["Vega", "Capella", "Arcturus", "Deneb", "Altair", "Rigel"],
}
_OFF_TEMPLATES = [
    "Simmer the {veg} for {n} minutes before stirring in a pinch of {spice}.",
    "Season the {veg} with {spice} and roast them until the edges darken.",
    "The regional forecast promises {weather} with highs near {t} degrees.",
    "By the afternoon the forecast turns to {weather} along the coast.",
    "Last weekend {sport} finished in place {p} out of {n} entrants.",
    "Coaches said {sport} trained twice a week through the winter.",
    "On clear nights {star} rises about {n} minutes earlier each week.",
    "Amateur observers logged {star} at magnitude {mag} through thin cloud.",
]


def off_theme_generated(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(3, 5)):
        t = rng.choice(_OFF_TEMPLATES)
        parts.append(t.format(n=rng.randint(3, 40), t=rng.randint(5, 35), p=rng.randint(2, 9),
                              mag=f"{rng.uniform(0, 2):.1f}", **{k: rng.choice(v) for k, v in _OFF_VOCAB.items()}))
    return " ".join(parts)


def build_haystack(
    docs: list[list[str]],
    length: int,
    rep: int,
    seed: int,
    tok: Tokenizer,
    off_theme_ratio: float = 0.1,
    off_theme: list[str] | None = None,
    source: str = "",
) -> Haystack:
    """Whole documents in a seeded order (cycled when too short), off-theme paragraphs mixed in at the ratio,
    trimmed at a sentence boundary to at most `length` tokens (and within one sentence of it)."""
    import time

    t0 = time.perf_counter()
    rng = random.Random(sub_seed(seed, "haystack", rep))
    out: list[str] = []
    total = 0
    n_off = 0
    repeats = 0
    counts: dict[str, int] = {}

    def count(p: str) -> int:
        if p not in counts:
            counts[p] = tok.count(p)
        return counts[p]

    def paragraphs() -> Any:
        nonlocal repeats
        while True:
            order = list(range(len(docs)))
            rng.shuffle(order)
            repeats += 1
            for i in order:
                yield from docs[i]

    for para in paragraphs():
        if off_theme_ratio > 0 and rng.random() < off_theme_ratio:
            para = rng.choice(off_theme) if off_theme else off_theme_generated(rng)
            n_off += 1
        n = count(para)
        if total + n <= length:
            out.append(para)
            total += n
            if total >= length:
                break
            continue
        # The last paragraph: as many whole sentences as fit.
        if not _is_table(para):
            kept: list[str] = []
            for s in sentences(para):
                k = count(s)
                if total + k > length:
                    break
                kept.append(s)
                total += k
            if kept:
                out.append(" ".join(kept))
        break
    text = "\n\n".join(out)
    return Haystack(length, rep, seed, tok.name, source, text, tok.count(text), len(out), n_off, repeats,
                    time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------------- needles
_SYLL = ["ar", "bel", "cor", "dun", "el", "fen", "gar", "hol", "is", "jor", "kel", "lor", "mar", "nev", "or", "pel",
         "quin", "ros", "sal", "tor", "ul", "vel", "wen", "yar", "zan", "bri", "dra", "tev", "mon", "sk"]
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
    wrong: tuple[tuple[str, str, str], ...] = ()  # (where, field, value): near-miss values inside this needle (table rows)

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


def make_needle(needle_type: str, rng: random.Random, key_parts: Any = None, avoid: dict[str, str] | None = None) -> tuple[Needle, Any]:
    """One needle of a type. `key_parts` given: a near miss of that key (a distractor), with values unlike `avoid`."""
    avoid = avoid or {}

    def pick(choices: list[str], not_value: str | None) -> str:
        return rng.choice([c for c in choices if c != not_value])

    surface = rng.randrange(3)
    if needle_type == "proper_noun":
        kp = _near(key_parts, rng) if key_parts else _word(rng, 2) + [rng.choice(_PLACE_SUFFIX)]
        place = "Port " + _cap(kp)
        name = _name(_person(rng))
        while name == avoid.get("name"):
            name = _name(_person(rng))
        text = [f"The lighthouse keeper of {place} is {name}.", f"{name} keeps the lighthouse at {place}.",
                f"At {place}, the lighthouse is kept by {name}."][surface]
        other = _name(_person(rng)) if rng.random() < 0.5 else name
        return Needle(
            needle_type, place, {"name": name}, (text,), surface,
            f"Who is the lighthouse keeper of {place}?",
            f"Name the person who keeps the lighthouse at {place}.",
            Reasoning("negate", f"Is it true that {other} is the lighthouse keeper of {place}?", "yes" if other == name else "no"),
        ), kp
    if needle_type == "numeric":
        kp = _near(key_parts, rng) if key_parts else _word(rng, 2)
        vault = f"{_cap(kp)} vault"
        code = str(rng.randint(1_000_000, 9_999_999))
        while code == avoid.get("code"):
            code = str(rng.randint(1_000_000, 9_999_999))
        text = [f"The access code of the {vault} is {code}.", f"To open the {vault}, enter the access code {code}.",
                f"{code} is the access code that opens the {vault}."][surface]
        threshold = int(code) + rng.choice((-1, 1)) * rng.randint(1, 500_000)
        return Needle(
            needle_type, vault, {"code": code}, (text,), surface,
            f"What is the access code of the {vault}?",
            f"Which number opens the {vault}?",
            Reasoning("compare", f"Is the access code of the {vault} greater than {threshold}?",
                      "yes" if int(code) > threshold else "no"),
        ), kp
    if needle_type == "negative":
        kp = _near(key_parts, rng) if key_parts else _word(rng, 2) + [rng.choice(_PLACE_SUFFIX)]
        place = _cap(kp)
        day = pick(_DAYS, avoid.get("day"))
        text = [f"The ferry from {place} does not sail on {day}s.", f"On {day}s no ferry leaves {place}.",
                f"Every day except {day}, the ferry from {place} sails."][surface]
        asked = day if rng.random() < 0.5 else pick(_DAYS, day)
        return Needle(
            needle_type, place, {"day": day}, (text,), surface,
            f"On which day of the week does the ferry from {place} not sail?",
            f"Which weekday has no ferry departing from {place}?",
            Reasoning("negate", f"Does the ferry from {place} sail on {asked}s?", "no" if asked == day else "yes"),
        ), kp
    if needle_type == "cross_sentence":
        if key_parts:
            kp = (_near(key_parts[0], rng), key_parts[1])  # same surname, near-miss first name
        else:
            kp = _person(rng)
        person = _name(kp)
        museum = f"{_cap(_word(rng, 2))} Museum"
        species = pick(_SPECIES, avoid.get("species"))
        pet = _cap(_word(rng, 2))
        while pet == avoid.get("pet_name"):
            pet = _cap(_word(rng, 2))
        first = [f"{person} was appointed curator of the {museum}.", f"The {museum} named {person} as its curator.",
                 f"Since the spring, {person} has been the curator of the {museum}."][surface]
        second = [f"The curator of the {museum} keeps a {species} named {pet}.",
                  f"A {species} called {pet} belongs to the curator of the {museum}.",
                  f"The curator of the {museum} owns a {species}, and its name is {pet}."][surface]
        asked = species if rng.random() < 0.5 else pick(_SPECIES, species)
        return Needle(
            needle_type, person, {"pet_name": pet, "species": species}, (first, second), surface,
            f"What is the name and species of the animal kept by {person}?",
            f"Which animal does {person} keep, and what is it called?",
            Reasoning("compare", f"Is the animal kept by {person} a {asked}?", "yes" if asked == species else "no"),
        ), kp
    if needle_type == "table_cell":
        kp = (_near(key_parts[0], rng), key_parts[1]) if key_parts else (_word(rng, 2), [_cap(_word(rng, 2)) for _ in range(4)])
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
        wrong = tuple((f"row {depots[r]}", f, v) for r in range(4) if r != target
                      for f, v in (("crates", str(crates[r])), ("inspector", inspectors[r])))
        more = depot if crates[target] > crates[other] else depots[other]
        return Needle(
            needle_type, title, {"crates": str(crates[target]), "inspector": inspectors[target]}, (table,), surface,
            f"According to the {title}, how many crates are at the {depot} depot, and who inspects it?",
            f"In the {title}, what crate count and inspector are listed for {depot}?",
            Reasoning("order", f"In the {title}, which depot holds more crates: {depot} or {depots[other]}?", more),
            wrong,
        ), (kp[0], kp[1], target)
    raise ValueError(f"unknown needle type {needle_type!r}")


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


def insert_at(text: str, piece: str, depth: float, tok: Tokenizer, block: bool = False) -> tuple[str, int, int]:
    """Insert `piece` at the sentence boundary nearest to `depth` percent of the text's tokens.

    A block (a table) goes in as its own paragraph there. Returns (new text, the character where the piece starts,
    the requested token offset).
    """
    starts = tok.starts(text)
    want = round(depth / 100.0 * len(starts))
    if not text:
        return piece, 0, want
    best_char, best_gap = 0, None
    for c in boundaries(text):
        gap = abs(bisect.bisect_left(starts, c) - want)
        if best_gap is None or gap < best_gap:
            best_char, best_gap = c, gap
    c = best_char
    head, tail = text[:c].rstrip(), text[c:].lstrip()
    sep = "\n\n" if block or text[c - 2 : c] == "\n\n" else " "
    if not head:
        return piece + ("\n\n" if block else " ") + tail, 0, want
    if not tail:
        return head + sep + piece, len(head) + len(sep), want
    return head + sep + piece + ("\n\n" if block else " ") + tail, len(head) + len(sep), want


def place_needle(
    filler: str,
    needle: Needle,
    distractors: list[Needle],
    depth: float,
    tok: Tokenizer,
    seed: int,
    cross_gap: float = 0.1,
) -> Placement:
    """Distractors first (seeded depths), then the needle at `depth`; offsets measured on the final text."""
    rng = random.Random(sub_seed(seed, "placement"))
    is_table = needle.type == "table_cell"
    text = filler
    for d in distractors:
        dd = rng.uniform(0, 100)
        text, _, _ = insert_at(text, d.parts[0], dd, tok, block=is_table)
        if len(d.parts) > 1:
            second = min(100.0, dd + cross_gap * 100) if dd + cross_gap * 100 <= 100 else max(0.0, dd - cross_gap * 100)
            text, _, _ = insert_at(text, d.parts[1], second, tok)
    base_tokens = tok.count(text)
    text, char, requested = insert_at(text, needle.parts[0], depth, tok, block=is_table)
    char2 = None
    if len(needle.parts) > 1:
        # The second sentence goes cross_gap of the haystack later; at the end, it goes before instead.
        starts = tok.starts(text)
        first_tok = bisect.bisect_left(starts, char)
        gap = max(16, round(cross_gap * base_tokens))
        after = first_tok + tok.count(needle.parts[0]) + gap
        target = after if after <= len(starts) else max(0, first_tok - gap)
        new, char2, _ = insert_at(text, needle.parts[1], 100.0 * target / max(1, len(starts)), tok)
        if char2 <= char:  # inserted before the first part: the first part moved right
            char += len(new) - len(text)
        text = new
    starts = tok.starts(text)
    offset = bisect.bisect_left(starts, char)
    offset2 = bisect.bisect_left(starts, char2) if char2 is not None else None
    part_tokens = [tok.count(p) for p in needle.parts]
    before = offset - (part_tokens[1] if offset2 is not None and offset2 < offset else 0)
    depth_actual = 100.0 * before / max(1, len(starts) - sum(part_tokens))
    return Placement(text, char, requested, offset, round(min(100.0, depth_actual), 3), offset2, len(starts))


# ------------------------------------------------------------------------------------------------- questions
def question_text(needle: Needle, method: str) -> str:
    return needle.rewritten if method == "rewritten" else needle.question


def structured_prompt(needle: Needle, method: str, refusal: str) -> str:
    """The question with its JSON answer schema: what a generative subject is asked."""
    q = question_text(needle, method)
    schema = json.dumps(json_schema(needle.type, with_quote=method in ("cite", "locate")))
    nulls = json.dumps({f: None for f in SCHEMAS[needle.type]})
    cite = " In \"quote\", copy word for word the sentence(s) or table row of the document that state the answer." \
        if method == "cite" else ""
    return (f"{q}{cite}\nReply with one JSON object and nothing else, matching this JSON schema: {schema}. "
            f"If the document does not contain the answer, reply {nulls} ({refusal}).")


def locate_prompt(needle: Needle, refusal: str) -> str:
    """Locate-then-answer, step 1: copy the evidence, nothing more."""
    return (f"Do not answer yet. Copy word for word the sentence(s) or table row of the document needed to answer: "
            f"{needle.question}\nReply with one JSON object: {{\"quote\": \"...\"}}; if there is none, "
            f"{{\"quote\": null}} ({refusal}).")


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


def extract_json(text: str) -> Any:
    """The first JSON object in the text (models wrap JSON in prose or code fences); None when there is none."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text[m.start():])
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def check_schema(obj: Any, schema: dict[str, Any]) -> bool:
    """A small JSON-schema check (object, required, additionalProperties false, string/integer/null types)."""
    if not isinstance(obj, dict):
        return False
    props = schema["properties"]
    if any(k not in obj for k in schema["required"]):
        return False
    if not schema.get("additionalProperties", True) and set(obj) - set(props):
        return False
    for k, v in obj.items():
        types = props[k]["type"]
        ok = (v is None and "null" in types) or (isinstance(v, str) and "string" in types) or (
            isinstance(v, int) and not isinstance(v, bool) and "integer" in types) or (
            isinstance(v, str) and "integer" in types and re.fullmatch(r"\s*[\d,]+\s*", v) is not None)
        if not ok:
            return False
    return True


def _same(got: Any, expected: str) -> bool:
    if got is None:
        return False
    g = str(got)
    if normalize_text(g) == normalize_text(expected):
        return True
    eg, ee = numbers(g), numbers(expected)
    return bool(ee) and len(eg) == 1 and abs(eg[0] - ee[0]) < 1e-9


def _states(text: str, value: str) -> bool:
    """Does the text state the value? ("Thursdays" states "Thursday".)"""
    if answer_matches(text, value).matched:
        return True
    return value.isalpha() and answer_matches(text, value + "s").matched


def wrong_values(needle: Needle, distractors: list[Needle]) -> list[tuple[str, str, str]]:
    """(name, field, value) of every near-miss value a subject could give instead of the needle's."""
    out = [(f"distractor {i + 1} ({d.key})", f, v) for i, d in enumerate(distractors) for f, v in d.fields.items()]
    out += [(f"{needle.key} {where}", f, v) for where, f, v in needle.wrong]
    return [(n, f, v) for n, f, v in out if v != needle.fields.get(f)]


def score_answer(
    answer: str,
    needle: Needle,
    distractors: list[Needle],
    refusal_phrases: tuple[str, ...],
    structured: bool = True,
    with_quote: bool = False,
) -> Score:
    """Score one answer: a schema-checked JSON object when the subject was asked for one, else free text.

    JSON: exact = every field equals the expected value (normalized; numbers numerically); field_score = the share of
    fields that state it. Text (answerers that cannot produce JSON, the extractive baseline): a field is right when the
    text states its value; exact needs every field and no near-miss value. A refusal scores 0 and is not a
    hallucination; anything else that is not exact is a hallucination, naming the near-miss value it gave.
    """
    expected = needle.fields
    wrong = wrong_values(needle, distractors)
    obj = extract_json(answer) if structured else None
    schema = json_schema(needle.type, with_quote=with_quote)
    if obj is not None and not with_quote and "quote" in obj:  # a quote nobody asked for does no harm
        obj = {k: v for k, v in obj.items() if k != "quote"}
    if obj is not None and check_schema(obj, schema):
        values = {f: obj.get(f) for f in expected}
        refused = all(v is None or (isinstance(v, str) and (not v.strip() or is_refusal(v, refusal_phrases)))
                      for v in values.values())
        right = {f: values[f] is not None and _states(str(values[f]), e) for f, e in expected.items()}
        exact = 1.0 if all(_same(values[f], e) for f, e in expected.items()) else 0.0
        hit = next((f"{n}: {f}={v}" for n, f, v in wrong if values.get(f) is not None and _same(values[f], v)), None)
        quote = obj.get("quote") if with_quote else None
        fmt, ok = "json", True
    else:
        values = {}
        refused = is_refusal(answer, refusal_phrases) or not answer.strip()
        right = {f: _states(answer, e) for f, e in expected.items()}
        hit = next((f"{n}: {f}={v}" for n, f, v in wrong if _states(answer, v)), None)
        exact = 1.0 if all(right.values()) and hit is None and not refused else 0.0
        quote = answer if with_quote else None
        fmt, ok = "text", not structured
    if refused:
        exact, field_score = 0.0, 0.0
        right = {f: False for f in expected}
        hit = None
    field_score = sum(right.values()) / len(right)
    return Score(fmt, ok, exact, round(field_score, 4), refused, (not refused) and exact < 1.0, hit, values,
                 quote if isinstance(quote, str) else None)


def evidence_contains(evidence: str, needle: Needle) -> float:
    """Share of the needle's parts present in the evidence (retrieved chunks, or the cited text).

    A part is present when its own text is there (normalized), or, for a cited paraphrase, when every value that part
    carries (key and field values) is stated in the evidence.
    """
    ev = normalize_text(evidence)
    found = 0
    for part in needle.parts:
        if normalize_text(part) in ev:
            found += 1
            continue
        lines = [ln for ln in part.split("\n") if ln.strip()]
        if needle.type == "table_cell":  # a cited table row: the row with the asked values
            values = list(needle.fields.values())
            if any(all(normalize_text(v) in normalize_text(ln) for v in values) and normalize_text(ln) in ev for ln in lines):
                found += 1
            elif all(_states(evidence, v) for v in values) and needle.key.lower() in evidence.lower():
                found += 1
            continue
        carried = [v for v in [needle.key, *needle.fields.values()] if normalize_text(v) in normalize_text(part)]
        if carried and all(normalize_text(v) in ev for v in carried):
            found += 1
    return found / len(needle.parts)


def score_reasoning(answer: str, task: Reasoning) -> float:
    obj = extract_json(answer)
    got = obj.get("answer") if isinstance(obj, dict) else answer
    if not isinstance(got, str):
        return 0.0
    g = normalize_text(got)
    if task.expected in ("yes", "no"):
        words = set(g.split())
        return 1.0 if task.expected in words and ({"yes", "no"} - {task.expected}) & words == set() else 0.0
    return 1.0 if normalize_text(task.expected) in g else 0.0
