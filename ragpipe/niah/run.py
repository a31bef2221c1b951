"""Needle in a haystack: run the grid on every subject, one stored row per finished trial, resumable.

A run is keyed by what its results depend on (run_key: the [niah] settings, the answerer, and for the retrieval
subject the chunker, embedder and retriever; the haystacks' key; the implementation version). Each trial's row is
written as soon as it is scored, so a run that stops (Ctrl-C, a crash, a cancelled Dagster run) keeps what it did;
the next run with the same key continues that run id and evaluates only the trials it lacks.
Subjects and the window check: ragpipe.niah.subjects.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import time
import uuid
from typing import Any, Callable

import duckdb

from ragpipe.niah.haystack import Tokenizer, load_tokenizer
from ragpipe.niah.sources import IMPL_VERSION, haystack_dir
from ragpipe.niah.subjects import (
    DEFAULT_WINDOWS,
    PROMPT_OVERHEAD,
    PromptCounter,
    RetrievalContexts,
    evaluate_trials,
    window_counter,
)
from ragpipe.niah.summary_path import Summaries
from ragpipe.niah.trials import Log, Progress, Trial, build_trials, load_haystacks, noop, prefix_sharing_order
from ragpipe.rag import load_answerer
from ragpipe.settings import NiahSettings, Settings
from ragpipe.warehouse import first, transaction

__all__ = ["COLUMNS", "DEFAULT_WINDOWS", "PROMPT_OVERHEAD", "evaluate_subject", "new_run_id", "run_key", "run_trials"]

COLUMNS = [
    "run_id",
    "trial_id",
    "subject",
    "answerer",
    "tokenizer",
    "seed",
    "length_target",
    "filler_tokens",
    "haystack_tokens",
    "depth_target",
    "depth_actual",
    "offset_requested",
    "offset_actual",
    "offset2_actual",
    "rep",
    "needle_type",
    "surface",
    "method",
    "needle_key",
    "needle_text",
    "question",
    "expected_json",
    "distractors_json",
    "n_distractors",
    "off_theme_ratio",
    "haystack_sha256",
    "window_tokens",
    "input_tokens_est",
    "window_counter",
    "status",
    "answer",
    "answer_format",
    "schema_ok",
    "exact",
    "field_score",
    "refused",
    "hallucinated",
    "distractor_hit",
    "output_chars",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "retrieval_score",
    "reasoning_task",
    "reasoning_answer",
    "reasoning_score",
    "retrieved_ranks",
    "error",
    "summary_tokens",
    "summary_latency_s",
]


def new_run_id() -> str:
    return f"niah-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_key(settings: Settings, ns: NiahSettings, haystack_key: str) -> str:
    """What a run's rows depend on; a stopped run with the same key is continued, not redone."""
    answerer = settings.versioned("answerer")  # less threads: a run stopped under one count resumes under another
    answerer.get("openai", {}).pop("api_key_env", None)
    payload: dict[str, Any] = {"impl": IMPL_VERSION, "niah": dataclasses.asdict(ns), "answerer": answerer}
    payload["haystacks"] = haystack_key
    if "retrieval" in ns.subjects:
        for section in ("chunker", "embedder", "retriever"):
            payload[section] = settings.versioned(section)
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def evaluate_subject(
    subject: str,
    trials: list[Trial],
    settings: Settings,
    ns: NiahSettings,
    tok: Tokenizer,
    answerer: Any,
    run_id: str,
    counter: tuple[str, PromptCounter] | None = None,
) -> list[dict[str, Any]]:
    """Every trial on one subject, in memory (no storage, no resume): one row per trial."""
    return evaluate_trials(
        subject, trials, settings, ns, tok, answerer, _source(subject, settings, ns, run_id, answerer, tok), counter
    )


def _source(subject: str, settings: Settings, ns: NiahSettings, run_id: str, answerer: Any, tok: Tokenizer) -> Any:
    """Where a subject's contexts come from: the retrieval pipeline, the summaries (window-sized pieces), or nothing."""
    if subject == "retrieval":
        return RetrievalContexts(settings, run_id)
    if subject == "summary":
        window = ns.window or DEFAULT_WINDOWS.get(settings.answerer.kind, 0)
        budget = window - settings.answerer.openai.max_tokens - PROMPT_OVERHEAD if window else 0
        return Summaries(answerer, tok, budget)
    return None


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _insert(con: duckdb.DuckDBPyConnection, run_id: str, rows: list[dict[str, Any]], seconds: float) -> None:
    """Store finished trials and the run's seconds so far (over every start of a resumed run)."""
    with transaction(con):
        con.executemany(
            f"INSERT INTO niah_trials ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
            [[run_id] + [r[c] for c in COLUMNS[1:]] for r in rows],
        )
        con.execute("UPDATE niah_runs SET seconds = ? WHERE run_id = ?", [seconds, run_id])


