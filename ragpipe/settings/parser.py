"""[parser]: the PDF engine and strategy, and the time, memory and worker limits of parsing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError, names

# The names settings may use, each with what it is (for --help and error messages); tests/project/test_architecture.py keeps
# each list equal to the registry of the code behind it.
PDF_ENGINES = {
    "pdfium": "page text from pdfium, rebuilt into titles, paragraphs and list items (the default; fast)",
    "unstructured": "unstructured's partition_pdf with [parser].pdf_strategy (pdfminer; ~60x slower, bench/README.md)",
}


@dataclass(frozen=True)
class ParserSettings:
    pdf_strategy: str = "fast"  # unstructured's strategy, when pdf_engine = "unstructured"
    pdf_engine: str = "pdfium"  # pdfium (fast text, ragpipe.ingest.pdf) | unstructured (partition_pdf, pdfminer)
    timeout_s: float = 120.0  # per document: a file that parses longer becomes an ingest_errors row
    max_memory_mb: int = 2048  # per document: address space a parse may add to its worker process (RLIMIT_AS)
    workers: int = 0  # worker processes per parsing process; 0: from the cores and memory (ragpipe.ingest.parse_pool)


def check(p: ParserSettings, src: Path) -> None:
    if p.pdf_strategy not in ("fast", "auto", "hi_res", "ocr_only"):
        raise SettingsError(f"{src}: [parser].pdf_strategy must be fast, auto, hi_res or ocr_only")
    if p.pdf_engine not in PDF_ENGINES:
        raise SettingsError(f"{src}: [parser].pdf_engine must be {names(PDF_ENGINES)}")
    if p.timeout_s <= 0 or p.max_memory_mb < 64:
        raise SettingsError(f"{src}: [parser].timeout_s must be above 0 and [parser].max_memory_mb at least 64")
    if p.workers < 0:
        raise SettingsError(f"{src}: [parser].workers must be 0 (from the cores and memory) or a number of processes")
