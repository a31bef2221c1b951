"""Consistency check for the example corpus and examples/golden.jsonl.

Standard library only.  For PDF documents the quotes are checked against the
text source in examples/pdf_src/ that the PDF is generated from; if pypdf
happens to be importable, the generated PDF's extracted text is checked too.

Checks:
  * every line of golden.jsonl has exactly the expected keys, in order;
  * ids are unique; at least 12 negatives and 12 positives;
  * every quote is a verbatim substring (after collapsing whitespace) of its
    source document's text, ASCII, 60-220 characters;
  * positives: expected_answer occurs in evidence_quote, except the listed
    surface-form variants, whose written form must occur instead;
  * negatives: trap_value occurs in trap_quote, and the terms that would make
    the question answerable occur nowhere in the corpus;
  * answer and trap values occur in exactly one corpus document (their source);
  * the whole corpus and golden set are ASCII, every PDF has a source and
    vice versa.

Usage:  python examples/check_golden.py      (exit status 0 = all good)
"""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
PDF_SRC = HERE / "pdf_src"
GOLDEN = HERE / "golden.jsonl"

KEYS = [
    "question_id",
    "kind",
    "question",
    "expected_answer",
    "trap_quote",
    "trap_source",
    "trap_value",
    "evidence_quote",
    "evidence_source",
    "trap_chunk_id",
    "evidence_chunk_id",
    "embedder_tag",
    "last_validated",
]

SURFACE_FORM_VARIANTS = {
    "pos_05": "$6.8M",
    "pos_08": "five years",
    "pos_09": "June 1, 2022",
}

NOT_UNIQUE_OK = {"HR-400", "Marcus Oyelaran"}

ABSENT_TERMS = {
    "neg_01": ["Q3 2022", "third quarter of 2022"],
    "neg_02": ["Q3 2024", "third quarter of 2024"],
    "neg_03": ["Q4 2022", "fourth quarter of 2022", "December 31, 2022"],
    "neg_04": ["Q1 2022", "first quarter of 2022"],
    "neg_05": ["Version 3", "v3"],
    "neg_06": ["reuse"],
    "neg_07": ["HR-600"],
    "neg_08": ["Tamsin"],
    "neg_09": ["rent"],
    "neg_10": ["Chief Technology Officer", "CTO"],
    "neg_11": ["acquire Kessler", "acquisition of Kessler"],
    "neg_12": ["HR-200 recall", "HR-200 units were recalled"],
    "neg_13": ["international meal", "per diem"],
    "neg_14": ["HaloOS 5", "5.0"],
    "neg_15": ["fiscal year 2022", "FY2022", "FY 2022"],
    "neg_16": ["German distributor", "distributor in Germany", "Germany, Austria"],
}

ABSENT_TERMS_ONLY_IN = {
    "neg_06": ["policies/password-policy-2020.txt"],
    "neg_09": ["contracts/hq-lease.pdf"],
}


