"""Embedding while parsing ([scale].embed_while_parsing): the tables at the end are those of the stages run one after
the other, the embeddings stage embeds only what the documents stage left, and a run stopped in the middle of the
overlap (parts cut short included) is completed by the next one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Project, make_project
from vectorkit import _same, _table

from ragpipe import embed, ingest
from ragpipe.embed import while_parsing
from ragpipe.warehouse import connect

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _project(root: Path, overlap: bool) -> Project:
    p = make_project(root, with_golden=False, embedder="minilm-static")
    p.settings_file.write_text(
        p.settings_file.read_text() + f"\n[scale]\nembed_while_parsing = {'true' if overlap else 'false'}\n"
    )
    return p


def _ingest(p: Project, run_id: str) -> dict[str, Any]:
    s = p.settings()
    with connect(s.duckdb_path) as con:
        ingest.sync_corpus(s, con, run_id)
        docs = embed.parse_documents_embedding(s, con, run_id)
        chunks = ingest.chunk_documents(s, con, run_id)
        vectors = embed.embed_chunks(s, con, run_id)
    return {"documents": docs, "chunks": chunks, "embeddings": vectors}


def _chunks(p: Project) -> list[tuple[Any, ...]]:
    return p.sql("SELECT chunk_id, doc_id, seq, content_hash, text FROM chunks ORDER BY chunk_id")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    p = _project(tmp_path_factory.mktemp("prefetch") / "seq", overlap=False)
    stats = _ingest(p, "run-seq")
    assert "embedded_while_parsing" not in stats["documents"]
    return {"chunks": _chunks(p), "vectors": _table(p.settings()), "embedded": stats["embeddings"]["embedded"]}


def test_embedding_while_parsing_gives_the_sequential_tables(reference: dict[str, Any], tmp_path: Path) -> None:
    p = _project(tmp_path / "overlap", overlap=True)
    stats = _ingest(p, "run-overlap")
    early = stats["documents"]["embedded_while_parsing"]
    assert early > 0
    e = stats["embeddings"]
    assert e["precomputed"] == early and e["embedded"] + e["precomputed"] == reference["embedded"]
    assert _chunks(p) == reference["chunks"]
    _same(_table(p.settings()), reference["vectors"])
    s = p.settings()
    assert not list(while_parsing.prefetch_dir(s, e["embedder_tag"]).glob("*"))  # taken by the table, then deleted


class _Killed(BaseException):
    """Stands for SIGKILL in the middle of the documents stage: nothing after it runs in this process."""


def test_a_run_stopped_in_the_middle_of_the_overlap_is_completed_by_the_next(
    reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _project(tmp_path / "killed", overlap=True)
    s = p.settings()
    real = ingest.stages.parse_one
    parsed: list[str] = []

    def killed_after_six(*args: Any) -> Any:
        if len(parsed) == 6:
            raise _Killed()
        parsed.append(args[2])
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(while_parsing, "PART_ROWS", 4)  # parts of four vectors: several written before the stop
        m.setattr(ingest.stages, "parse_one", killed_after_six)
        with connect(s.duckdb_path) as con:
            ingest.sync_corpus(s, con, "run-1")
            with pytest.raises(_Killed):
                embed.parse_documents_embedding(s, con, "run-1")
    tag = embed.embedder_tag(s.embedder, s.models_dir)
    parts = sorted(while_parsing.prefetch_dir(s, tag).glob("*.arrow"))
    assert len(parts) >= 2
    waiting = while_parsing.load_prefetched(s, tag)
    parts[0].write_bytes(parts[0].read_bytes()[:100])  # a part cut short: skipped, its texts embedded again
    (parts[0].parent / "deadbeef.arrow.tmp").write_bytes(b"half a part")  # a write the kill interrupted
    assert len(while_parsing.load_prefetched(s, tag)) < len(waiting)

    stats = _ingest(p, "run-2")
    assert stats["documents"]["parsed_this_run"] == stats["documents"]["documents"] - 6  # the rest, not again
    e = stats["embeddings"]
    assert e["precomputed"] >= len(waiting) - 4  # the whole parts of the stopped run were used
    assert _chunks(p) == reference["chunks"]
    _same(_table(s), reference["vectors"])
    assert not list(while_parsing.prefetch_dir(s, tag).glob("*"))


def test_off_parses_alone(reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_prefetch(*_: Any, **__: Any) -> None:
        raise AssertionError("a prefetcher was started with [scale].embed_while_parsing = false")

    monkeypatch.setattr(while_parsing, "Prefetcher", no_prefetch)
    p = _project(tmp_path / "off", overlap=False)
    stats = _ingest(p, "run-off")
    assert stats["embeddings"]["precomputed"] == 0 and _chunks(p) == reference["chunks"]


def test_shards_embed_only_what_parsing_left(
    reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _project(tmp_path / "shards", overlap=True)
    s = p.settings()
    monkeypatch.setattr(while_parsing, "PART_ROWS", 4)
    with connect(s.duckdb_path) as con:
        ingest.sync_corpus(s, con, "run-1")
        embed.parse_documents_embedding(s, con, "run-1")
        ingest.chunk_documents(s, con, "run-1")
        tag = embed.embedder_tag(s.embedder, s.models_dir)
        for part in sorted(while_parsing.prefetch_dir(s, tag).glob("*.arrow"))[::2]:
            part.unlink()  # half the vectors embedded while parsing: the shards have the rest to do
        waiting = len(while_parsing.load_prefetched(s, tag))
        plan = embed.plan_embed_shards(s, con, 2)
    assert waiting > 0 and plan["texts"] == reference["embedded"] - waiting and all(plan["shard_sizes"])
    for i in range(2):
        embed.embed_shard(s, Path(plan["stage"]), i, 2)
    with connect(s.duckdb_path) as con:
        stats = embed.merge_embed_shards(s, con, "run-1", Path(plan["stage"]), 2)
    assert (stats["embedded"], stats["precomputed"]) == (0, reference["embedded"])
    _same(_table(s), reference["vectors"])