def _start_or_resume(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    ns: NiahSettings,
    run_id: str,
    key: str,
    rkey: str,
    trigger: str,
    tok: Tokenizer,
    answerer_label: str,
    resume: bool,
) -> tuple[str, set[tuple[str, str]]]:
    """The run id to write under and the (trial_id, subject) pairs it already holds."""
    if resume:
        row = con.execute(
            "SELECT run_id FROM niah_runs WHERE run_key = ? AND finished_at IS NULL ORDER BY started_at DESC LIMIT 1",
            [rkey],
        ).fetchone()
        if row:
            done = {
                (r[0], r[1])
                for r in con.execute("SELECT trial_id, subject FROM niah_trials WHERE run_id = ?", [row[0]]).fetchall()
            }
            with transaction(con):
                con.execute("UPDATE niah_runs SET resumed_trials = ? WHERE run_id = ?", [len(done), row[0]])
            return row[0], done
    with transaction(con):
        con.execute("DELETE FROM niah_trials WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM niah_runs WHERE run_id = ?", [run_id])
        con.execute(
            "INSERT INTO niah_runs (run_id, started_at, trigger, seed, niah_settings, haystack_key, haystack_source, "
            "subjects, tokenizer, answerer_label, embedder_tag, chunker_tag, retriever, run_key, resumed_trials) "
            "VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            [
                run_id,
                trigger,
                ns.seed,
                json.dumps(dataclasses.asdict(ns), sort_keys=True),
                key,
                str(haystack_dir(settings, ns)),
                list(ns.subjects),
                tok.name,
                answerer_label,
                None,
                settings.chunker_tag,
                json.dumps(dataclasses.asdict(settings.retriever)),
                rkey,
            ],
        )
    return run_id, set()


class _Eta:
    """The ETA of a run: trials weighted by their haystack's tokens (a prompt beyond the window costs next to nothing:
    it is not sent), the rate so far applied to the weight left."""

    def __init__(self, settings: Settings, ns: NiahSettings, trials: list[Trial], done: set[tuple[str, str]]):
        self.window = ns.window or DEFAULT_WINDOWS.get(settings.answerer.kind, 0)
        self.budget = self.window - settings.answerer.openai.max_tokens - PROMPT_OVERHEAD
        self.spent = 0.0
        self.left = sum(self.weight(t, s) for s in ns.subjects for t in trials if (t.trial_id, s) not in done)

    def weight(self, t: Trial, subject: str) -> float:
        beyond = subject == "full_context" and self.window and t.placement.n_tokens > self.budget
        return 1.0 if beyond else float(t.placement.n_tokens)

    def after(self, batch: list[Trial], subject: str, elapsed: float) -> float:
        """Seconds left once `batch` is done, `elapsed` seconds into the run."""
        w = sum(self.weight(t, subject) for t in batch)
        self.spent, self.left = self.spent + w, self.left - w
        return elapsed / self.spent * self.left if self.spent else 0.0


def _log_batch(
    log: Log, batch: list[Trial], rows: list[dict[str, Any]], subject: str, first: int, total: int, b0: float, tail: str
) -> None:
    """One line per trial of a finished batch: `first` is the run's count of its first trial, `b0` when the batch
    started, `tail` the run's elapsed time and ETA."""
    for k, (t, r) in enumerate(zip(batch, rows)):
        outcome = r["status"] if r["status"] != "scored" else f"exact={r['exact']:g}"
        log(
            f"trial {first + k}/{total} {subject} "
            f"{t.length_target} tokens, depth {t.depth_target:g}%, rep {t.rep}, {t.needle_type}, {t.method}: "
            f"{outcome} ({r['input_tokens_est'] or r['haystack_tokens']} prompt tokens, "
            f"{(time.perf_counter() - b0) / len(rows):.1f} s); {tail}"
        )