class _TextOnly(HTMLParser):
    BLOCK = {"p", "h1", "h2", "h3", "h4", "li", "td", "th", "tr", "table", "title", "br", "div"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        if tag in self.BLOCK:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag in self.BLOCK:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def collapse(text: str) -> str:
    return " ".join(text.split())


def pdf_source_text(src: Path) -> str:
    lines = []
    for raw in src.read_text(encoding="ascii").splitlines():
        line = raw.strip()
        if line.startswith("#"):
            line = line.lstrip("#").strip()
        elif line.startswith("|"):
            line = " ".join(c.strip() for c in line.strip("|").split("|"))
        lines.append(line)
    return "\n".join(lines)


def doc_text(rel: str) -> str:
    path = CORPUS / rel
    suffix = path.suffix.lower()
    if suffix in (".md", ".txt"):
        return collapse(path.read_text(encoding="ascii"))
    if suffix in (".html", ".htm"):
        parser = _TextOnly()
        parser.feed(path.read_text(encoding="ascii"))
        return collapse("".join(parser.parts))
    if suffix == ".pdf":
        return collapse(pdf_source_text((PDF_SRC / rel).with_suffix(".txt")))
    raise ValueError(f"unsupported document type: {rel}")


def pdf_extracted_text(rel: str):
    try:
        from pypdf import PdfReader
    except ImportError:
        return None
    reader = PdfReader(str(CORPUS / rel))
    return collapse(" ".join(page.extract_text() or "" for page in reader.pages))


def value_pattern(value: str) -> re.Pattern:
    return re.compile(r"(?<![\w$])" + re.escape(value) + r"(?![\w%]|[.,]\d)", re.IGNORECASE)


def main() -> int:
    errors: list[str] = []
    notes: list[str] = []

    docs = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file())
    texts = {rel: doc_text(rel) for rel in docs}

    for p in list(CORPUS.rglob("*")) + list(PDF_SRC.rglob("*")) + [GOLDEN]:
        if p.is_file() and p.suffix != ".pdf":
            try:
                p.read_bytes().decode("ascii")
            except UnicodeDecodeError:
                errors.append(f"{p.relative_to(HERE)}: not ASCII")
    pdfs = {rel for rel in docs if rel.endswith(".pdf")}
    sources = {p.relative_to(PDF_SRC).with_suffix(".pdf").as_posix() for p in PDF_SRC.rglob("*.txt")}
    for rel in sorted(pdfs ^ sources):
        errors.append(f"{rel}: PDF without source or source without PDF (run make_pdfs.py)")

    tests = []
    for n, line in enumerate(GOLDEN.read_text(encoding="ascii").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if list(obj) != KEYS:
            errors.append(f"line {n}: keys {list(obj)} != {KEYS}")
        tests.append(obj)

    ids = [t["question_id"] for t in tests]
    if len(ids) != len(set(ids)):
        errors.append("duplicate question_id values")
    negs = [t for t in tests if t["kind"] == "negative"]
    poss = [t for t in tests if t["kind"] == "positive"]
    if len(negs) + len(poss) != len(tests):
        errors.append("kind must be 'negative' or 'positive'")
    if len(negs) < 12 or len(poss) < 12:
        errors.append(f"need >=12 negatives and >=12 positives, got {len(negs)}/{len(poss)}")

    pdf_texts: dict[str, object] = {}

    def check_quote(tid: str, quote: str, source: str) -> None:
        if source not in texts:
            errors.append(f"{tid}: source {source!r} is not a corpus document")
            return
        if not quote or not 60 <= len(quote) <= 220:
            errors.append(f"{tid}: quote length {len(quote or '')} outside 60-220")
            return
        if not quote.isascii():
            errors.append(f"{tid}: quote is not ASCII")
        q = collapse(quote)
        if q not in texts[source]:
            errors.append(f"{tid}: quote not found verbatim in {source}")
        if source.endswith(".pdf"):
            if source not in pdf_texts:
                pdf_texts[source] = pdf_extracted_text(source)
            extracted = pdf_texts[source]
            if extracted is not None and q not in extracted:
                errors.append(f"{tid}: quote not found in text extracted from {source}")

    def check_unique(tid: str, value: str, source: str) -> None:
        if value in NOT_UNIQUE_OK:
            return
        pat = value_pattern(value)
        hits = [rel for rel, text in texts.items() if pat.search(text)]
        if hits != [source]:
            errors.append(f"{tid}: value {value!r} occurs in {hits}, expected only in {source}")

    for t in negs:
        tid = t["question_id"]
        if t["expected_answer"] != "not in documents":
            errors.append(f"{tid}: negative expected_answer must be 'not in documents'")
        if t["evidence_quote"] is not None or t["evidence_source"] is not None:
            errors.append(f"{tid}: negative must have null evidence fields")
        if not t["trap_value"] or t["trap_value"] not in (t["trap_quote"] or ""):
            errors.append(f"{tid}: trap_value {t['trap_value']!r} not in trap_quote")
        check_quote(tid, t["trap_quote"], t["trap_source"])
        check_unique(tid, t["trap_value"], t["trap_source"])
        if tid not in ABSENT_TERMS:
            errors.append(f"{tid}: no ABSENT_TERMS entry")
        for term in ABSENT_TERMS.get(tid, []):
            pat = re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)", re.IGNORECASE)
            hits = [rel for rel, text in texts.items() if pat.search(text)]
            allowed = ABSENT_TERMS_ONLY_IN.get(tid, [])
            bad = [h for h in hits if h not in allowed]
            if bad:
                errors.append(f"{tid}: term {term!r} unexpectedly present in {bad}")

    for t in poss:
        tid = t["question_id"]
        if any(t[k] is not None for k in ("trap_quote", "trap_source", "trap_value")):
            errors.append(f"{tid}: positive must have null trap fields")
        quote = t["evidence_quote"] or ""
        answer = t["expected_answer"]
        check_quote(tid, quote, t["evidence_source"])
        if tid in SURFACE_FORM_VARIANTS:
            written = SURFACE_FORM_VARIANTS[tid]
            if written not in quote:
                errors.append(f"{tid}: variant surface form {written!r} not in evidence_quote")
            if answer in quote:
                errors.append(f"{tid}: listed as a variant but expected_answer occurs verbatim")
            check_unique(tid, written, t["evidence_source"])
        else:
            if answer not in quote:
                errors.append(f"{tid}: expected_answer {answer!r} not in evidence_quote")
            check_unique(tid, answer, t["evidence_source"])

    if not pdf_texts or all(v is None for v in pdf_texts.values()):
        notes.append("pypdf not importable: PDF quotes checked against pdf_src/ only")

    for note in notes:
        print(f"note: {note}")
    for err in errors:
        print(f"FAIL: {err}")
    print(
        f"{len(docs)} documents, {len(tests)} tests "
        f"({len(negs)} negative, {len(poss)} positive): " + ("OK" if not errors else f"{len(errors)} problem(s)")
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
