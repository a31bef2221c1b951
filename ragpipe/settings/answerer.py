"""[answerer] and [answerer.openai]: which answerer answers from the retrieved chunks, and how it refuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ragpipe.settings.base import SettingsError, names

# Registered under the same names in ragpipe.rag.ANSWERERS (a test keeps the two equal).
ANSWERER_KINDS = {
    "extractive": "the offline baseline: the best-supported retrieved sentence, or the refusal phrase",
    "smollm2": "SmolLM2-135M-Instruct from its packaged GGUF weights, on this machine (slow on CPU)",
    "openai": "any OpenAI-compatible chat endpoint ([answerer.openai])",
}


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 30.0
    max_retries: int = 3
    concurrency: int = 4
    max_tokens: int = 128


@dataclass(frozen=True)
class AnswererSettings:
    kind: str = "extractive"  # extractive | smollm2 | openai
    refusal_phrase: str = "not in documents"
    min_support: float = 0.5
    # Phrases that count as a refusal besides the grammar of ragpipe.reading (a house style: "N/A - see ticket").
    refusal_phrases: tuple[str, ...] = ()
    threads: int = 0  # CPU threads of a local model (smollm2); 0: torch's default (one per core)
    openai: OpenAISettings = field(default_factory=OpenAISettings)


def check(a: AnswererSettings, src: Path) -> None:
    if a.threads < 0:
        raise SettingsError(f"{src}: [answerer].threads must be 0 (torch's default) or a number of threads")
    if a.kind not in ANSWERER_KINDS:
        raise SettingsError(f"{src}: [answerer].kind must be {names(ANSWERER_KINDS)}, got {a.kind!r}")
