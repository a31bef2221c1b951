"""The installed environment can run every stage: no torchvision beside the CPU torch, embedders and both PDF engines work.

    .venv/bin/python .ci/check_deps.py      (run by `make bench-deps` and by .ci/run after the extras are installed)

torchvision built for another torch breaks `import sentence_transformers` (`operator torchvision::nms does not
exist`); it arrives with unstructured's hi_res stack (unstructured-inference -> timm), which ragpipe does not install.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    problems = []
    if importlib.util.find_spec("torchvision") is not None:
        problems.append(
            "torchvision is installed: it breaks the embedders; `pip uninstall torchvision` and find what pulled it "
            "(`pip show torchvision` -> Required-by)"
        )
    try:
        from ragpipe.embed import load_embedder
        from ragpipe.settings import EmbedderSettings

        with tempfile.TemporaryDirectory() as models:
            vec = load_embedder(EmbedderSettings(name="minilm"), Path(models)).encode(["a refund within 30 days"])
        assert vec.shape == (1, 384), vec.shape
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        problems.append(f"the minilm embedder does not load or encode: {type(exc).__name__}: {exc}")
    pdf = ROOT / "examples/corpus/reports/q2-2024.pdf"
    for engine in ("pdfium", "unstructured"):
        try:
            from ragpipe.ingest import parse_file

            assert parse_file(pdf, pdf_engine=engine).n_elements > 0
        except Exception as exc:  # noqa: BLE001
            problems.append(f"PDF engine {engine!r} fails on {pdf.name}: {type(exc).__name__}: {exc}")
    for p in problems:
        print(f"check_deps: {p}", file=sys.stderr)
    print("check_deps: " + ("FAILED" if problems else "ok: no torchvision; minilm encodes; both PDF engines parse"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
