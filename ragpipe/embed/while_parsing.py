"""Embedding while parsing. The documents stage hands each document it has parsed to a Prefetcher, which chunks it
under the current chunker and embeds the texts no vector exists for, in a background thread, while the parser
worker reads the next file: parsing holds one core, the embedder takes the other. Vectors wait in part files beside
the warehouse, keyed by content hash and filed under the embedder's tag, until the embeddings stage takes them as
`precomputed` and deletes them. Nothing else changes: the chunks stage still writes every chunk, the embeddings stage
still decides every row, and a vector whose text never becomes a chunk is not used. A run killed part-way loses at
most the part being filled; the next run's embeddings stage uses the parts that were written."""

from __future__ import annotations

import os
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ragpipe.core import Log
from ragpipe.embed.embedders import Embedder, LazyEmbedder, kind_of
from ragpipe.embed.store import open_store, table_columns, table_name
from ragpipe.ingest import ParseResult, chunk_document, element_offsets, elements_from_json
from ragpipe.settings import Settings

PART_ROWS = 512  # vectors per part file: a kill loses at most one part's work
ENCODE_ROWS = 64  # texts per encode call: stopping waits for at most one call


def prefetch_dir(settings: Settings, embedder_tag: str) -> Path:
    return settings.warehouse_dir / "prefetch" / table_name(embedder_tag)


def _parts(settings: Settings, embedder_tag: str) -> Iterator[pa.Table]:
    """The part files waiting for the embeddings stage; a part cut short by a kill is skipped."""
    for part in sorted(prefetch_dir(settings, embedder_tag).glob("*.arrow")):
        try:
            with ipc.open_file(part) as reader:
                yield reader.read_all()
        except (OSError, pa.ArrowInvalid):
            continue


def load_prefetched(settings: Settings, embedder_tag: str) -> dict[str, np.ndarray]:
    """Every vector waiting for the embeddings stage (content hash -> vector)."""
    out: dict[str, np.ndarray] = {}
    for t in _parts(settings, embedder_tag):
        vectors = t["vector"].combine_chunks().flatten().to_numpy().reshape(t.num_rows, -1)
        out.update(zip(t["content_hash"].to_pylist(), vectors))
    return out


def prefetched_hashes(settings: Settings, embedder_tag: str) -> set[str]:
    """The content hashes of those vectors, without turning the vectors into arrays (plans and the prefetcher)."""
    return {h for t in _parts(settings, embedder_tag) for h in t["content_hash"].to_pylist()}


def clear_prefetched(settings: Settings, embedder_tag: str) -> None:
    for part in prefetch_dir(settings, embedder_tag).glob("*.arrow*"):
        part.unlink(missing_ok=True)


@dataclass
class PrefetchStats:
    documents: int = 0
    queued: int = 0  # new texts handed to the background thread
    embedded: int = 0  # of those, embedded before parsing ended
    seconds: float = 0.0  # encode time in the background thread


class Prefetcher:
    """Chunks parsed documents and embeds their new texts in a background thread; `close()` stops after the encode
    call in progress (what is left is the embeddings stage's work) and writes what it has."""

    def __init__(self, settings: Settings, embedder: Embedder, known: set[str], log: Log):
        self.settings, self.embedder, self.log = settings, embedder, log
        self.dir = prefetch_dir(settings, embedder.tag)
        self.seen = set(known) | prefetched_hashes(settings, embedder.tag)
        self.stats = PrefetchStats()
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._stop = threading.Event()
        self._hashes: list[str] = []
        self._vectors: list[np.ndarray] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="embed-prefetch", daemon=True)
        self._thread.start()

    def add(self, result: ParseResult) -> None:
        """A parsed document: its chunks' texts that have no vector go to the background thread."""
        if result.error_class is not None or self._error is not None:
            return
        elements = elements_from_json(result.elements_json, result.text)
        chunks = chunk_document(result.path, result.text, elements, element_offsets(elements), self.settings.chunker)
        self.stats.documents += 1
        for c in chunks:
            if c.content_hash not in self.seen:
                self.seen.add(c.content_hash)
                self._queue.put((c.content_hash, c.text))
                self.stats.queued += 1

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self._take()
                if not batch:
                    continue
                t0 = time.perf_counter()
                vectors = self.embedder.encode([text for _, text in batch])
                self.stats.seconds += time.perf_counter() - t0
                self._hashes += [h for h, _ in batch]
                self._vectors += list(np.asarray(vectors, dtype=np.float32))
                self.stats.embedded += len(batch)
                if len(self._hashes) >= PART_ROWS:
                    self._write()
        except BaseException as exc:  # an embedder that fails here fails again, worded, in the embeddings stage
            self._error = exc
        finally:
            self._write()

    def _take(self) -> list[tuple[str, str]]:
        try:
            batch = [self._queue.get(timeout=0.2)]
        except queue.Empty:
            return []
        while len(batch) < ENCODE_ROWS:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _write(self) -> None:
        if not self._hashes:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        matrix = np.stack(self._vectors)
        table = pa.table(
            {
                "content_hash": pa.array(self._hashes, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1]),
            }
        )
        tmp = self.dir / f"{uuid.uuid4().hex}.arrow.tmp"
        with ipc.new_file(tmp, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, tmp.with_suffix(""))  # whole or absent: a reader never sees half a part
        self._hashes, self._vectors = [], []

    def close(self) -> PrefetchStats:
        self._stop.set()
        self._thread.join()
        left = self.stats.queued - self.stats.embedded
        if self._error is not None:
            self.log(f"embedding while parsing stopped: {type(self._error).__name__}: {self._error}")
        self.log(
            f"embedded while parsing: {self.stats.embedded} of {self.stats.queued} new chunk texts of "
            f"{self.stats.documents} documents in {self.stats.seconds:.1f} s ({left} left to the embeddings stage)"
        )
        return self.stats


def known_hashes(settings: Settings, embedder_tag: str) -> set[str]:
    """Content hashes the embedder's table already holds a vector for (none when there is no table yet)."""
    db = open_store(settings)
    try:
        table = db.open_table(table_name(embedder_tag))
    except (ValueError, FileNotFoundError):
        return set()
    return set(table_columns(table, ["content_hash"])["content_hash"].to_pylist()) if table.count_rows() else set()


def prefetcher(settings: Settings, log: Log, embedder: Embedder | None = None) -> Prefetcher | None:
    """A Prefetcher for the settings' embedder ([scale].embed_while_parsing; None when off). A local ONNX or API
    embedder gets one thread: the parser worker keeps its core."""
    if not settings.scale.embed_while_parsing:
        return None
    if embedder is None:
        threads = 1 if kind_of(settings.embedder).cpu_only else 0  # torch's thread count is process-wide: left alone
        embedder = LazyEmbedder(settings.embedder, settings.models_dir, threads=threads)
    return Prefetcher(settings, embedder, known_hashes(settings, embedder.tag), log)


def parse_documents_embedding(
    settings: Settings, con: Any, run_id: str, log: Log = lambda _m: None, embedder: Embedder | None = None
) -> dict[str, Any]:
    """The documents stage (ragpipe.ingest.parse_documents) with each parsed document's new chunk texts embedded
    meanwhile; its tables and figures are the same, plus `embedded_while_parsing`."""
    from ragpipe.ingest import parse_documents

    pf = prefetcher(settings, log, embedder)
    if pf is None:
        return parse_documents(settings, con, run_id, log)
    try:
        stats = parse_documents(settings, con, run_id, log, on_parsed=pf.add)
    finally:
        done = pf.close()
    return {**stats, "embedded_while_parsing": done.embedded}
