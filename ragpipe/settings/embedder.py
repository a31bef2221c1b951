"""[embedder]: which embedder (a name of ragpipe.embed.EMBEDDERS, any sentence-transformers model, or an embeddings
API as "openai:<model>") and its batch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError

API_PREFIX = "openai:"


@dataclass(frozen=True)
class EmbedderSettings:
    name: str = "minilm"
    batch_size: int = 64  # texts per batch (per request, for an embeddings API)
    device: str = "cpu"
    # An embeddings API (name = "openai:<model>"): OpenAI, Azure OpenAI, TEI, Ollama, vLLM, llama.cpp all serve
    # POST {base_url}/embeddings. None of these is versioned: the tag's behavioural fingerprint is.
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # the environment variable holding the key (never the key itself)
    timeout_s: float = 60.0
    max_retries: int = 5


def check(s: EmbedderSettings, src: Path) -> None:
    if s.name.startswith(API_PREFIX):
        if not s.name[len(API_PREFIX) :].strip():
            raise SettingsError(
                f"{src}: [embedder].name {s.name!r} names no model; e.g. 'openai:text-embedding-3-small'"
            )
        if not re.match(r"https?://", s.base_url):
            raise SettingsError(
                f"{src}: [embedder].base_url must be the API's http(s):// base (e.g. 'https://api.openai.com/v1') "
                f"for an embeddings API, got {s.base_url!r}"
            )
    if s.batch_size < 1 or s.max_retries < 0 or s.timeout_s <= 0:
        raise SettingsError(f"{src}: [embedder] batch_size >= 1, max_retries >= 0 and timeout_s > 0 are required")
