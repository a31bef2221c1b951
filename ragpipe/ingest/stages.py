"""The ingestion stages over the warehouse: corpus -> documents -> chunks, each incremental (embeddings: ragpipe.embed).

Each function does the work of one Dagster asset and returns the figures its materialization reports.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb

from ragpipe.core import Log, keyed_diff, no_log
from ragpipe.ingest.chunk import Chunk, chunk_document
from ragpipe.ingest.corpus import scan_corpus
from ragpipe.ingest.parse import (
    ParseError,
    ParserUnavailable,
    element_offsets,
    elements_from_json,
    format_of,
    parse_file,
    parser_tag,
)
from ragpipe.ingest.parse_pool import ParserPool, isolation_available, parser_workers, shared_pool
from ragpipe.ingest.parse_worker import failed_under_lower_limits
from ragpipe.settings import Settings
from ragpipe.warehouse import drop_block_cache, first, record_stage, transaction

# Documents parsed or chunked between two drops of DuckDB's block cache (ragpipe.warehouse.drop_block_cache).
CACHE_EVERY_DOCS = 50


def sync_corpus(settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log) -> dict[str, Any]:
    """Record the corpus as it is now (paths and content hashes) and the files that cannot be ingested."""
    t0 = time.time()
    scan = scan_corpus(settings.corpus.dir, settings.corpus.exclude)
    before = dict(con.execute("SELECT path, sha256 FROM corpus_files").fetchall())
    with transaction(con):
        con.execute("DELETE FROM corpus_files")
        if scan.files:
            con.executemany(
                "INSERT INTO corpus_files VALUES (?, ?, ?, ?, ?, now())",
                [[f.path, f.sha256, f.bytes, f.format, run_id] for f in scan.files],
            )
        con.execute("DELETE FROM ingest_errors WHERE stage = 'corpus'")
        for p in scan.problems:
            con.execute(
                "INSERT INTO ingest_errors VALUES (?, 'corpus', NULL, ?, ?, ?, now())",
                [p.path, p.error_class, p.message, run_id],
            )
        stats = {
            "files": len(scan.files),
            "bytes": sum(f.bytes for f in scan.files),
            "problems": len(scan.problems),
            "manifest_sha256": scan.manifest_digest(),
            # What this sync found changed, by file ('' when nothing did; every file 'added' on a first sync).
            "change": keyed_diff(before, {f.path: f.sha256 for f in scan.files}),
        }
        record_stage(con, run_id, "corpus", None, t0, stats)
    for p in scan.problems:
        log(f"corpus: skipped {p.message}")
    return stats


# A document's version: its file's content hash, plus what parsed it when that can change (the PDF engine). Chunks
# record the version they came from (chunks.doc_sha256), parse errors the version that failed.
DOC_VERSION_SQL = "sha256 || CASE WHEN coalesce(parser_tag, '') = '' THEN '' ELSE '+' || parser_tag END"


def doc_version(sha: str, tag: str) -> str:
    return f"{sha}+{tag}" if tag else sha


@dataclass(frozen=True)
class ParseResult:
    """One file's parse as the documents stage records it: a documents row, or (error_class set) an ingest_errors row."""

    path: str  # relative to the corpus directory: the document id
    version: str  # the document version parsed (doc_version: content hash, plus the PDF engine's tag)
    seconds: float
    format: str | None = None
    n_elements: int = 0
    text: str = ""
    elements_json: str = ""
    error_class: str | None = None
    message: str | None = None


