"""Parsed elements are stored without their texts and file-level metadata, and come back identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragpipe.ingest import (
    chunk_document,
    element_offsets,
    elements_from_json,
    parse_file,
    shared_pool,
    stored_elements_json,
)
from ragpipe.settings import ChunkerSettings

pytestmark = [pytest.mark.slow]

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


@pytest.fixture(scope="module")
def parsed() -> list:
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".md", ".html", ".txt"))[:8]
    assert files
    return [parse_file(f) for f in files]


def test_stored_form_is_small_and_rebuilds_the_same_elements_and_chunks(parsed: list) -> None:
    from unstructured.staging.base import elements_to_json

    for doc in parsed:
        stored = stored_elements_json(doc.elements)
        data = json.loads(stored)
        assert all("text" not in d and "filename" not in d.get("metadata", {}) for d in data["elements"])
        assert len(stored) < len(elements_to_json(doc.elements)) / 2
        back = elements_from_json(stored, doc.text)
        assert [(e.category, e.text, e.id, e.metadata.to_dict()) for e in back] == [
            (
                e.category,
                e.text,
                e.id,
                {
                    k: v
                    for k, v in e.metadata.to_dict().items()
                    if k not in ("filename", "file_directory", "filetype", "languages", "last_modified")
                },
            )
            for e in doc.elements
        ]
        for cfg in (ChunkerSettings(), ChunkerSettings(strategy="basic", max_characters=300, new_after_n_chars=300)):
            assert chunk_document("d", doc.text, back, element_offsets(back), cfg) == chunk_document(
                "d", doc.text, doc.elements, doc.offsets, cfg
            )


def test_worker_parse_equals_in_process_parse(parsed: list) -> None:
    doc = parsed[0]
    path = next(p for p in sorted(CORPUS.rglob("*")) if p.is_file() and p.suffix in (".md", ".html", ".txt"))
    remote = shared_pool().parse(path)
    assert remote.text == doc.text
    assert [(e.category, e.text, e.id) for e in remote.elements] == [(e.category, e.text, e.id) for e in doc.elements]


def test_older_warehouses_rows_and_damaged_rows(parsed: list) -> None:
    from unstructured.staging.base import elements_to_json

    doc = parsed[0]
    old = elements_from_json(elements_to_json(doc.elements))  # unstructured's own JSON, as stored before
    assert [e.text for e in old] == [e.text for e in doc.elements]
    with pytest.raises(ValueError, match="do not add up to the document text"):
        elements_from_json(stored_elements_json(doc.elements), doc.text + " extra")
