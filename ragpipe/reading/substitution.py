"""A claim that restates a retrieved sentence with one word swapped for its rival: "a space and a lowercase 's'"
where the text says "a space and a capital letter 'S'", "the SHA-256 fingerprint" where it says "the SHA-1
fingerprint", "400k + (4 x block size)" where it says "400k + (8 x block size)", "the high 64 bits" where it says
"the low 64 bits". The entailment reader reads what a claim adds well and such small changes poorly
(bench/README.md, "The entailment reader"); a rival in the place of the text's word, with the words around it the
text's own, is a contradiction it need not guess at.

Rivals are closed pairs (capital / lowercase, first / last, minimum / maximum, encrypt / decrypt, seconds / minutes,
dot / colon, ...), a code of the same letters with other digits ("SHA-1" / "SHA-256", "IPv4" / "IPv6"), and a number
for another number where the words on both sides are the same. A claim is not held to contradict a sentence when
another retrieved sentence says it with the claim's own word."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from ragpipe.reading.premises import sentences

_TOKEN = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*")
_STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its this that these "
    "those which who what when where how do does did has have had can could will would shall should may might must "
    "than then so such also just into onto about their they them he she his her we our you your i me my any each "
    "very s t".split()
)
_PAIRS = (
    ("uppercase upper-case capital capitals capitalized", "lowercase lower-case"),
    ("upper", "lower"),
    ("high higher highest", "low lower lowest"),
    ("first", "last final"),
    ("before prior earlier", "after later"),
    ("enable enables enabled enabling", "disable disables disabled disabling"),
    ("more greater larger bigger longer above exceeds", "less fewer smaller shorter below"),
    ("increase increases increased raise raises raised", "decrease decreases decreased reduce reduces reduced"),
    ("maximum max", "minimum min"),
    ("inclusive", "exclusive"),
    ("always", "never"),
    ("faster quicker", "slower"),
    ("include includes included including", "exclude excludes excluded excluding"),
    ("allow allows allowed permit permits permitted", "forbid forbids forbidden prohibit prohibits prohibited"),
    ("accept accepts accepted", "reject rejects rejected"),
    ("encrypt encrypts encrypted encrypting encryption", "decrypt decrypts decrypted decrypting decryption"),
    ("compress compresses compressed compressing compression", "decompress decompresses decompressed decompressing "),
    ("public", "private secret"),
    ("client clients", "server servers"),
    ("input", "output"),
    ("ascending", "descending"),
    ("start starts beginning", "end ends"),
    ("left", "right"),
    ("top", "bottom"),
    ("import imports imported", "export exports exported"),
    ("upload uploads uploaded", "download downloads downloaded"),
    ("absolute", "relative"),
    ("local", "remote"),
    ("synchronous", "asynchronous"),
    ("signed", "unsigned"),
    ("valid", "invalid"),
    ("true", "false"),
    ("required mandatory", "optional"),
    ("newer", "older"),
    ("static", "dynamic"),
    ("parent", "child"),
    ("same", "different"),
    ("dot period", "colon comma semicolon slash hyphen dash underscore"),
    ("milliseconds ms", "seconds minutes hours days"),
    ("seconds", "minutes hours days"),
    ("minutes", "hours days"),
    ("hours", "days weeks"),
    ("bits", "bytes"),
    ("kilobytes kb kib", "megabytes mb mib gigabytes gb gib"),
    ("megabytes mb mib", "gigabytes gb gib"),
)
_RIVALS: dict[str, frozenset[str]] = {}
for _a, _b in _PAIRS:
    for _one, _other in ((_a.split(), _b.split()), (_b.split(), _a.split())):
        for _w in _one:
            _RIVALS[_w] = _RIVALS.get(_w, frozenset()) | frozenset(_other)
_CODE = re.compile(r"([a-z]{2,})[-_]?(\d+)")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*[kmg]?")


@dataclass(frozen=True)
class Replacement:
    mine: str  # the claim's word
    theirs: str  # the retrieved sentence's word in its place
    sentence: str


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def rivals(mine: str, theirs: str) -> bool:
    """Do the two words name rival things of one kind (a closed pair, or one code with other digits)?"""
    if theirs in _RIVALS.get(mine, ()):
        return True
    a, b = _CODE.fullmatch(mine), _CODE.fullmatch(theirs)
    return bool(a and b and a.group(1) == b.group(1) and a.group(2) != b.group(2))


def _numbers(mine: str, theirs: str) -> bool:
    return bool(_NUMBER.fullmatch(mine) and _NUMBER.fullmatch(theirs)) and mine != theirs


@functools.lru_cache(maxsize=4096)
def _pool(contexts: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((s, tuple(_tokens(s))) for text in contexts for s in sentences(text))


def replaced(claim: str, contexts: Sequence[str], known: str = "") -> Replacement | None:
    """The first word of the claim that stands where the retrieved sentence it restates has a rival word, with the
    words on each side of it that sentence's own; None when there is none. Words of `known` (the question and the
    expected answer) never count as the claim's: an answer that words its value as the test does is read elsewhere."""
    mine = _tokens(claim)
    if len(mine) < 3:
        return None
    spare = set(_tokens(known))
    pool = _pool(tuple(contexts))
    for sentence, theirs in pool:
        shared = len(set(mine) & set(theirs))
        if shared < 3 or shared < 0.4 * len(set(mine)):
            continue
        for op, i1, i2, j1, j2 in SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes():
            if op != "replace" or i2 - i1 > 2:
                continue
            before = i1 > 0 and j1 > 0 and mine[i1 - 1] == theirs[j1 - 1]
            after = i2 < len(mine) and j2 < len(theirs) and mine[i2] == theirs[j2]
            single = i2 - i1 == 1 and j2 - j1 == 1 and before and after  # one word for one, the same on each side
            near = set(theirs[j1 : j1 + 2] if before else ()) | set(theirs[max(j1, j2 - 2) : j2] if after else ())
            for a in mine[i1:i2]:
                if a in spare or a in theirs:
                    continue
                for b in near - set(mine):
                    if (rivals(a, b) or (single and _numbers(a, b))) and not _said_with(a, mine, pool):
                        return Replacement(a, b, sentence)
    return None


def _said_with(word: str, mine: list[str], pool: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Does a retrieved sentence hold the word beside two more of the claim's words? Then the claim may say that
    sentence, not the one it was aligned with."""
    others = set(mine) - {word}
    return any(word in theirs and len(others & set(theirs)) >= 2 for _, theirs in pool)
