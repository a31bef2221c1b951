"""Quotes copied raw from real source files (Markdown with its code spans and links, HTML with its tags and entities,
reST) are found in their own parsed document: markup handling never turns an unchanged quote into drift."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from ragpipe.golden import Restamper, html_form, quote_form, quote_forms
from ragpipe.ingest import parse_file

sys.path.insert(0, str(ROOT / "bench"))
from raw_quotes import DOCS, html_prose, markdown_prose, rest_prose  # noqa: E402


def test_a_code_span_keeps_its_content() -> None:
    assert quote_form("when using `content=<str>` the body") == "when using content=<str> the body"
    assert quote_form("see [the `netrc.netrc()` function](https://x) here") == "see the netrc.netrc() function here"
    assert quote_form("a <b>bold</b> &amp; **strong** word") == "a bold & strong word"


def test_html_source_keeps_underscores_and_decoded_brackets() -> None:
    raw = 'its <code><span class="pre">__init__()</span></code> and <code>&lt;module&gt;</code> form'
    assert html_form(raw) == "its __init__() and <module> form"
    assert html_form(raw) in quote_forms(raw)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rel", "extract"),
    [
        ("markdown/httpx/compatibility.md", markdown_prose),
        ("markdown/httpx/advanced/authentication.md", markdown_prose),
        ("markdown/rust-book/ch03-02-data-types.md", markdown_prose),
        ("html/python3.11/faq/programming.html", html_prose),
        ("text/python3.11-reference-rst/executionmodel.rst.txt", rest_prose),
    ],
)
def test_raw_quotes_are_found_in_their_own_document(rel: str, extract) -> None:
    path = DOCS / rel
    quotes = extract(path.read_text(encoding="utf-8"))
    assert len(quotes) >= 10
    stamper = Restamper({rel: parse_file(path).text}, [])
    missing = [q for q in quotes if not stamper.locate(q, rel)]
    assert len(missing) <= 0.02 * len(quotes), missing[:5]
    if rel.endswith("compatibility.md"):  # the sentence with `content=<str>` in a code span
        assert not [q for q in missing if "<str>" in q]
