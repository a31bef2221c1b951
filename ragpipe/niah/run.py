"""Needle in a haystack: build haystacks and trials, evaluate the subjects, store rows.

Subjects:
- retrieval: the haystack is chunked (ragpipe.chunk with the [chunker] settings), embedded into LanceDB
  (ragpipe.store.sync_vectors: unchanged chunks are never re-embedded), top-k retrieved ([retriever]) and answered.
- full_context: the whole haystack goes to the answerer; a prompt beyond the subject's window is labelled overflow
  (or truncated) and never scored as a miss.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import time
import uuid
from typing import Any, Callable

import duckdb

from ragpipe.answer import Answer, ExtractiveAnswerer, load_answerer
from ragpipe.niah.haystack import Tokenizer, load_tokenizer
from ragpipe.niah.needles import (
    Needle,
    locate_prompt,
    reasoning_prompt,
    structured_prompt,
)
from ragpipe.niah.scoring import evidence_contains, extract_json, score_answer, score_reasoning
from ragpipe.niah.settings import NiahSettings, haystack_dir, niah_settings
from ragpipe.niah.trials import Log, Progress, Trial, build_trials, load_haystacks, noop
from ragpipe.settings import Settings
from ragpipe.warehouse import transaction

DEFAULT_WINDOWS = {"openai": 128_000, "smollm2": 8_192, "extractive": 0}
PROMPT_OVERHEAD = 64  # tokens of system prompt and framing around the haystack
_OVERFLOW_ERR = re.compile(r"context|too long|maximum|token limit|HTTP 413", re.IGNORECASE)


# --------------------------------------------------------------------------------------------------- subjects
class RetrievalContexts:
    """Chunk, embed (reusing vectors by content hash) and retrieve over one trial haystack at a time."""

    def __init__(self, settings: Settings, run_id: str):
        from ragpipe import store
        from ragpipe.embed import load_embedder

        self.settings = settings
        self.run_id = run_id
        self.emb = load_embedder(settings.embedder, settings.models_dir)
        # Scratch tables for the trial haystacks: always local, whatever [warehouse].lancedb_uri says (they are
        # rebuilt per trial and never read by anything else).
        self.db = store.connect(settings.warehouse_dir / "niah" / "lancedb")
        self.mode, self.k = settings.retriever.mode, settings.retriever.k

    def chunks(self, text: str) -> list[Any]:
        from unstructured.documents.elements import NarrativeText, Table

        from ragpipe.chunk import chunk_document
        from ragpipe.parse import ELEMENT_SEPARATOR, element_offsets

        paras = [p for p in text.split(ELEMENT_SEPARATOR) if p.strip()]
        elements = [Table(text=p) if p.count("\n|") >= 2 else NarrativeText(text=p) for p in paras]
        joined = ELEMENT_SEPARATOR.join(e.text for e in elements)
        return chunk_document("niah-haystack", joined, elements, element_offsets(elements), self.settings.chunker)

    def retrieve(self, text: str, questions: list[str]) -> list[tuple[list[str], list[int]]]:
        """For each question: the top-k chunk texts (ranked)."""
        from ragpipe import store
        from ragpipe.retrieve import retrieve_many

        chunks = self.chunks(text)
        table, _ = store.sync_vectors(self.db, self.emb, chunks, self.run_id)
        if self.mode != "vector":
            store.ensure_fts_index(table)
        by_id = {c.chunk_id: c.text for c in chunks}
        vecs = self.emb.encode(questions) if self.mode != "fts" else None
        ranked = retrieve_many(table, self.mode, self.k, questions, vecs)
        return [([by_id[h.chunk_id] for h in hits if h.chunk_id in by_id], [h.rank for h in hits]) for hits in ranked]


def _fields_json(n: Needle) -> dict[str, Any]:
    return {"key": n.key, "fields": n.fields}


def _row_base(t: Trial, subject: str, answerer_label: str, tok: Tokenizer, ns: NiahSettings) -> dict[str, Any]:
    return {
        "trial_id": t.trial_id,
        "subject": subject,
        "answerer": answerer_label,
        "tokenizer": tok.name,
        "seed": t.seed,
        "length_target": t.length_target,
        "filler_tokens": t.filler_tokens,
        "haystack_tokens": t.placement.n_tokens,
        "depth_target": t.depth_target,
        "depth_actual": t.placement.depth,
        "offset_requested": t.placement.offset_requested,
        "offset_actual": t.placement.offset,
        "offset2_actual": t.placement.offset2,
        "rep": t.rep,
        "needle_type": t.needle_type,
        "surface": t.needle.surface,
        "method": t.method,
        "needle_key": t.needle.key,
        "needle_text": t.needle.text,
        "question": t.question,
        "expected_json": json.dumps(t.needle.fields, sort_keys=True),
        "distractors_json": json.dumps([_fields_json(d) for d in t.distractors], sort_keys=True),
        "n_distractors": len(t.distractors),
        "off_theme_ratio": ns.off_theme_ratio,
        "haystack_sha256": t.haystack_sha256,
        "window_tokens": None,
        "input_tokens_est": None,
        "status": "scored",
        "answer": None,
        "answer_format": None,
        "schema_ok": None,
        "exact": None,
        "field_score": None,
        "refused": None,
        "hallucinated": None,
        "distractor_hit": None,
        "output_chars": None,
        "input_tokens": None,
        "output_tokens": None,
        "latency_s": None,
        "retrieval_score": None,
        "reasoning_task": t.needle.reasoning.kind,
        "reasoning_answer": None,
        "reasoning_score": None,
        "retrieved_ranks": None,
        "error": None,
    }


def evaluate_subject(
    subject: str,
    trials: list[Trial],
    settings: Settings,
    ns: NiahSettings,
    tok: Tokenizer,
    answerer: Any,
    run_id: str,
    progress: Progress = noop,
    log: Log = noop,
) -> list[dict[str, Any]]:
    """Evaluate every trial on one subject; one row per trial."""
    structured = not isinstance(answerer, ExtractiveAnswerer)  # the extractive baseline cannot emit JSON
    refusal = settings.answerer.refusal_phrase
    phrases = settings.answerer.refusal_phrases
    rows = [_row_base(t, subject, answerer.label, tok, ns) for t in trials]
    contexts: list[list[str] | None] = [None] * len(trials)

    if subject == "retrieval":
        rc = RetrievalContexts(settings, run_id)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, t in enumerate(trials):
            groups.setdefault(t.cell_key, []).append(i)
        for gi, idx in enumerate(groups.values()):
            got = rc.retrieve(trials[idx[0]].placement.text, [trials[i].question for i in idx])
            for i, (texts, _ranks) in zip(idx, got):
                contexts[i] = texts
                holding = [
                    r + 1 for r, c in enumerate(texts) if any(p.split("\n")[0] in c for p in trials[i].needle.parts)
                ]
                rows[i]["retrieved_ranks"] = holding
                rows[i]["retrieval_score"] = evidence_contains("\n\n".join(texts), trials[i].needle)
            progress(f"{subject}: retrieve", gi + 1, len(groups))
    else:
        kind = settings.answerer.kind
        window = ns.window or DEFAULT_WINDOWS.get(kind, 0)
        counter = getattr(answerer, "tokenizer", None)  # smollm2 counts with its own tokenizer
        for i, t in enumerate(trials):
            text = t.placement.text
            q_tokens = tok.count(structured_prompt(t.needle, t.method, refusal))
            n_in = (
                (len(counter(text)["input_ids"]) if counter is not None else t.placement.n_tokens)
                + q_tokens
                + PROMPT_OVERHEAD
            )
            rows[i]["input_tokens_est"] = n_in
            rows[i]["window_tokens"] = window or None
            budget = window - settings.answerer.openai.max_tokens if window else 0
            if window and n_in > budget:
                if ns.on_overflow == "skip":
                    rows[i]["status"] = "overflow"
                    continue
                keep = max(0, budget - q_tokens - PROMPT_OVERHEAD)
                starts = tok.starts(text)
                cut = starts[keep] if keep < len(starts) else len(text)
                text = text[:cut]
                end = t.placement.char + len(t.needle.parts[0])
                if end > cut or any(p not in text for p in t.needle.parts):
                    rows[i]["status"] = "truncated"  # the needle was cut away: not a miss
                    continue
                rows[i]["error"] = f"haystack truncated to {keep} tokens to fit the window; the needle survived"
            contexts[i] = [text]

    # Step 1: answer (locate: quote first).
    todo = [i for i in range(len(trials)) if contexts[i] is not None]
    prompts = []
    for i in todo:
        t = trials[i]
        if t.method == "locate":
            prompts.append(locate_prompt(t.needle, refusal) if structured else t.question)
        else:
            prompts.append(structured_prompt(t.needle, t.method, refusal) if structured else t.question)
    t0 = time.perf_counter()
    first = _answer_all(answerer, [(p, contexts[i]) for p, i in zip(prompts, todo)], progress, f"{subject}: answer")
    answers: dict[int, list[Answer]] = {i: [a] for i, a in zip(todo, first)}
    quotes: dict[int, str] = {}
    loc = [i for i in todo if trials[i].method == "locate" and answers[i][0].error is None]
    if loc:
        for i in loc:
            obj = extract_json(answers[i][0].text) if structured else None
            q = obj.get("quote") if isinstance(obj, dict) else answers[i][0].text
            quotes[i] = q if isinstance(q, str) else ""
        second = _answer_all(
            answerer,
            [
                (
                    structured_prompt(trials[i].needle, "direct", refusal) if structured else trials[i].question,
                    [quotes[i]],
                )
                for i in loc
            ],
            progress,
            f"{subject}: answer from the located quote",
        )
        for i, a in zip(loc, second):
            answers[i].append(a)
    log(
        f"{subject}: {len(todo)} trials answered in {time.perf_counter() - t0:.1f} s "
        f"({len(trials) - len(todo)} overflow or truncated)"
    )

    # Score.
    follow: list[tuple[int, str, list[str]]] = []
    for i in todo:
        t, row, parts = trials[i], rows[i], answers[i]
        final = parts[-1]
        row.update(
            answer=final.text,
            output_chars=len(final.text),
            latency_s=round(sum(a.latency_s for a in parts), 6),
            input_tokens=sum(a.input_tokens for a in parts),
            output_tokens=sum(a.output_tokens for a in parts),
        )
        err = next((a.error for a in parts if a.error), None)
        if err:
            row.update(status="overflow" if _OVERFLOW_ERR.search(err) else "error", error=err)
            continue
        s = score_answer(
            final.text, t.needle, list(t.distractors), phrases, structured=structured, with_quote=t.method == "cite"
        )
        row.update(
            answer_format=s.answer_format,
            schema_ok=s.schema_ok,
            exact=s.exact,
            field_score=s.field_score,
            refused=s.refused,
            hallucinated=s.hallucinated,
            distractor_hit=s.distractor_hit,
        )
        quote = quotes.get(i) if t.method == "locate" else (s.quote if t.method == "cite" else None)
        if subject == "full_context":
            row["retrieval_score"] = evidence_contains(quote, t.needle) if quote is not None else None
            evidence = [quote] if quote else None
        else:
            evidence = contexts[i]
        if ns.reasoning and evidence and (row["retrieval_score"] or 0) >= 1.0:
            task = t.needle.reasoning
            follow.append((i, reasoning_prompt(task) if structured else task.question, evidence))
    if follow:
        got = _answer_all(answerer, [(p, ev) for _, p, ev in follow], progress, f"{subject}: reasoning")
        for (i, _, _), a in zip(follow, got):
            rows[i]["reasoning_answer"] = a.text
            rows[i]["reasoning_score"] = None if a.error else score_reasoning(a.text, trials[i].needle.reasoning)
    return rows


def _answer_all(answerer: Any, items: list[tuple[str, list[str]]], progress: Progress, stage: str) -> list[Answer]:
    """Answer in slices so long runs report progress (the answerer's own concurrency applies within a slice)."""
    out: list[Answer] = []
    step = max(8, getattr(getattr(answerer, "cfg", None), "concurrency", 1) * 4)
    for j in range(0, len(items), step):
        out += answerer.answer_all(items[j : j + step])
        progress(stage, len(out), len(items))
    return out


# ------------------------------------------------------------------------------------------------------ run
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
]