def documents_todo(settings: Settings, con: duckdb.DuckDBPyConnection) -> tuple[list[tuple[str, str]], list[str], int]:
    """The documents stage's change detection: (files to parse as (path, version) in path order, documents and parse
    errors of files gone from the corpus, corpus size). A file is parsed when new or changed, or when it failed under
    a lower [parser] limit than the current one."""
    p = settings.parser
    corpus = [
        (path, doc_version(sha, parser_tag(format_of(Path(path)), p.pdf_engine, p.pdf_strategy)))
        for path, sha in con.execute("SELECT path, sha256 FROM corpus_files ORDER BY path").fetchall()
    ]
    parsed = dict(con.execute(f"SELECT doc_id, {DOC_VERSION_SQL} FROM documents").fetchall())
    failed = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT path, sha256, error_class, message FROM ingest_errors WHERE stage = 'parse'"
        ).fetchall()
    }

    def needs_parse(path: str, sha: str) -> bool:
        if parsed.get(path) == sha:
            return False
        if path not in failed or failed[path][0] != sha:
            return True
        return failed_under_lower_limits(failed[path][1], failed[path][2], p.timeout_s, p.max_memory_mb)

    todo = [(path, h) for path, h in corpus if needs_parse(path, h)]
    gone = sorted((set(parsed) | set(failed)) - {path for path, _ in corpus})
    return todo, gone, len(corpus)


def remove_documents(con: duckdb.DuckDBPyConnection, gone: list[str]) -> None:
    with transaction(con):
        for doc_id in gone:
            con.execute("DELETE FROM documents WHERE doc_id = ?", [doc_id])
            con.execute("DELETE FROM ingest_errors WHERE path = ? AND stage = 'parse'", [doc_id])


def parse_one(settings: Settings, pool: ParserPool | None, rel: str, version: str) -> ParseResult:
    """Parse one corpus file (in a worker of `pool`, else in-process); a bad file becomes an error result."""
    p = settings.parser
    path = settings.corpus.dir / rel
    started = time.perf_counter()
    try:
        if pool is not None:
            fmt, text, stored = pool.parse_json(path, p.pdf_strategy, p.timeout_s, p.max_memory_mb, p.pdf_engine)
            n_elements = len(json.loads(stored)["elements"])
        else:  # no child processes possible here: in-process, with only the (main-thread) time limit
            doc = parse_file(path, pdf_strategy=p.pdf_strategy, timeout_s=p.timeout_s, pdf_engine=p.pdf_engine)
            fmt, text, stored, n_elements = doc.format, doc.text, doc.elements_json(), doc.n_elements
    except ParserUnavailable:
        raise  # a broken environment fails the stage; it is not a bad file
    except Exception as exc:  # one bad file never stops the run: record it and go on
        error_class = exc.error_class if isinstance(exc, ParseError) else type(exc).__name__
        msg = str(exc) if isinstance(exc, ParseError) else f"{rel}: {type(exc).__name__}: {exc}"
        if not path.exists():  # the corpus changed under the run: nothing is wrong with the file
            error_class, msg = (
                "FileVanished",
                f"{rel}: removed from the corpus while this run parsed it; the next run drops it",
            )
        msg = msg.replace(path.name + ":", rel + ":", 1) if msg.startswith(path.name + ":") else msg
        return ParseResult(rel, version, time.perf_counter() - started, error_class=error_class, message=msg[:2000])
    return ParseResult(rel, version, time.perf_counter() - started, fmt, n_elements, text, stored)


def record_parse(settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, r: ParseResult) -> None:
    """Write one file's parse: its documents row, or its ingest_errors row (replacing the file's previous ones)."""
    sha, _, tag = r.version.partition("+")
    with transaction(con):
        con.execute("DELETE FROM documents WHERE doc_id = ?", [r.path])
        con.execute("DELETE FROM ingest_errors WHERE path = ? AND stage = 'parse'", [r.path])
        if r.error_class is not None:
            con.execute(
                "INSERT INTO ingest_errors VALUES (?, 'parse', ?, ?, ?, ?, now())",
                [r.path, r.version, r.error_class, r.message, run_id],
            )
            return
        con.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?, ?)",
            [
                r.path,
                str(settings.corpus.dir / r.path),
                sha,
                r.format,
                r.n_elements,
                len(r.text),
                r.text,
                r.elements_json,
                r.seconds,
                run_id,
                tag,
            ],
        )


