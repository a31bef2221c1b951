"""Quotes copied raw from real source files, markup and all, found again in their own parsed document.

    .venv/bin/python bench/raw_quotes.py [--max-files N] [--show]

For every Markdown, reST and HTML file of ../shared/data/realdocs/docs (and plain text), the sentences of its prose
paragraphs are taken from the source as a person would copy them (Markdown with its backticks, emphasis and links;
reST with its roles and literals; HTML with its tags and entities), and looked up the way `ragpipe golden restamp`
looks up a quote (ragpipe.restamp.Restamper.locate) in the document ragpipe parsed. Prints the share found per
format and the reasons of those that are not.
"""

from __future__ import annotations

import argparse
import html as html_lib
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))

from ragpipe.golden import Restamper  # noqa: E402
from ragpipe.ingest import format_of, parse_file  # noqa: E402

DOCS = HERE.parent / "shared" / "data" / "realdocs" / "docs"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"])")


def _sentences(paragraph: str) -> list[str]:
    """Sentences as copied: line breaks (and the markup at the start of each line) kept."""
    text = paragraph.strip()
    return [s for s in _SENTENCE.split(text) if 40 <= len(s) <= 400 and re.search(r"[a-z]{3}", s)]


def markdown_prose(text: str) -> list[str]:
    """Paragraphs outside code fences, tables, headings, HTML blocks and mdBook directives."""
    text = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1", "", text)
    text = re.sub(r"(?m)^(\s*(?:[-*+]|\d+[.)])\s)", r"\n\1", text)  # each list item a paragraph of its own
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip().splitlines()
        if not lines or any(
            re.match(r"\s*(?:#|\||<|\{\{|    |\t|!\[|\[\^)", ln) or ln.strip().startswith("---") for ln in lines
        ):
            continue
        out += _sentences(block)
    return out


def rest_prose(text: str) -> list[str]:
    """Paragraphs that are not directives, literal blocks, section titles or tables."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if (
            not lines
            or lines[0].startswith((" ", "\t", ".."))
            or any(re.fullmatch(r"[=\-~^*+#`'\"]{3,}", ln.strip()) for ln in lines)
        ):
            continue
        if block.rstrip().endswith("::") or "|" in block:
            continue
        out += _sentences(block)
    return out


def html_prose(text: str) -> list[str]:
    """The inner HTML of <p> elements, tags and entities kept (sentences split outside tags only)."""
    out = []
    for inner in re.findall(r"(?s)<p>(.*?)</p>", text):
        if "<img" in inner:
            continue
        tags = re.findall(r"<[^>]*>", inner)
        pieces = re.split(r"<[^>]*>", inner)
        masked = "".join(p + (f"\x00{i}\x00" if i < len(tags) else "") for i, p in enumerate(pieces))
        for s in _sentences(masked):
            out.append(re.sub(r"\x00(\d+)\x00", lambda m, t=tags: t[int(m.group(1))], s))
    return out


def text_prose(text: str) -> list[str]:
    text = re.sub(r"(?m)^((?:[-*+]|\d+[.)])\s)", r"\n\1", text)  # each list item a paragraph of its own
    return [s for block in re.split(r"\n\s*\n", text) for s in _sentences(block) if not block.startswith(" ")]


def prose(path: Path, fmt: str) -> list[str]:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.name.endswith(".rst.txt"):
        return rest_prose(raw)
    return {"markdown": markdown_prose, "html": html_prose, "text": text_prose}[fmt](raw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-files", type=int, default=0, help="at most this many files per format (0: all)")
    ap.add_argument("--show", action="store_true", help="print every quote that is not found")
    args = ap.parse_args()
    per: dict[str, Counter] = {}
    misses: list[tuple[str, str]] = []
    for path in sorted(DOCS.rglob("*")):
        fmt = format_of(path) if path.is_file() else None
        if fmt in (None, "pdf"):
            continue
        kind = "rest" if path.name.endswith(".rst.txt") else fmt
        c = per.setdefault(kind, Counter())
        if args.max_files and c["files"] >= args.max_files:
            continue
        quotes = prose(path, fmt)
        if not quotes:
            continue
        rel = str(path.relative_to(DOCS))
        doc = parse_file(path)
        stamper = Restamper({rel: doc.text}, [])
        c["files"] += 1
        for q in quotes:
            c["quotes"] += 1
            if stamper.locate(q, rel):
                c["found"] += 1
            else:
                misses.append((rel, q))
                if args.show:
                    print(f"  not found in {rel}: {html_lib.unescape(q)[:200]!r}")
    for kind, c in sorted(per.items()):
        share = 100 * c["found"] / max(1, c["quotes"])
        print(f"{kind:<9} files={c['files']:<4} quotes={c['quotes']:<6} found={c['found']:<6} ({share:.1f} %)")
    total = sum((c for c in per.values()), Counter())
    print(
        f"{'all':<9} files={total['files']:<4} quotes={total['quotes']:<6} found={total['found']:<6} "
        f"({100 * total['found'] / max(1, total['quotes']):.1f} %)"
    )


if __name__ == "__main__":
    main()
