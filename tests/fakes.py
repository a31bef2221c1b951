"""Fakes for pure unit tests of logic (never for an end-to-end test)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

from ragpipe.embed import Progress


@dataclass(frozen=True)
class FakeEmbedder:
    """Deterministic hashed bag-of-words vectors. Only for pure unit tests of logic; never for end-to-end tests."""

    name: str = "fake"
    tag: str = "fake-00000000"
    dims: int = 64

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dims] += 1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(n, 1e-12)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(re.findall(r"\w+", t)) for t in texts]