def record_parses(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    results: Iterable[ParseResult],
    total: int,
    log: Log = no_log,
    on_parsed: Callable[[ParseResult], None] | None = None,
) -> tuple[int, int]:
    """Write parse results in the order given (each then handed to `on_parsed`); returns (documents written, errors
    written)."""
    n_ok = n_err = 0
    for i, r in enumerate(results, 1):
        record_parse(settings, con, run_id, r)
        if on_parsed is not None:
            on_parsed(r)
        if r.error_class is not None:
            n_err += 1
            log(f"parse: [{i}/{total}] FAILED {r.message}")
        else:
            n_ok += 1
            if i % 10 == 0 or i == total:
                log(f"parse: [{i}/{total}] {r.path}: {r.n_elements} elements in {r.seconds:.2f} s")
        if i % CACHE_EVERY_DOCS == 0:
            drop_block_cache(con)
    return n_ok, n_err


def documents_stats(
    con: duckdb.DuckDBPyConnection, run_id: str, t0: float, counts: tuple[int, int], removed: int, unchanged: int
) -> dict[str, Any]:
    """The documents stage's figures, recorded in stage_runs."""
    totals = first(
        con.execute("SELECT count(*), coalesce(sum(n_elements), 0), coalesce(sum(n_chars), 0) FROM documents")
    )
    errors = first(con.execute("SELECT count(*) FROM ingest_errors"))[0]
    stats = {
        "documents": totals[0],
        "elements": int(totals[1]),
        "chars": int(totals[2]),
        "parsed_this_run": counts[0],
        "failed_this_run": counts[1],
        "removed_this_run": removed,
        "unchanged": unchanged,
        "ingest_errors": errors,
    }
    record_stage(con, run_id, "documents", None, t0, stats)
    return stats


def parse_documents(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    log: Log = no_log,
    on_parsed: Callable[[ParseResult], None] | None = None,
) -> dict[str, Any]:
    """Parse new and changed files; drop documents that left the corpus. A bad file becomes an ingest_errors row.

    Files are parsed in worker processes under [parser].timeout_s and [parser].max_memory_mb per document
    (ragpipe.ingest.parse_pool.ParserPool, [parser].workers of them); a file that overran a lower limit than the current one
    is tried again. With [scale].parse_shards > 1 the same work is split into steps (ragpipe.ingest.parse_shards).
    `on_parsed` sees each result once it is recorded (ragpipe.embed.while_parsing embeds its chunks meanwhile).
    """
    t0 = time.time()
    todo, gone, n_corpus = documents_todo(settings, con)
    remove_documents(con, gone)
    pool = shared_pool(parser_workers(settings.parser)) if todo and isolation_available() else None
    executor = ThreadPoolExecutor(max_workers=pool.size, thread_name_prefix="parse") if pool is not None else None

    def work(item: tuple[str, str]) -> ParseResult:
        return parse_one(settings, pool, *item)

    results = executor.map(work, todo) if executor is not None else map(work, todo)
    try:
        counts = record_parses(settings, con, run_id, results, len(todo), log, on_parsed)
    except BaseException:
        if pool is not None:
            pool.close()  # stop the documents in flight now (interrupted, or the warehouse failed); a new pool follows
        raise
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    return documents_stats(con, run_id, t0, counts, len(gone), n_corpus - len(todo))


