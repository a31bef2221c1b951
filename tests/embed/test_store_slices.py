"""The vector sync embeds and adds new rows a slice at a time: same table as one pass, identical texts embedded
once across slices, and a run killed between slices keeps what it added and is completed by the next."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder

from ragpipe.embed import store
from ragpipe.ingest import Chunk, content_hash


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str], progress=None) -> np.ndarray:  # type: ignore[no-untyped-def]
        self.seen += texts
        return super().encode(texts, progress)


def _chunks(n: int = 50, distinct: int = 40) -> list[Chunk]:
    texts = [f"paragraph {i % distinct} about turbine blade {i % distinct * 7} and its coating" for i in range(n)]
    return [
        Chunk(f"ch_{i:03d}", f"doc{i % 6}.md", i, t, 0, len(t), None, None, content_hash(t))
        for i, t in enumerate(texts)
    ]


def _rows(table) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    return {r["chunk_id"]: np.asarray(r["vector"]) for r in store.table_rows(table, ["chunk_id", "vector"])}


def test_slices_give_the_one_pass_table_and_embed_each_text_once(tmp_path: Path) -> None:
    chunks = _chunks()
    one = CountingEmbedder()
    t1, s1 = store.sync_vectors(store.connect(tmp_path / "a"), one, chunks, "r", slice_rows=10_000)
    sliced = CountingEmbedder()
    t2, s2 = store.sync_vectors(store.connect(tmp_path / "b"), sliced, chunks, "r", slice_rows=7)
    assert len(sliced.seen) == len(set(sliced.seen)) == 40 == s2.embedded  # duplicates across slices reuse the vector
    assert (s2.reused, s2.current) == (10, 50) and (s1.embedded, s1.reused) == (s2.embedded, s2.reused)
    a, b = _rows(t1), _rows(t2)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_run_killed_between_slices_keeps_its_slices_and_the_next_completes_it(tmp_path: Path) -> None:
    chunks = _chunks()
    by_id = {c.chunk_id: c.text for c in chunks}
    calls = [0]

    def dying_loader(ids: list[str], doc_ids: list[str]) -> dict[str, str]:
        calls[0] += 1
        if calls[0] == 4:
            raise KeyboardInterrupt("killed")
        return {i: by_id[i] for i in ids}

    db = store.connect(tmp_path / "db")
    with pytest.raises(KeyboardInterrupt):
        store.sync_vectors(db, FakeEmbedder(), chunks, "r1", load_texts=dying_loader, slice_rows=7)
    table = store.open_table(db, FakeEmbedder.tag, FakeEmbedder.dims)
    assert table.count_rows() == 21  # three slices landed
    again = CountingEmbedder()
    table, stats = store.sync_vectors(db, again, chunks, "r2", slice_rows=7)
    assert table.count_rows() == 50 and stats.kept == 21
    assert not set(again.seen) & {by_id[c.chunk_id] for c in sorted(chunks, key=lambda c: (c.doc_id, c.chunk_id))[:21]}


def test_the_diff_from_arrow_keys_equals_the_diff_from_chunks(tmp_path: Path) -> None:
    """Ids to add (by document, id), stale ids, texts to embed once, and texts the table already has."""
    chunks = _chunks(30, 20)
    db = store.connect(tmp_path / "db")
    store.sync_vectors(db, FakeEmbedder(), chunks[:12], "r1")  # the table holds 12 ids and their texts
    table = store.open_table(db, FakeEmbedder.tag, FakeEmbedder.dims)
    wanted = chunks[4:]  # ids 0-3 left the corpus
    by_chunks = store.diff_vectors(table, wanted)
    by_arrow = store.diff_vectors(
        table, store.chunk_keys([store.ChunkKey(c.chunk_id, c.doc_id, c.content_hash) for c in wanted])
    )
    for d in (by_chunks, by_arrow):
        assert sorted(d.stale.to_pylist()) == [c.chunk_id for c in chunks[:4]]
        assert d.kept == 8
        new = sorted(chunks[12:], key=lambda c: (c.doc_id, c.chunk_id))
        assert d.to_add["chunk_id"].to_pylist() == [c.chunk_id for c in new]
        in_table = {c.content_hash for c in chunks[:12]}
        assert d.to_add["known"].to_pylist() == [c.content_hash in in_table for c in new]
        firsts: dict[str, str] = {}
        for c in new:
            if c.content_hash not in in_table:
                firsts.setdefault(c.content_hash, c.chunk_id)
        assert d.fresh_keys()["chunk_id"].to_pylist() == [
            c.chunk_id for c in new if firsts.get(c.content_hash) == c.chunk_id
        ]
        assert d.reused == len(new) - len(firsts)


def test_the_warehouse_text_loader_returns_exactly_a_slice_spanning_documents(tmp_path: Path) -> None:
    """The loader narrows its scan to the slice's range of documents; chunks of other documents in that range,
    and of other chunkers, never come back."""
    from ragpipe.embed import chunk_text_loader
    from ragpipe.warehouse import connect

    chunks = _chunks(60, 60)
    with connect(tmp_path / "w.duckdb") as con:
        for tag in ("mine", "other"):
            con.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        tag,
                        c.chunk_id,
                        c.doc_id,
                        c.seq,
                        f"{tag}: {c.text}",
                        c.start_char,
                        c.end_char,
                        None,
                        None,
                        c.content_hash,
                        "sha",
                        "r",
                    ]
                    for c in chunks
                ],
            )
        wanted = [c for c in chunks if c.doc_id in ("doc1.md", "doc4.md") and c.seq % 2 == 0]  # docs 2, 3 lie between
        texts = chunk_text_loader(con, "mine")([c.chunk_id for c in wanted], [c.doc_id for c in wanted])
        assert texts == {c.chunk_id: f"mine: {c.text}" for c in wanted}
