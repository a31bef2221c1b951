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
import hashlib
import json
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from ragpipe.answer import Answer, ExtractiveAnswerer, load_answerer
from ragpipe.niah.haystack import Haystack, Tokenizer, build_haystack, load_tokenizer, place_needle, source_paragraphs
from ragpipe.niah.needles import (
    Needle,
    Placement,
    locate_prompt,
    make_needles,
    question_text,
    reasoning_prompt,
    structured_prompt,
)
from ragpipe.niah.scoring import evidence_contains, extract_json, score_answer, score_reasoning
from ragpipe.niah.settings import IMPL_VERSION, NiahSettings, haystack_dir, niah_settings, off_theme_dir, sub_seed
from ragpipe.settings import Settings
from ragpipe.warehouse import transaction

Log = Callable[[str], None]
Progress = Callable[[str, int, int], None]  # (stage, done, total)

DEFAULT_WINDOWS = {"openai": 128_000, "smollm2": 8_192, "extractive": 0}
PROMPT_OVERHEAD = 64  # tokens of system prompt and framing around the haystack
_OVERFLOW_ERR = re.compile(r"context|too long|maximum|token limit|HTTP 413", re.IGNORECASE)


def _noop(*_: Any) -> None:
    pass


# ------------------------------------------------------------------------------------------------- haystacks
def haystack_key(settings: Settings, ns: NiahSettings, docs: list[list[str]], off: list[str] | None) -> str:
    payload = json.dumps(
        {
            "impl": IMPL_VERSION,
            "seed": ns.seed,
            "tokenizer": ns.tokenizer,
            "ratio": ns.off_theme_ratio,
            "docs": docs,
            "off": off,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _sources(settings: Settings, ns: NiahSettings) -> tuple[Path, list[list[str]], list[str] | None]:
    src = haystack_dir(settings, ns)
    docs = source_paragraphs(src)
    od = off_theme_dir(settings, ns)
    off = [p for d in source_paragraphs(od) for p in d] if od else None
    return src, docs, off


def build_haystacks(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop, progress: Progress = _noop
) -> dict[str, Any]:
    """Build (or reuse, by key) one filler haystack per (length, repetition) and store them in niah_haystacks."""
    ns = niah_settings(settings)
    tok = load_tokenizer(ns.tokenizer)
    src, docs, off = _sources(settings, ns)
    key = haystack_key(settings, ns, docs, off)
    have = {
        (r[0], r[1])
        for r in con.execute("SELECT length_target, rep FROM niah_haystacks WHERE haystack_key = ?", [key]).fetchall()
    }
    todo = [(n, r) for n in ns.lengths for r in range(ns.repetitions) if (n, r) not in have]
    built: list[Haystack] = []
    for i, (n, r) in enumerate(todo):
        h = build_haystack(docs, n, r, ns.seed, tok, ns.off_theme_ratio, off, source=str(src))
        built.append(h)
        progress("haystacks", i + 1, len(todo))
        log(
            f"haystack {n} tokens rep {r}: {h.n_tokens} tokens, {h.n_paragraphs} paragraphs "
            f"({h.n_off_theme} off-theme) in {h.build_seconds:.2f} s"
        )
    if built:
        with transaction(con):
            con.executemany(
                "INSERT OR REPLACE INTO niah_haystacks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                [
                    [
                        key,
                        h.length_target,
                        h.rep,
                        h.seed,
                        h.tokenizer,
                        h.source,
                        h.n_tokens,
                        len(h.text),
                        h.n_paragraphs,
                        h.n_off_theme,
                        h.repeats,
                        h.sha256,
                        h.text,
                        h.build_seconds,
                        run_id,
                    ]
                    for h in built
                ],
            )
    rows = con.execute(
        "SELECT count(*), sum(n_tokens), max(build_seconds) FROM niah_haystacks WHERE haystack_key = ?", [key]
    ).fetchone()
    return {
        "haystack_key": key,
        "source": str(src),
        "tokenizer": tok.name,
        "haystacks": rows[0],
        "built_this_run": len(built),
        "total_tokens": int(rows[1] or 0),
        "max_build_seconds": round(float(rows[2] or 0.0), 3),
    }


def load_haystacks(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop
) -> tuple[str, dict[tuple[int, int], Haystack]]:
    ns = niah_settings(settings)
    stats = build_haystacks(settings, con, run_id, log)  # a no-op when they are stored
    key = stats["haystack_key"]
    out = {}
    for row in con.execute(
        "SELECT length_target, rep, seed, tokenizer, source, text, n_tokens, n_paragraphs, n_off_theme, repeats, "
        "build_seconds FROM niah_haystacks WHERE haystack_key = ?",
        [key],
    ).fetchall():
        n, r = row[0], row[1]
        if n in ns.lengths and r < ns.repetitions:
            out[(n, r)] = Haystack(*row)
    return key, out


# ---------------------------------------------------------------------------------------------------- trials
@dataclass(frozen=True)
class Trial:
    trial_id: str
    length_target: int
    depth_target: float
    rep: int
    needle_type: str
    method: str
    seed: int
    needle: Needle
    distractors: tuple[Needle, ...]
    placement: Placement
    filler_tokens: int
    haystack_sha256: str
    question: str  # the bare question (the method's wording); prompts add the schema

    @property
    def cell_key(self) -> tuple[int, float, int, str]:
        """Trials that share a haystack (all methods of one needle)."""
        return (self.length_target, self.depth_target, self.rep, self.needle_type)


def build_trials(
    ns: NiahSettings, haystacks: dict[tuple[int, int], Haystack], tok: Tokenizer, progress: Progress = _noop
) -> list[Trial]:
    """Every (length, depth, repetition, needle type, method): a function of the seed only."""
    out: list[Trial] = []
    cells = [
        (n, d, r, t) for n in ns.lengths for d in ns.depths for r in range(ns.repetitions) for t in ns.needle_types
    ]
    for i, (n, d, r, t) in enumerate(cells):
        h = haystacks[(n, r)]
        seed = sub_seed(ns.seed, "trial", n, d, r, t)
        needle, distractors = make_needles(t, seed, ns.distractors)
        pl = place_needle(h.text, needle, distractors, d, tok, seed, ns.cross_gap)
        sha = hashlib.sha256(pl.text.encode()).hexdigest()
        for m in ns.methods:
            tid = "nt_" + hashlib.sha256(f"{ns.seed}|{n}|{d}|{r}|{t}|{m}".encode()).hexdigest()[:14]
            out.append(
                Trial(
                    tid, n, d, r, t, m, seed, needle, tuple(distractors), pl, h.n_tokens, sha, question_text(needle, m)
                )
            )
        progress("trials", i + 1, len(cells))
    return out


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
        from ragpipe.retrieve import retrieve

        chunks = self.chunks(text)
        table, _ = store.sync_vectors(self.db, self.emb, chunks, self.run_id)
        if self.mode != "vector":
            store.ensure_fts_index(table)
        by_id = {c.chunk_id: c.text for c in chunks}
        vecs = self.emb.encode(questions) if self.mode != "fts" else None
        out = []
        for i, q in enumerate(questions):
            hits = retrieve(table, self.mode, self.k, q, vecs[i] if vecs is not None else None)
            out.append(([by_id[h.chunk_id] for h in hits if h.chunk_id in by_id], [h.rank for h in hits]))
        return out


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
    progress: Progress = _noop,
    log: Log = _noop,
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
    log: Log = _noop,
    progress: Progress = _noop,
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
