"""Finding a golden test's quote in a document, as people copy quotes: from the parsed text or from the source file.

A quote copied from a Markdown or HTML file carries what parsing removed (`code`, _emphasis_, **bold**, [link](url),
&amp;), and either side may have curly or straight quotes, typographic dashes and line breaks anywhere. Both sides are
brought to one form before comparing; the document side only by one-for-one character swaps and whitespace
collapsing, so a match maps back to exact offsets in the parsed text. The stored quote is never rewritten.

When a quote is no longer found, `closest_passage` proposes what the document says now, for a person to accept.
"""

from __future__ import annotations

import difflib
import html
import re

from ragpipe.core import collapse_whitespace, fold

_LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")  # [text](url), ![alt](src), [text][ref]
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(?<![\w*_])(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1(?![\w*_])")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>|<!--.*?-->", re.S)


def _prose(text: str) -> str:
    """Markup removed from text outside code: entities, tags, links, emphasis."""
    q = html.unescape(text)
    q = _TAG.sub("", q)
    q = _LINK.sub(r"\1", q)
    for _ in range(2):  # **_nested_** emphasis
        q = _EMPHASIS.sub(r"\2", q)
    return q


def quote_form(quote: str) -> str:
    """The quote as it should appear in parsed text: markup and entities removed, folded, whitespace collapsed.
    A code span keeps its content as written (`content=<str>` is code, not an HTML tag); only its backticks go."""
    quote = _LINK.sub(r"\1", quote)  # a link's text may hold code: [the `netrc.netrc()` function](url)
    parts, at = [], 0
    for m in _CODE.finditer(quote):
        parts.append(_prose(quote[at : m.start()]))
        parts.append(m.group(1))
        at = m.end()
    parts.append(_prose(quote[at:]))
    q = "".join(parts)
    q = _LINE_MARKERS.sub("", q)  # heading, quote, list markers
    return collapse_whitespace(fold(q))


_LINE_MARKERS = re.compile(r"(?m)^\s{0,3}(?:(?:#{1,6}|>|[-*+]|\d+[.)])(?:\s+|$))+")


def html_form(quote: str) -> str:
    """A quote copied from HTML source: tags removed first, then entities decoded (so `&lt;module&gt;` stays text);
    underscores and asterisks are not markup there (`__init__()`)."""
    return collapse_whitespace(fold(html.unescape(_TAG.sub("", quote))))


def quote_forms(quote: str) -> list[str]:
    """Every form the quote may take in parsed text, most literal first: as written, with only list and heading
    markers removed, as Markdown rendered (`quote_form`), as HTML rendered (`html_form`)."""
    forms = (plain_form(quote), plain_form(_LINE_MARKERS.sub("", quote)), quote_form(quote), html_form(quote))
    return [f for f in dict.fromkeys(forms) if f]


def plain_form(text: str) -> str:
    """The quote folded and whitespace collapsed, markup kept (for a document that keeps its markup)."""
    return collapse_whitespace(fold(text))


def closest_passage(quote: str, text: str, min_similarity: float = 0.5) -> tuple[str, float] | None:
    """The passage of `text` most like `quote` (a window of sentences about as long as it), with the similarity
    ratio of difflib (0..1); None when nothing reaches `min_similarity`."""
    q = quote_form(quote)
    if not q or not text.strip():
        return None
    # sentences, and lines (a heading, a table row, a list item is a passage of its own)
    sentences = [collapse_whitespace(s) for s in re.split(r"(?<=[.!?])\s+|\n+", fold(text)) if s.strip()]
    best: tuple[float, str] = (0.0, "")
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(q)
    for i in range(len(sentences)):
        window = ""
        for j in range(i, min(len(sentences), i + 6)):
            window = (window + " " + sentences[j]).strip()
            matcher.set_seq1(window)
            if matcher.real_quick_ratio() > best[0] and matcher.quick_ratio() > best[0]:
                ratio = matcher.ratio()
                if ratio > best[0]:
                    best = (ratio, window)
            if len(window) > 1.5 * len(q):
                break
    if best[0] < min_similarity:
        return None
    return best[1], round(best[0], 2)
