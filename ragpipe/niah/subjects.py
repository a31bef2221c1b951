"""NIAH subjects: where a trial's context comes from, the window check, and answering and scoring a slice of trials.

- retrieval: the haystack is chunked (ragpipe.ingest.chunk_document with the [chunker] settings), embedded into LanceDB
  (ragpipe.embed.sync_vectors: unchanged chunks are never re-embedded), top-k retrieved ([retriever]) and answered.
- summary: the haystack summarized piece by piece with the question withheld, the question asked over the summary
  (ragpipe.niah.summary_path).
- full_context: the whole haystack goes to the answerer; a prompt beyond the subject's window is labelled overflow
  (or truncated) and never scored as a miss. The window check counts the prompt as the model will see it with the
  model's own tokenizer when the answerer has one (`count_prompt_tokens`, SmolLM2), else with the named tokenizer
  plus a fixed allowance for the framing; insertion offsets always stay on the named tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable

from ragpipe.niah.haystack import Tokenizer
from ragpipe.niah.needles import Needle, locate_prompt, reasoning_prompt, structured_prompt
from ragpipe.niah.scoring import evidence_contains, extract_json, score_answer, score_reasoning
from ragpipe.niah.summary_path import Summaries
from ragpipe.niah.trials import Trial
from ragpipe.rag import Answer, ExtractiveAnswerer
from ragpipe.settings import NiahSettings, Settings

DEFAULT_WINDOWS = {"openai": 128_000, "smollm2": 8_192, "extractive": 0}
PROMPT_OVERHEAD = 64  # tokens of system prompt and framing around the haystack (named-tokenizer estimate only)
_OVERFLOW_ERR = re.compile(r"context|too long|maximum|token limit|HTTP 413", re.IGNORECASE)

PromptCounter = Callable[[str, list[str]], int]  # (question, contexts) -> prompt tokens as the model sees them


# --------------------------------------------------------------------------------------------------- subjects
class RetrievalContexts:
    """Chunk, embed (reusing vectors by content hash) and retrieve over one trial haystack at a time."""

    def __init__(self, settings: Settings, run_id: str):
        from ragpipe import embed

        self.settings = settings
        self.run_id = run_id
        self.emb = embed.load_embedder(settings.embedder, settings.models_dir)
        # Scratch tables for the trial haystacks: always local, whatever [warehouse].lancedb_uri says (they are
        # rebuilt per trial and never read by anything else).
        self.db = embed.connect(settings.warehouse_dir / "niah" / "lancedb")
        self.mode, self.k = settings.retriever.mode, settings.retriever.k
        self._cache: tuple[str, Any, dict[str, str]] | None = None

    def chunks(self, text: str) -> list[Any]:
        from unstructured.documents.elements import NarrativeText, Table

        from ragpipe.ingest import ELEMENT_SEPARATOR, chunk_document, element_offsets

        paras = [p for p in text.split(ELEMENT_SEPARATOR) if p.strip()]
        elements = [Table(text=p) if p.count("\n|") >= 2 else NarrativeText(text=p) for p in paras]
        joined = ELEMENT_SEPARATOR.join(e.text for e in elements)
        return chunk_document("niah-haystack", joined, elements, element_offsets(elements), self.settings.chunker)

    def _prepare(self, text: str) -> tuple[Any, dict[str, str]]:
        """Chunk and embed one haystack (cached: the methods of one needle share it)."""
        from ragpipe import embed

        key = hashlib.sha256(text.encode()).hexdigest()
        if self._cache is None or self._cache[0] != key:
            chunks = self.chunks(text)
            table, _ = embed.sync_vectors(self.db, self.emb, chunks, self.run_id)
            if self.mode != "vector":
                embed.ensure_fts_index(table)
            self._cache = (key, table, {c.chunk_id: c.text for c in chunks})
        return self._cache[1], self._cache[2]

    def retrieve(self, text: str, questions: list[str]) -> list[tuple[list[str], list[int]]]:
        """For each question: the top-k chunk texts (ranked)."""
        from ragpipe.rag import retrieve_many

        table, by_id = self._prepare(text)
        vecs = self.emb.encode(questions) if self.mode != "fts" else None
        ranked = retrieve_many(table, self.mode, self.k, questions, vecs)
        return [([by_id[h.chunk_id] for h in hits if h.chunk_id in by_id], [h.rank for h in hits]) for hits in ranked]

    def for_trial(self, t: Trial) -> list[str]:
        return self.retrieve(t.placement.text, [t.question])[0][0]


def _fields_json(n: Needle) -> dict[str, Any]:
    return {"key": n.key, "fields": n.fields}


def row_base(t: Trial, subject: str, answerer_label: str, tok: Tokenizer, ns: NiahSettings) -> dict[str, Any]:
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
        "window_counter": None,
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
        "summary_tokens": None,
        "summary_latency_s": None,
    }


# ------------------------------------------------------------------------------------------------- the window
def window_counter(answerer: Any, tok: Tokenizer) -> tuple[str, PromptCounter]:
    """How prompts are counted for the window check: the answerer's own tokenizer over the whole prompt (chat template
    included) when it has one, else the named tokenizer plus PROMPT_OVERHEAD."""
    own = getattr(answerer, "count_prompt_tokens", None)
    if callable(own):
        return getattr(answerer, "tokenizer_name", answerer.label), own

    def named(question: str, contexts: list[str]) -> int:
        return sum(tok.count(c) for c in contexts) + tok.count(question) + PROMPT_OVERHEAD

    return f"{tok.name} + {PROMPT_OVERHEAD}", named


def fit_window(
    t: Trial, prompt: str, window: int, budget: int, count: PromptCounter, tok: Tokenizer, on_overflow: str
) -> tuple[str, str | None, int, str | None]:
    """(status, text to send or None, prompt tokens counted, note). status: scored | overflow | truncated."""
    text = t.placement.text
    n_in = count(prompt, [text])
    if not window or n_in <= budget:
        return "scored", text, n_in, None
    if on_overflow == "skip":
        return "overflow", None, n_in, None
    starts = tok.starts(text)
    keep = len(starts)
    for _ in range(8):  # cut by named tokens, re-counted with the model's counter until it fits
        keep = max(0, int(keep * budget / max(n_in, 1) * 0.98))
        cut = starts[keep] if keep < len(starts) else len(text)
        n_in = count(prompt, [text[:cut]])
        if n_in <= budget:
            break
    text = text[:cut]
    end = t.placement.char + len(t.needle.parts[0])
    if n_in > budget or end > cut or any(p not in text for p in t.needle.parts):
        return "truncated", None, n_in, None  # the needle was cut away: not a miss
    return "scored", text, n_in, f"haystack truncated to {keep} named tokens to fit the window; the needle survived"


# ------------------------------------------------------------------------------------------------ evaluation
def first_prompt(t: Trial, structured: bool, refusal: str) -> str:
    if t.method == "locate":
        return locate_prompt(t.needle, refusal) if structured else t.question
    return structured_prompt(t.needle, t.method, refusal) if structured else t.question


def _contexts(
    subject: str,
    trials: list[Trial],
    rows: list[dict[str, Any]],
    prompts: list[str],
    settings: Settings,
    ns: NiahSettings,
    tok: Tokenizer,
    answerer: Any,
    source: RetrievalContexts | Summaries | None,
    counter: tuple[str, PromptCounter] | None,
) -> list[list[str] | None]:
    """What each trial's answerer reads: the retrieved chunks, the haystack's summary, or the haystack fitted to the
    window (None: not sent). Each trial's row gets its retrieval ranks and score, its summary's cost and whether the
    summary kept the needle (retrieval_score), or its window check."""
    contexts: list[list[str] | None] = [None] * len(trials)
    if subject == "summary":
        assert isinstance(source, Summaries)
        for i, t in enumerate(trials):
            text, tokens, seconds, err = source.for_text(t.placement.text)
            rows[i].update(summary_tokens=tokens, summary_latency_s=round(seconds, 6))
            if err:
                rows[i].update(status="error", error=f"summary: {err}")
                continue
            contexts[i] = [text]
            rows[i]["retrieval_score"] = evidence_contains(text, t.needle)
        return contexts
    if subject == "retrieval":
        retrieval = source
        assert isinstance(retrieval, RetrievalContexts)
        for i, t in enumerate(trials):
            texts = retrieval.for_trial(t)
            contexts[i] = texts
            rows[i]["retrieved_ranks"] = [
                r + 1 for r, c in enumerate(texts) if any(p.split("\n")[0] in c for p in t.needle.parts)
            ]
            rows[i]["retrieval_score"] = evidence_contains("\n\n".join(texts), t.needle)
        return contexts
    window = ns.window or DEFAULT_WINDOWS.get(settings.answerer.kind, 0)
    name, count = counter or window_counter(answerer, tok)
    budget = window - settings.answerer.openai.max_tokens if window else 0
    for i, t in enumerate(trials):
        status, sent, n_in, note = fit_window(t, prompts[i], window, budget, count, tok, ns.on_overflow)
        rows[i].update(
            status=status, input_tokens_est=n_in, window_tokens=window or None, window_counter=name, error=note
        )
        contexts[i] = [sent] if sent is not None else None
    return contexts


def _answer(
    trials: list[Trial],
    todo: list[int],
    prompts: list[str],
    contexts: list[list[str] | None],
    answerer: Any,
    structured: bool,
    refusal: str,
) -> tuple[dict[int, list[Answer]], dict[int, str]]:
    """Each sent trial's answers (locate: the quote first, then the answer from the quote alone) and locate's quotes."""
    first = answerer.answer_all([(prompts[i], contexts[i]) for i in todo]) if todo else []
    answers: dict[int, list[Answer]] = {i: [a] for i, a in zip(todo, first)}
    quotes: dict[int, str] = {}
    loc = [i for i in todo if trials[i].method == "locate" and answers[i][0].error is None]
    if loc:
        for i in loc:
            obj = extract_json(answers[i][0].text) if structured else None
            q = obj.get("quote") if isinstance(obj, dict) else answers[i][0].text
            quotes[i] = q if isinstance(q, str) else ""
        second = answerer.answer_all(
            [
                (
                    structured_prompt(trials[i].needle, "direct", refusal) if structured else trials[i].question,
                    [quotes[i]],
                )
                for i in loc
            ]
        )
        for i, a in zip(loc, second):
            answers[i].append(a)
    return answers, quotes


def _score_one(
    subject: str,
    t: Trial,
    row: dict[str, Any],
    parts: list[Answer],
    quote: str | None,
    context: list[str] | None,
    phrases: tuple[str, ...],
    structured: bool,
) -> list[str] | None:
    """Score one trial's final answer into its row; returns the evidence for the reasoning follow-up (None: none)."""
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
        return None
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
    quote = quote if t.method == "locate" else (s.quote if t.method == "cite" else None)
    if subject == "full_context":
        row["retrieval_score"] = evidence_contains(quote, t.needle) if quote is not None else None
        return [quote] if quote else None
    return context


