"""[embedder]: which embedder (a name of ragpipe.embed.EMBEDDERS, or any sentence-transformers model) and its batch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbedderSettings:
    name: str = "minilm"
    batch_size: int = 64
    device: str = "cpu"
