"""Haystacks by token length, and a needle placed at a depth by token offset on a sentence boundary.

Everything here is a pure function of the settings and a seed: the same seed gives the same haystack and offsets
on every run and machine."""

from __future__ import annotations

import bisect
import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.niah.needles import Needle, Placement
from ragpipe.niah.sources import TEXT_SUFFIXES, sub_seed


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


def _paragraphs(text: str) -> list[str]:
    paras = [" ".join(x.split()) if not _is_table(x) else x.strip() for x in _PARA.split(text)]
    return [q for x in paras if len(x) >= 40 for q in _split_long(x)]


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
        paras = _paragraphs(text)
        if paras:
            docs.append(paras)
    if not docs:
        raise FileNotFoundError(f"no usable text files (.txt, .md) under {directory} to build haystacks from")
    return docs


def parsed_paragraphs(texts: list[tuple[str, str]]) -> list[list[str]]:
    """Documents as lists of paragraphs from their parsed text ((doc_id, text) of the `documents` table: PDF, HTML,
    Markdown and text alike, the elements joined by blank lines), sorted by doc_id."""
    return [paras for _, text in sorted(texts) if (paras := _paragraphs(text))]


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
        parts.append(
            t.format(
                n=rng.randint(3, 40),
                t=rng.randint(5, 35),
                p=rng.randint(2, 9),
                mag=f"{rng.uniform(0, 2):.1f}",
                **{k: rng.choice(v) for k, v in _OFF_VOCAB.items()},
            )
        )
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
    return Haystack(
        length, rep, seed, tok.name, source, text, tok.count(text), len(out), n_off, repeats, time.perf_counter() - t0
    )


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