def new_run_id() -> str:
    return f"niah-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_trials(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    trigger: str = "manual",
    log: Log = noop,
    progress: Progress = noop,
    answerer: Any = None,
    trial_filter: Callable[[Trial], Trial | None] | None = None,
) -> dict[str, Any]:
    """Evaluate every trial of the grid on every configured subject; write niah_runs and niah_trials.

    `trial_filter` may drop or rewrite trials (tests use it to mark prompts for the fake endpoint).
    """
    ns = niah_settings(settings)
    tok = load_tokenizer(ns.tokenizer)
    t0 = time.perf_counter()
    key, haystacks = load_haystacks(settings, con, run_id, log)
    trials = build_trials(ns, haystacks, tok, progress)
    if trial_filter is not None:
        trials = [x for x in (trial_filter(t) for t in trials) if x is not None]
    answerer = answerer or load_answerer(settings.answerer)
    with transaction(con):
        con.execute("DELETE FROM niah_trials WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM niah_runs WHERE run_id = ?", [run_id])
        con.execute(
            "INSERT INTO niah_runs (run_id, started_at, trigger, seed, niah_settings, haystack_key, haystack_source, "
            "subjects, tokenizer, answerer_label, embedder_tag, chunker_tag, retriever) "
            "VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                trigger,
                ns.seed,
                json.dumps(dataclasses.asdict(ns), sort_keys=True),
                key,
                str(haystack_dir(settings, ns)),
                list(ns.subjects),
                tok.name,
                answerer.label,
                None,
                settings.chunker_tag,
                json.dumps(dataclasses.asdict(settings.retriever)),
            ],
        )
    rows: list[dict[str, Any]] = []
    embedder_tag = None
    for subject in ns.subjects:
        rows += evaluate_subject(subject, trials, settings, ns, tok, answerer, run_id, progress, log)
        if subject == "retrieval":
            from ragpipe.embed import load_embedder

            embedder_tag = load_embedder(settings.embedder, settings.models_dir).tag
    secs = time.perf_counter() - t0
    with transaction(con):
        con.executemany(
            f"INSERT INTO niah_trials ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
            [[run_id] + [r[c] for c in COLUMNS[1:]] for r in rows],
        )
        con.execute(
            "UPDATE niah_runs SET finished_at = now(), n_trials = ?, seconds = ?, trials_per_s = ?, embedder_tag = ? "
            "WHERE run_id = ?",
            [len(rows), secs, len(rows) / secs if secs > 0 else None, embedder_tag, run_id],
        )
    by_status: dict[str, int] = {}
    for r in rows:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    scored = [r for r in rows if r["status"] == "scored"]
    log(f"niah run {run_id}: {len(rows)} trial rows in {secs:.1f} s ({len(rows) / max(secs, 1e-9):.2f}/s), {by_status}")
    return {
        "run_id": run_id,
        "trials": len(trials),
        "rows": len(rows),
        "seconds": round(secs, 2),
        "trials_per_s": round(len(rows) / secs, 3) if secs > 0 else None,
        **{f"status_{k}": v for k, v in by_status.items()},
        "exact": round(sum(r["exact"] for r in scored) / len(scored), 4) if scored else None,
        "haystack_key": key,
        "tokenizer": tok.name,
        "answerer": answerer.label,
    }