def chunk_documents(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log
) -> dict[str, Any]:
    """Chunk documents under the current chunker; only documents without chunks for this chunker tag are redone."""
    t0 = time.time()
    tag = settings.chunker_tag
    docs = dict(con.execute(f"SELECT doc_id, {DOC_VERSION_SQL} FROM documents").fetchall())
    have = dict(con.execute("SELECT DISTINCT doc_id, doc_sha256 FROM chunks WHERE chunker_tag = ?", [tag]).fetchall())
    todo = sorted(d for d, sha in docs.items() if have.get(d) != sha)
    gone = sorted(set(have) - set(docs))
    with transaction(con):
        for doc_id in gone:
            con.execute("DELETE FROM chunks WHERE chunker_tag = ? AND doc_id = ?", [tag, doc_id])
    n_chunks = 0
    for i, doc_id in enumerate(todo, 1):
        if i % CACHE_EVERY_DOCS == 0:
            drop_block_cache(con)
        text, elements_json, sha = first(
            con.execute(f"SELECT text, elements_json, {DOC_VERSION_SQL} FROM documents WHERE doc_id = ?", [doc_id])
        )
        elements = elements_from_json(elements_json, text)
        offsets = element_offsets(elements)
        try:
            chunks = chunk_document(doc_id, text, elements, offsets, settings.chunker)
        except Exception as exc:
            with transaction(con):
                con.execute("DELETE FROM ingest_errors WHERE path = ? AND stage = 'chunk'", [doc_id])
                con.execute(
                    "INSERT INTO ingest_errors VALUES (?, 'chunk', ?, ?, ?, ?, now())",
                    [doc_id, sha, type(exc).__name__, f"{doc_id}: chunking failed: {exc}"[:2000], run_id],
                )
            log(f"chunk: FAILED {doc_id}: {exc}")
            continue
        with transaction(con):
            con.execute("DELETE FROM chunks WHERE chunker_tag = ? AND doc_id = ?", [tag, doc_id])
            con.execute("DELETE FROM ingest_errors WHERE path = ? AND stage = 'chunk'", [doc_id])
            con.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        tag,
                        c.chunk_id,
                        c.doc_id,
                        c.seq,
                        c.text,
                        c.start_char,
                        c.end_char,
                        c.section,
                        c.page,
                        c.content_hash,
                        sha,
                        run_id,
                    ]
                    for c in chunks
                ],
            )
        n_chunks += len(chunks)
    total = first(con.execute("SELECT count(*), count(DISTINCT doc_id) FROM chunks WHERE chunker_tag = ?", [tag]))
    stats = {
        "chunker_tag": tag,
        "chunks": total[0],
        "documents": total[1],
        "rechunked_documents": len(todo),
        "chunks_written_this_run": n_chunks,
        "removed_documents": len(gone),
    }
    log(f"chunks [{tag}]: {total[0]} chunks over {total[1]} documents ({len(todo)} documents chunked this run)")
    record_stage(con, run_id, "chunks", tag, t0, stats)
    return stats


def current_chunks(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> list[Chunk]:
    rows = con.execute(
        "SELECT chunk_id, doc_id, seq, text, start_char, end_char, section, page, content_hash "
        "FROM chunks WHERE chunker_tag = ? ORDER BY doc_id, seq",
        [chunker_tag],
    ).fetchall()
    return [Chunk(*r) for r in rows]


def summary(con: duckdb.DuckDBPyConnection, settings: Settings) -> str:
    """What is in the warehouse now, in a few lines a person reads after `make demo`."""
    docs = first(con.execute("SELECT count(*), coalesce(sum(n_elements), 0) FROM documents"))
    by_fmt = con.execute("SELECT format, count(*) FROM documents GROUP BY 1 ORDER BY 1").fetchall()
    n_chunks = first(con.execute("SELECT count(*) FROM chunks WHERE chunker_tag = ?", [settings.chunker_tag]))[0]
    emb = con.execute(
        "SELECT embedder_tag, count(*), sum(n_tokens) FROM embeddings WHERE chunker_tag = ? GROUP BY 1 ORDER BY 1",
        [settings.chunker_tag],
    ).fetchall()
    errors = con.execute("SELECT path, stage, message FROM ingest_errors ORDER BY stage, path").fetchall()
    lines = [
        "INGESTED",
        f"  corpus       {settings.corpus.dir}",
        f"  documents    {docs[0]} ({', '.join(f'{n} {f}' for f, n in by_fmt)}), {docs[1]} elements",
        f"  chunks       {n_chunks} under chunker {settings.chunker_tag}",
    ]
    for tag, n, toks in emb:
        lines.append(f"  embeddings   {n} vectors under embedder {tag} ({toks} tokens)")
    lines.append(f"  errors       {len(errors)}")
    for _path, stage, msg in errors[:20]:
        lines.append(f"    [{stage}] {msg}")
    lines += [
        f'  warehouse    {settings.duckdb_path} (DuckDB; try: ragpipe sql "SELECT * FROM documents")',
        f"  vectors      {settings.lancedb_uri} (LanceDB)",
    ]
    return "\n".join(lines)
