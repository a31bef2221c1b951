"""Fuzzed corpus files through the real corpus and documents stages (parser worker processes under their time and
memory limits): each example is a corpus of the bundled example's files mutated (cut short, bytes flipped or
spliced, another format's bytes under the extension, HTML nested thousands deep, empty) beside one good file. The
property: every file becomes a document or one ingest_errors row that names it (also one deleted between
the scan and the parse), no exception leaves the stage, the
good file is ingested, and the stage ends within its bound. Briefly in `make test` (RAGPIPE_FUZZ_CORPORA corpora,
default 3); longer with `make fuzz`. A crash found becomes an example below."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES, write_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragpipe.ingest import parse_documents, sync_corpus
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect

pytestmark = [pytest.mark.slow]

CORPORA = int(os.environ.get("RAGPIPE_FUZZ_CORPORA", "3"))
FILES = 6  # mutated files per corpus
TIMEOUT_S = 10  # [parser].timeout_s: one file's bound
FUZZ = settings(max_examples=CORPORA, deadline=None, suppress_health_check=list(HealthCheck))
SEEDS = sorted(p for p in (EXAMPLES / "corpus").rglob("*") if p.suffix in (".pdf", ".html", ".md", ".txt"))
GOOD = "zz-good.md"


def _mutated(raw: bytes, data: st.DataObject) -> bytes:
    action = data.draw(st.sampled_from(["truncate", "flip", "splice", "empty", "foreign", "nest", "keep"]))
    if action == "truncate" and raw:
        return raw[: data.draw(st.integers(0, len(raw) - 1))]
    if action == "flip" and raw:
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 64))):
            out[data.draw(st.integers(0, len(out) - 1))] = data.draw(st.integers(0, 255))
        return bytes(out)
    if action == "splice":
        at = data.draw(st.integers(0, len(raw)))
        return raw[:at] + data.draw(st.binary(min_size=1, max_size=512)) + raw[at:]
    if action == "empty":
        return b""
    if action == "foreign":  # another format's bytes under this extension
        return data.draw(st.sampled_from(SEEDS)).read_bytes()[: data.draw(st.integers(1, 4096))]
    if action == "nest":
        depth = data.draw(st.integers(100, 20_000))
        return b"<html><body>" + b"<div>" * depth + raw[:2000] + b"</div>" * data.draw(st.integers(0, depth))
    return raw


@pytest.fixture(scope="module")
def scratch() -> Path:
    with tempfile.TemporaryDirectory(prefix="ragpipe-fuzz-corpus-") as d:
        yield Path(d)


@FUZZ
@given(data=st.data())
def test_each_fuzzed_corpus_file_is_a_document_or_one_named_error(scratch: Path, data: st.DataObject) -> None:
    root = scratch / "project"
    shutil.rmtree(root, ignore_errors=True)
    (root / "corpus").mkdir(parents=True)
    names = []
    for i in range(FILES):
        seed = data.draw(st.sampled_from(SEEDS))
        name = f"f{i}{seed.suffix}"
        (root / "corpus" / name).write_bytes(_mutated(seed.read_bytes(), data))
        names.append(name)
    shutil.copy(EXAMPLES / "corpus" / "reports" / "q1-2023.md", root / "corpus" / GOOD)
    sections = {"warehouse": {"dir": "warehouse"}, "corpus": {"dir": "corpus"},
                "parser": {"timeout_s": TIMEOUT_S, "max_memory_mb": 1024}}  # fmt: skip
    s = load_settings(write_settings(root / "ragpipe.toml", sections))
    vanish = data.draw(st.one_of(st.none(), st.sampled_from(names)))
    t0 = time.monotonic()
    with connect(s.duckdb_path) as con:
        sync_corpus(s, con, "fuzz")
        if vanish is not None:  # the corpus changes between the scan and the parse (a team edits while it runs)
            (root / "corpus" / vanish).unlink()
        parse_documents(s, con, "fuzz")
        docs = {r[0] for r in con.execute("SELECT doc_id FROM documents").fetchall()}
        errors = con.execute("SELECT path, error_class, message FROM ingest_errors").fetchall()
    elapsed = time.monotonic() - t0
    assert GOOD in docs
    for name in names:
        mine = [e for e in errors if e[0] == name]
        assert (name in docs) != bool(mine) and len(mine) <= 1, (name, name in docs, mine)
        for _, cls, msg in mine:
            assert msg.startswith(name) and "Traceback" not in msg and len(msg) <= 2000, (cls, msg)
    if vanish is not None and vanish not in docs:
        assert [e[1] for e in errors if e[0] == vanish] == ["FileVanished"], errors
    assert {e[0] for e in errors} <= set(names)
    assert elapsed < 60 + FILES * TIMEOUT_S, elapsed