def _finish(
    con: duckdb.DuckDBPyConnection, run_id: str, seconds: float, per_s: float | None, embedder_tag: str | None
) -> tuple[int, dict[str, int], Any]:
    """Close the run's niah_runs row; returns its trial rows, their count by status and the scored ones' mean exact."""
    n_rows, by = con.execute(
        "SELECT count(*), list(status) FROM niah_trials WHERE run_id = ?", [run_id]
    ).fetchone() or (0, [])
    by_status: dict[str, int] = {}
    for st in by or []:
        by_status[st] = by_status.get(st, 0) + 1
    exact = first(con.execute("SELECT avg(exact) FROM niah_trials WHERE run_id = ? AND status = 'scored'", [run_id]))[0]
    with transaction(con):
        con.execute(
            "UPDATE niah_runs SET finished_at = now(), n_trials = ?, seconds = ?, "
            "trials_per_s = ?, embedder_tag = coalesce(?, embedder_tag) WHERE run_id = ?",
            [n_rows, seconds, per_s, embedder_tag, run_id],
        )
    return n_rows, by_status, exact


def run_trials(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    trigger: str = "manual",
    log: Log = noop,
    progress: Progress = noop,
    answerer: Any = None,
    trial_filter: Callable[[Trial], Trial | None] | None = None,
    resume: bool = True,
    counter: tuple[str, PromptCounter] | None = None,
) -> dict[str, Any]:
    """Evaluate every trial of the grid on every configured subject; write niah_runs and one niah_trials row per
    trial as it finishes. With `resume`, an unfinished run of the same run key is continued under its own run id.

    `trial_filter` may drop or rewrite trials (tests use it to mark prompts for the fake endpoint); `counter`
    replaces the window check's token counter (tests).
    """
    ns = settings.niah
    tok = load_tokenizer(ns.tokenizer)
    t0 = time.perf_counter()
    key, haystacks = load_haystacks(settings, con, run_id, log)
    trials = build_trials(ns, haystacks, tok, progress)
    if trial_filter is not None:
        trials = [x for x in (trial_filter(t) for t in trials) if x is not None]
    trials = prefix_sharing_order(trials, haystacks)
    answerer = answerer or load_answerer(settings.answerer)
    rkey = run_key(settings, ns, key)
    run_id, done = _start_or_resume(con, settings, ns, run_id, key, rkey, trigger, tok, answerer.label, resume)
    total = len(trials) * len(ns.subjects)
    if done:
        log(f"resuming niah run {run_id} (run key {rkey}): {len(done)} of {total} trial rows already stored")
    step = max(1, min(int(getattr(answerer, "progress_step", 1) or 1), 16))
    counter = counter or window_counter(answerer, tok)
    finished, new_rows, started = len(done), 0, time.perf_counter()
    eta = _Eta(settings, ns, trials, done)
    base_s = first(con.execute("SELECT coalesce(seconds, 0) FROM niah_runs WHERE run_id = ?", [run_id]))[0]
    embedder_tag = None
    for subject in ns.subjects:
        todo = [t for t in trials if (t.trial_id, subject) not in done]
        source = _source(subject, settings, ns, run_id, answerer, tok) if todo else None
        if isinstance(source, RetrievalContexts):
            embedder_tag = source.emb.tag
        for j in range(0, len(todo), step):
            batch = todo[j : j + step]
            b0 = time.perf_counter()
            rows = evaluate_trials(subject, batch, settings, ns, tok, answerer, source, counter)
            _insert(con, run_id, rows, base_s + time.perf_counter() - t0)  # a stop loses at most this slice
            finished += len(rows)
            new_rows += len(rows)
            elapsed = time.perf_counter() - started
            tail = f"elapsed {_clock(elapsed)}, ETA {_clock(eta.after(batch, subject, elapsed))}"
            _log_batch(log, batch, rows, subject, finished - len(rows) + 1, total, b0, tail)
            progress(f"{subject}: trials", finished, total)
    secs = time.perf_counter() - t0
    per_s = new_rows / secs if secs > 0 else None
    n_rows, by_status, exact = _finish(con, run_id, base_s + secs, per_s, embedder_tag)
    log(
        f"niah run {run_id}: {new_rows} trial rows evaluated in {secs:.1f} s ({new_rows / max(secs, 1e-9):.2f}/s), "
        f"{len(done)} reused from before, {by_status}"
    )
    return {
        "run_id": run_id,
        "run_key": rkey,
        "trials": len(trials),
        "rows": n_rows,
        "evaluated": new_rows,
        "resumed": len(done),
        "seconds": round(secs, 2),
        "trials_per_s": round(new_rows / secs, 3) if secs > 0 else None,
        **{f"status_{k}": v for k, v in by_status.items()},
        "exact": None if exact is None else round(float(exact), 4),
        "haystack_key": key,
        "tokenizer": tok.name,
        "window_counter": counter[0] if "full_context" in ns.subjects else None,
        "answerer": answerer.label,
    }
