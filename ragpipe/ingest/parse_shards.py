"""Sharded parsing: new and changed files split by a static hash of their path, parsed independently, merged in order.

    plan_parse_shards   (the one DuckDB writer)  the documents stage's change detection; one work file per shard
    parse_shard         (any process or machine that reaches the staging: a shared directory and the corpus, or with
                        an s3:// [warehouse].staging_uri object storage alone, the plan copying the files to parse
                        there)  that shard's parses, journalled file by file and renamed into place when complete
    merge_parse_shards  (the one DuckDB writer)  every shard's results written into DuckDB in path order, exactly as
                        the unsharded stage writes them, so the warehouse is the same whatever the number or order of
                        shards

A parse depends on the file and the [parser] settings alone, so which shard parsed a file does not matter. The staging
directory is named after the plan's content: a run killed after some shards finished is resumed by the next run with
the same plan, which re-parses only the shards without a results file, and in those only the files their journal lacks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

import duckdb

from ragpipe.core import Log, RagpipeError, no_log
from ragpipe.ingest import parse
from ragpipe.ingest.parse_pool import ParserPool, isolation_available, parser_workers
from ragpipe.ingest.stages import (
    ParseResult,
    documents_stats,
    documents_todo,
    parse_one,
    record_parses,
    remove_documents,
)
from ragpipe.settings import Settings
from ragpipe.warehouse import Staging


class StagingError(RagpipeError):
    """A staging directory that does not match the warehouse or lacks a shard's results; the message says what to do."""


def shard_of(doc_id: str, shards: int) -> int:
    """A static partition of documents: the same document lands in the same shard on every machine and run."""
    return int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big") % shards


def _work_name(i: int, n: int) -> str:
    return f"work-{i}-of-{n}.json"


def _results_name(i: int, n: int) -> str:
    return f"results-{i}-of-{n}.jsonl"


CORPUS = "corpus"  # a remote stage's copy of the files to parse, by their corpus-relative path
JOURNAL_SYNC_S = 30.0  # a remote stage gets a copy of a running shard's journal at most this often


def _journal(stage: Path, i: int, n: int) -> Path:
    return stage / f".results-{i}-of-{n}.jsonl.partial"


def _plan_id(settings: Settings, shards: int, todo: list[tuple[str, str]], gone: list[str]) -> str:
    """The plan's content: what is parsed (paths and hashes), how ([parser] settings, parser version), in how many shards."""
    key = [parse.IMPL_VERSION, settings.stage_hash("parser"), shards, todo, gone]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def plan_parse_shards(
    settings: Settings, con: duckdb.DuckDBPyConnection, shards: int, log: Log = no_log
) -> dict[str, Any]:
    """Write one work file per shard with the files to parse; returns the staging directory and counts."""
    todo, gone, n_corpus = documents_todo(settings, con)
    plan_id = _plan_id(settings, shards, todo, gone)
    staging = Staging(settings, f"parse-{plan_id}")
    stage = staging.local
    stage.mkdir(parents=True, exist_ok=True)
    parts: list[list[tuple[str, str]]] = [[] for _ in range(shards)]
    for rel, sha in todo:  # path order within each shard
        parts[shard_of(rel, shards)].append((rel, sha))
    for i, part in enumerate(parts):
        if not staging.has(_work_name(i, shards)):  # an earlier run with the same plan wrote it
            if staging.remote:  # the shard's machine may have no corpus: the files travel with the work
                _stage_corpus(settings, staging, [rel for rel, _ in part])
            _write_atomic(stage / _work_name(i, shards), json.dumps(part))
            staging.publish(_work_name(i, shards))  # last: a work file in the stage means its files are there
    sizes = [len(p) for p in parts]
    log(f"parse plan {plan_id}: {len(todo)} of {n_corpus} files to parse in {shards} shards {sizes}, {len(gone)} gone")
    return {"stage": str(stage), "shards": shards, "files": len(todo), "shard_sizes": sizes, "removed": len(gone)}


def _stage_corpus(settings: Settings, staging: Staging, rels: list[str]) -> None:
    """Copy corpus files into the remote stage (read from the corpus in place, not copied locally)."""
    for rel in rels:
        staging.upload(f"{CORPUS}/{rel}", settings.corpus.dir / rel)


def _fetched_corpus(settings: Settings, staging: Staging, work: list[tuple[str, str]]) -> Settings:
    """Settings whose corpus is the stage's copy of the shard's files (a remote stage), else the settings as they are."""
    if not staging.remote:
        return settings
    for rel, _ in work:
        if not staging.fetch(f"{CORPUS}/{rel}"):
            raise StagingError(f"{staging.remote}: {rel} was not staged with the plan; materialize documents again")
    return dataclasses.replace(settings, corpus=dataclasses.replace(settings.corpus, dir=staging.local / CORPUS))


