"""The summary path: the haystack cut into pieces that fit the answerer's window, each summarized by the answerer with
the question withheld (a real summary path does not know the future question), the summaries joined (and summarized
again while the joined text does not fit), then the question asked over the summary.

Each piece's summary is cached by the piece's text for the run: the trials of one haystack differ only in the piece
that holds their needle, so the rest of a haystack is summarized once. The tokens and seconds a trial spent on
summaries (none for cached pieces) are recorded on its row beside those of its answer.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ragpipe.niah.haystack import Tokenizer
from ragpipe.rag import Answer

PIECE_TOKENS = 2000  # named tokens per piece at most (less when the window is smaller)
MAX_ROUNDS = 4  # joined summaries summarized again at most this often
SUMMARY_PROMPT = (
    "Summarize the text below for a reader who will later ask questions about it. Keep every name, number, date, code, "
    "amount and instruction it states, written exactly as in the text. Leave out only what repeats."
)
_SENTENCE_END = re.compile(r"[.!?]\s")


class SummaryError(RuntimeError):
    """The summary path cannot run with this answerer (it cannot be given a prompt of ragpipe's own)."""


def _sentence_blocks(text: str, tok: Tokenizer, size: int) -> list[str]:
    """A paragraph longer than `size` tokens cut at sentence ends (at a token count when a sentence is longer)."""
    out, begin = [], 0
    starts = tok.starts(text)
    while begin < len(text):
        k = next((i for i, s in enumerate(starts) if s >= begin), len(starts))
        if k + size >= len(starts):
            out.append(text[begin:])
            break
        cut = starts[k + size]
        ends = [m.end() for m in _SENTENCE_END.finditer(text, begin, cut)]
        cut = ends[-1] if ends and ends[-1] > begin + (cut - begin) // 2 else cut
        out.append(text[begin:cut])
        begin = cut
    return out


def pieces(text: str, tok: Tokenizer, size: int) -> list[str]:
    """`text` in pieces of at most `size` named tokens, whole paragraphs each. A piece ends after a paragraph whose
    opening words hash to a multiple of `size // 200` (so cuts depend on the paragraphs around them, not on what came
    before: a needle added to one paragraph changes one piece, and the haystack's other pieces stay the same text),
    or before a paragraph that would not fit."""
    every = max(1, size // 200)
    paragraphs = [b for p in re.split(r"(?<=\n\n)", text) if p for b in _sentence_blocks(p, tok, size)]
    out: list[str] = []
    current: list[str] = []
    used = 0
    for para in paragraphs:
        if not para.strip():  # blank lines go with what came before them
            if current or not out:
                current.append(para)
            else:
                out[-1] += para
            continue
        n = tok.count(para)
        if current and used + n > size:
            out.append("".join(current))
            current, used = [], 0
        current.append(para)
        used += n
        if int(hashlib.sha1(para[:64].encode()).hexdigest(), 16) % every == 0:
            out.append("".join(current))
            current, used = [], 0
    if current:
        out.append("".join(current))
    return [p for p in out if p.strip()]


class Summaries:
    """What the summary subject sends for each trial, with the cost of producing it."""

    def __init__(self, answerer: Any, tok: Tokenizer, budget: int):
        if not callable(getattr(answerer, "complete", None)):
            raise SummaryError(
                f"the summary subject needs an answerer that can summarize (smollm2 or openai); {answerer.label} "
                f"cannot: remove 'summary' from [niah].subjects or change [answerer].kind"
            )
        self.answerer = answerer
        self.tok = tok
        self.size = max(200, min(PIECE_TOKENS, budget)) if budget else PIECE_TOKENS
        self.cache: dict[str, Answer] = {}

    def _summaries(self, texts: list[str]) -> tuple[list[Answer], int, float]:
        """Each text's summary; (summaries, tokens spent, seconds spent) counting only texts not cached yet."""
        tokens, seconds = 0, 0.0
        out = []
        for text in texts:
            key = hashlib.sha256(text.encode()).hexdigest()
            if key not in self.cache:
                got = self.answerer.complete(
                    [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": text}]
                )
                tokens += got.input_tokens + got.output_tokens
                seconds += got.latency_s
                if got.error:
                    return [got], tokens, seconds
                self.cache[key] = got
            out.append(self.cache[key])
        return out, tokens, seconds

    def for_text(self, text: str) -> tuple[str, int, float, str | None]:
        """(the summary, tokens spent, seconds spent, error or None) for one haystack."""
        tokens, seconds = 0, 0.0
        parts = pieces(text, self.tok, self.size)
        for _ in range(MAX_ROUNDS):
            got, n, s = self._summaries(parts)
            tokens, seconds = tokens + n, seconds + s
            if any(a.error for a in got):
                return "", tokens, seconds, next(a.error for a in got if a.error)
            joined = "\n\n".join(a.text.strip() for a in got)
            if len(parts) == 1 or self.tok.count(joined) <= self.size:
                return joined, tokens, seconds, None
            parts = pieces(joined, self.tok, self.size)
        return joined, tokens, seconds, None
