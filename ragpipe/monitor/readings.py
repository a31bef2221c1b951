"""What a production trace says about the app, read the way the verdicts read answers: did it refuse, is what it
quotes or cites in its own retrieved contexts, and did the question reach a golden test's trap passage."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from ragpipe.core import normalize_text
from ragpipe.reading import content_words, is_refusal

# A citation marker: [1], [2, 3], [1][3]; the numbers are 1-based positions in the trace's contexts.
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
# A quoted span of three words or more, in straight or curly quotes.
_QUOTE = re.compile(r"[\"\u201c\u201e]([^\"\u201c\u201d\u201e]{8,}?)[\"\u201d]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"\u201c(\[])")
_DIGIT = re.compile(r"[0-9]")
SUPPORT = 0.6  # share of a cited sentence's content words its context must hold (all of its numbers always)


@dataclass(frozen=True)
class Reading:
    refused: bool
    cites: bool  # quotes or cites something (or, uncited, states something): what the hit rate is over
    citation_hit: bool | None  # None for a refusal: there is nothing it says the contexts say
    trap_tests: list[str]  # golden negatives whose trap passage the question retrieved


def _supported(sentence: str, contexts: list[frozenset[str]]) -> bool:
    """The sentence's numbers all in one context (given as its content words), and most of its content words."""
    words = content_words(_MARKER.sub(" ", sentence))
    if not words:
        return True
    numbers = {w for w in words if _DIGIT.search(w)}
    return any(numbers <= have and len(words & have) >= SUPPORT * len(words) for have in contexts)


@functools.lru_cache(maxsize=16384)
def _context(text: str) -> tuple[str, frozenset[str]]:
    """A retrieved context's normalized text and content words, read once: production traces retrieve the same
    chunks again and again (bounded: memory stays flat however many traces are read)."""
    return normalize_text(text), frozenset(content_words(text))


def citation_hit(answer: str, contexts: list[str], normalized: list[str] | None = None) -> bool:
    """Is what the answer says the contexts say found in them? Each quoted span verbatim (normalized) in a context;
    each sentence with a marker [n] supported by the context(s) it names (a marker past the last context misses);
    an answer with neither: each of its sentences supported by one of the contexts. `normalized`: the contexts'
    normalize_text, when the caller has it."""
    read = [_context(c) for c in contexts]
    normalized = normalized if normalized is not None else [n for n, _ in read]
    words = [w for _, w in read]
    quotes = [q for q in _QUOTE.findall(answer) if len(q.split()) >= 3]  # a quoted word or two is a term, not a quote
    if any(not any(normalize_text(q) in c for c in normalized) for q in quotes):
        return False
    rest = _QUOTE.sub(" ", answer)
    cited = [s for s in _SENTENCE.split(rest) if _MARKER.search(s)]
    for sentence in cited:
        named = {int(n) for m in _MARKER.findall(sentence) for n in m.split(",")}
        if any(not 1 <= n <= len(contexts) for n in named):
            return False
        if not _supported(sentence, [words[n - 1] for n in sorted(named)]):
            return False
    if cited or quotes:
        return True
    return all(_supported(s, words) for s in _SENTENCE.split(answer) if s.strip())


class TrapIndex:
    """The golden set's trap passages (negative tests' trap quotes), found in a trace's contexts by normalized text."""

    SEEN = 16384  # contexts whose hits are kept: production traces retrieve the same chunks again and again

    def __init__(self, traps: dict[str, str]):
        self.traps = {qid: normalize_text(q) for qid, q in traps.items() if q and q.strip()}
        self._seen: dict[str, tuple[str, ...]] = {}  # a context's normalized text -> the tests whose quote it holds

    def __getstate__(self) -> dict[str, Any]:
        return {"traps": self.traps}  # sent to worker processes without what this one has read

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.traps, self._seen = state["traps"], {}

    def hits(self, normalized: list[str]) -> list[str]:
        """The tests whose trap quote one of the contexts holds (the contexts as normalize_text gives them)."""
        found: set[str] = set()
        for text in normalized:
            got = self._seen.get(text)
            if got is None:
                got = tuple(qid for qid, quote in self.traps.items() if quote in text)
                if len(self._seen) >= self.SEEN:
                    self._seen.clear()
                self._seen[text] = got
            found.update(got)
        return sorted(found)


def read_trace(answer: str, contexts: list[str], traps: TrapIndex, phrases: tuple[str, ...] = ()) -> Reading:
    normalized = [_context(c)[0] for c in contexts]  # once, for the quotes and the traps
    refused = is_refusal(answer, phrases)
    hit = None if refused or not answer.strip() else citation_hit(answer, contexts, normalized)
    return Reading(refused=refused, cites=hit is not None, citation_hit=hit, trap_tests=traps.hits(normalized))
