"""Haystacks from any document the corpus holds: the text the graph parsed (HTML here), not only text files; a
haystack folder outside the corpus is read from its text files as before."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from conftest import ROOT, write_settings

from ragpipe.ingest.stages import parse_documents, sync_corpus
from ragpipe.niah.trials import _sources
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect

HTML = ROOT.parent / "shared" / "data" / "realdocs" / "docs" / "html" / "python3.11" / "faq" / "general.html"


def test_haystacks_come_from_the_parsed_corpus_in_any_format(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "faq").mkdir(parents=True)
    shutil.copy(HTML, corpus / "faq" / "general.html")
    (corpus / "notes.txt").write_text("A plain note that is long enough to be a paragraph of the haystack.\n")
    essays = tmp_path / "essays"
    essays.mkdir()
    (essays / "one.md").write_text("An essay paragraph that is long enough to be read into the haystack.\n")
    write_settings(tmp_path / "ragpipe.toml", {"warehouse": {"dir": "warehouse"}, "corpus": {"dir": "corpus"}})
    s = load_settings(tmp_path / "ragpipe.toml")
    with connect(s.duckdb_path) as con:
        _, before, _ = _sources(s, s.niah, con)  # nothing parsed yet: the corpus's text files
        assert before == [["A plain note that is long enough to be a paragraph of the haystack."]]
        sync_corpus(s, con, "r1")
        parse_documents(s, con, "r1")
        _, docs, _ = _sources(s, s.niah, con)
        text = " ".join(p for d in docs for p in d)
        assert len(docs) == 2 and "Python is an interpreted, interactive, object-oriented programming" in text
        assert "<p>" not in text and "</" not in text  # the parsed text, not the markup
        faq = replace(s.niah, haystack_dir="corpus/faq")  # a folder inside the corpus: its parsed documents only
        assert len(_sources(s, faq, con)[1]) == 1
        outside = replace(s.niah, haystack_dir=str(essays))  # outside the corpus: its text files
        assert _sources(s, outside, con)[1] == [
            ["An essay paragraph that is long enough to be read into the haystack."]
        ]