def evaluate_trials(
    subject: str,
    trials: list[Trial],
    settings: Settings,
    ns: NiahSettings,
    tok: Tokenizer,
    answerer: Any,
    source: RetrievalContexts | Summaries | None = None,
    counter: tuple[str, PromptCounter] | None = None,
) -> list[dict[str, Any]]:
    """Answer and score a slice of trials on one subject (one answer_all per step, so the answerer's concurrency
    applies within the slice); one row per trial."""
    structured = not isinstance(answerer, ExtractiveAnswerer)  # the extractive baseline cannot emit JSON
    refusal = settings.answerer.refusal_phrase
    phrases = settings.answerer.refusal_phrases
    rows = [row_base(t, subject, answerer.label, tok, ns) for t in trials]
    prompts = [first_prompt(t, structured, refusal) for t in trials]
    contexts = _contexts(subject, trials, rows, prompts, settings, ns, tok, answerer, source, counter)
    todo = [i for i in range(len(trials)) if contexts[i] is not None]
    answers, quotes = _answer(trials, todo, prompts, contexts, answerer, structured, refusal)
    follow: list[tuple[int, str, list[str]]] = []
    for i in todo:
        t, row = trials[i], rows[i]
        evidence = _score_one(subject, t, row, answers[i], quotes.get(i), contexts[i], phrases, structured)
        if ns.reasoning and evidence and (row["retrieval_score"] or 0) >= 1.0:
            task = t.needle.reasoning
            follow.append((i, reasoning_prompt(task) if structured else task.question, evidence))
    if follow:
        got = answerer.answer_all([(p, ev) for _, p, ev in follow])
        for (i, _, _), a in zip(follow, got):
            rows[i]["reasoning_answer"] = a.text
            rows[i]["reasoning_score"] = None if a.error else score_reasoning(a.text, trials[i].needle.reasoning)
    return rows
