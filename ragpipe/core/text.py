"""Text normalization, spelled once: the folding of typographic characters, whitespace collapsing, and the
normalized form answers and expected values are compared in. Refusal detection is ragpipe.reading (its grammar)."""

import re
import unicodedata
from typing import Sequence

# One character for another: offsets in the document stay the same.
FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2009": " ",
        "\u202f": " ",
        "\u2007": " ",
    }
)


def fold(text: str) -> str:
    """Curly quotes, backticks, typographic dashes and odd spaces as their plain forms (same length)."""
    if text.isascii() and "`" not in text:  # the only ASCII character folded
        return text
    return text.translate(FOLD)


_WS = re.compile(r"\s+")


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace (line breaks included) as one space, trimmed."""
    return _WS.sub(" ", text).strip()


_BRACKETS = re.compile(r"[\"'`*_()\[\]{}]")
_STOPS = re.compile(r"(?<!\d)[.,;:!?](?!\d)")
_STOPS_AS_SPACES = str.maketrans(dict.fromkeys(".,;:!?", " "))
_DIGIT = re.compile(r"\d")


def normalize_text(text: str) -> str:
    """Lower-case, unify quotes and dashes, drop punctuation that does not change meaning, collapse spaces."""
    t = fold(unicodedata.normalize("NFKC", text).lower())
    t = _BRACKETS.sub(" ", t)
    t = _STOPS.sub(" ", t) if _DIGIT.search(t) else t.translate(_STOPS_AS_SPACES)  # no digit: every stop goes
    return " ".join(t.split())


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """Length of the longest common prefix of two strings or lists (binary search over slice comparisons, which run
    in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