def _read_journal(path: Path) -> list[str]:
    """The paths a killed shard finished, in order; a line cut short by the kill is dropped from the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    keep = data[: data.rfind(b"\n") + 1]
    if len(keep) != len(data):
        with path.open("r+b") as fh:
            fh.truncate(len(keep))
    return [json.loads(line)["path"] for line in keep.splitlines()]


def parse_shard(
    settings: Settings, stage: Path, i: int, shards: int, log: Log = no_log, workers: int = 0
) -> dict[str, Any]:
    """Parse shard i's files into its results file. Touches no database: only the staging and the corpus (`stage`:
    the plan's staging directory, found by its name on this machine or in [warehouse].staging_uri).

    `workers`: parser processes (0: [parser].workers, else from this machine's cores and memory split `shards` ways).
    """
    staging = Staging(settings, Path(stage).name)
    stage = staging.local
    out = stage / _results_name(i, shards)
    if staging.has(out.name):  # a previous run with the same plan got this far
        log(f"parse shard {i}/{shards}: results already staged by an earlier run")
        return {"shard": i, "parsed": 0, "resumed": True}
    work_path = stage / _work_name(i, shards)
    if not staging.fetch(work_path.name):
        raise StagingError(f"{work_path}: no work file for parse shard {i} of {shards}; run the parse plan first")
    work = [tuple(w) for w in json.loads(work_path.read_text())]
    settings = _fetched_corpus(settings, staging, work)
    journal = _journal(stage, i, shards)
    if not journal.exists():  # a remote stage may hold the journal of this shard killed on another machine
        staging.fetch(journal.name)
    done = _read_journal(journal)
    if done != [rel for rel, _ in work[: len(done)]]:
        raise StagingError(f"{journal}: does not match {work_path.name}; delete {stage} and run again")
    left = work[len(done) :]
    size = workers or parser_workers(settings.parser, share=shards)
    pool = ParserPool(size) if left and isolation_available() else None
    t0, n_err = time.perf_counter(), 0
    synced = t0
    try:
        with ThreadPoolExecutor(max_workers=size, thread_name_prefix="parse") as ex, journal.open("a") as fh:
            results = (
                ex.map(lambda item: parse_one(settings, pool, *item), left)
                if pool
                else (parse_one(settings, None, rel, sha) for rel, sha in left)
            )
            for k, r in enumerate(results, 1):
                fh.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
                fh.flush()  # a killed shard keeps every file finished so far
                if staging.remote and time.perf_counter() - synced >= JOURNAL_SYNC_S:  # and another machine too
                    staging.publish(journal.name)
                    synced = time.perf_counter()
                n_err += r.error_class is not None
                if k % 10 == 0 or k == len(left):
                    rate = k / max(time.perf_counter() - t0, 1e-9)
                    log(
                        f"parse shard {i}/{shards}: {len(done) + k}/{len(work)} files, {rate:.2f} files/s ({size} workers)"
                    )
            os.fsync(fh.fileno())
    finally:
        if pool is not None:
            pool.close()
    os.replace(journal, out)
    staging.publish(out.name)
    staging.release()
    if done:
        log(f"parse shard {i}/{shards}: {len(done)} files kept from a killed run")
    return {
        "shard": i,
        "files": len(work),
        "parsed": len(left),
        "failed": n_err,
        "kept": len(done),
        "resumed": False,
        "workers": size,
    }


def _results(path: Path) -> Iterator[ParseResult]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            yield ParseResult(**json.loads(line))


def staged_results(staging: Staging, shards: int) -> Iterator[ParseResult]:
    """Every shard's results in path order (each results file is in path order: a k-way merge, one line at a time)."""
    names = [_results_name(i, shards) for i in range(shards)]
    missing = [f"{staging.remote or staging.local}/{name}" for name in names if not staging.fetch(name)]
    if missing:
        raise StagingError(
            f"parse shard results missing: {', '.join(missing)}; run those shards' steps (parse_shard_<i>) again"
        )
    return heapq.merge(*(_results(staging.local / name) for name in names), key=lambda r: r.path)


def merge_parse_shards(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, stage: Path, shards: int, log: Log = no_log
) -> dict[str, Any]:
    """Write every shard's results into DuckDB as the unsharded stage would, then drop the staging directory."""
    t0 = time.time()
    staging = Staging(settings, Path(stage).name)
    stage = staging.local
    todo, gone, n_corpus = documents_todo(settings, con)
    if stage.name != f"parse-{_plan_id(settings, shards, todo, gone)}":
        raise StagingError(
            f"{stage}: the warehouse or [parser] settings changed since this parse plan was made; "
            "materialize documents again (a new plan is made)"
        )
    remove_documents(con, gone)
    expected = iter(todo)

    def checked() -> Iterator[ParseResult]:
        for r in staged_results(staging, shards):
            want = next(expected, None)
            if want != (r.path, r.version):
                raise StagingError(f"{stage}: results for {r.path} where {want} was planned; delete it and run again")
            yield r
        if next(expected, None) is not None:
            raise StagingError(f"{stage}: shard results lack planned files; delete it and run again")

    counts = record_parses(settings, con, run_id, checked(), len(todo), log)
    stats = documents_stats(con, run_id, t0, counts, len(gone), n_corpus - len(todo))
    staging.drop()
    return {**stats, "shards": shards}
