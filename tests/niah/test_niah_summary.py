"""The NIAH summary path's pieces and cache (pure logic, with a stand-in summarizer); the real model runs it in
tests/niah/test_smollm2_niah.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from ragpipe.niah import Summaries, SummaryError, load_tokenizer, pieces
from ragpipe.rag import Answer, ExtractiveAnswerer
from ragpipe.settings import AnswererSettings, NiahSettings

TEXT = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples" / "corpus").rglob("*.md")))


class FirstSentences:
    """Stands in for a model: the first sentence of each paragraph it is given, counting its calls."""

    label = "first sentences"

    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.seen)

    def complete(self, messages: list[dict[str, str]]) -> Answer:
        text = messages[-1]["content"]
        self.seen.append(text)
        out = " ".join(p.split(". ")[0].strip() + "." for p in text.split("\n\n") if p.strip())
        return Answer(out, 0.01, len(text.split()), len(out.split()))


@pytest.fixture(scope="module")
def tok() -> object:
    return load_tokenizer(NiahSettings().tokenizer)


def test_pieces_fit_and_a_needle_changes_one_piece(tok: object) -> None:
    before = pieces(TEXT, tok, 600)
    assert "".join(before) == TEXT and all(tok.count(p) <= 600 for p in before)  # whole text, every piece fits
    mid = TEXT.index("\n\n", len(TEXT) // 2) + 2
    after = pieces(TEXT[:mid] + "The vault code is 5190337. " + TEXT[mid:], tok, 600)
    changed = [p for p in after if p not in before]
    assert len(changed) == 1 and "5190337" in changed[0]


def test_the_summary_of_a_haystack_is_paid_once_but_for_the_needles_piece(tok: object) -> None:
    model = FirstSentences()
    summaries = Summaries(model, tok, 2000)
    text, tokens, _, err = summaries.for_text(TEXT)
    assert err is None and tokens > 0 and tok.count(text) <= 2000
    first_calls = model.calls
    mid = TEXT.index("\n\n", len(TEXT) // 2) + 2
    needle = "The vault code is 5190337. It opens at dawn.\n\n"
    _, spent, _, err = summaries.for_text(TEXT[:mid] + needle + TEXT[mid:])
    new = model.seen[first_calls:]
    assert err is None and sum("5190337" in t for t in new) >= 1  # the needle's piece was summarized
    assert spent < tokens and len(new) < first_calls  # the haystack's other pieces came from the cache


def test_an_answerer_that_cannot_summarize_is_named(tok: object) -> None:
    with pytest.raises(SummaryError, match="remove 'summary' from \\[niah\\].subjects"):
        Summaries(ExtractiveAnswerer(AnswererSettings()), tok, 600)


def test_the_default_subjects_leave_the_summary_path_out() -> None:
    assert NiahSettings().subjects == ("retrieval", "full_context")
    assert Path(ROOT / "ragpipe" / "warehouse" / "migrations" / "015_niah_summary.sql").is_file()
