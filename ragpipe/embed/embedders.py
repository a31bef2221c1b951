"""Embedders: the packaged all-MiniLM-L6-v2, a static model distilled from it, or any sentence-transformers model.

Every embedder has a precise tag (name plus a hash of its weights and config), so a silently updated model
gets a new tag and the golden-set tests validated under the old one show as unverified.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ragpipe.core import usable_cpus
from ragpipe.embed.model_build import (
    build_minilm_onnx,
    build_minilm_static,
    max_seq_length,
    minilm_path,
    onnx_fingerprints,
    st_tag,
    static_fingerprint,
)
from ragpipe.settings import API_PREFIX, EmbedderSettings

if TYPE_CHECKING:  # numpy is imported where vectors are made: `ragpipe --help` reads EMBEDDERS without it
    import numpy as np

IMPL_VERSION = "1"  # bump when embedding produces other vectors (part of `embeddings`' code version)

Progress = Callable[[int, int, float], None]  # (done, total, seconds elapsed)


class Embedder(Protocol):
    tag: str

    @property
    def name(self) -> str: ...

    @property
    def dims(self) -> int: ...

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray: ...

    def count_tokens(self, texts: list[str]) -> list[int]: ...


def _batched_encode(
    fn: Callable[[list[str]], np.ndarray], texts: list[str], batch: int, progress: Progress | None
) -> np.ndarray:
    """Encode in length-sorted slices (less padding per batch), reporting progress, returning input order."""
    import numpy as np

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
        self.tag = st_tag(self.name, self.path)

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        def fn(part: list[str]) -> np.ndarray:
            return self._model.encode(
                part,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
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

        fp = static_fingerprint()
        target, _ = build_minilm_static(self.cache_dir)
        self._model = StaticModel.from_pretrained(str(target))
        self.dims = int(self._model.dim)
        self.tag = f"minilm-static-{fp}"

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        import numpy as np

        def fn(part: list[str]) -> np.ndarray:
            # A text with no known token averages nothing: model2vec gives NaN; store a zero vector instead.
            v = np.nan_to_num(np.asarray(self._model.encode(part, batch_size=self.batch_size), dtype=np.float32))
            n = np.linalg.norm(v, axis=1, keepdims=True)
            return v / np.maximum(n, 1e-12)

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._model.tokenizer.encode_batch(texts, add_special_tokens=True)]


@dataclass
class OnnxEmbedder:
    """The packaged all-MiniLM-L6-v2 on ONNX Runtime (CPU): "minilm-onnx" (fp32) or "minilm-onnx-int8"."""

    name: str
    cache_dir: Path
    int8: bool = False
    batch_size: int = 64
    threads: int = 0  # CPU threads; 0: every usable core, as that many single-threaded runs side by side
    tag: str = ""
    dims: int = 0
    max_seq_length: int = 256
    model_file: Path | None = None
    built: bool = False  # True when this instance had to export/quantize (False: the cached build was reused)
    _session: Any = field(default=None, repr=False)
    _tokenizer: Any = field(default=None, repr=False)
    _lanes: Any = field(default=None, repr=False)  # a thread pool: one single-threaded run per core

    def __post_init__(self) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        source = minilm_path()
        self.max_seq_length = max_seq_length(source)
        self.model_file, fp, self.built = build_minilm_onnx(self.cache_dir, int8=self.int8)
        opts = ort.SessionOptions()
        # With every core (threads = 0), each runs its own single-threaded inference: a text at a time (int8) is too
        # small a product for intra-op threads to share well (bench/README.md, "Embedding speed": 2 single-threaded
        # runs side by side took 0.74x the time of one 2-thread run; fp32 the same). A set thread count keeps one run.
        lanes = usable_cpus() if not self.threads else 1
        opts.intra_op_num_threads = self.threads or 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.model_file), opts, providers=["CPUExecutionProvider"])
        self._tokenizer = AutoTokenizer.from_pretrained(str(source))
        if lanes > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._lanes = ThreadPoolExecutor(lanes, thread_name_prefix="ragpipe-onnx")
        self.dims = int(self._session.get_outputs()[0].shape[-1])
        self.tag = f"{'minilm-onnx-int8' if self.int8 else 'minilm-onnx'}-{fp}"

    def _feeds(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Token ids and mask of one batch (tokenized on the calling thread: the tokenizer is not shared)."""
        import numpy as np

        enc = self._tokenizer(texts, padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="np")
        return {
            "input_ids": enc["input_ids"].astype(np.int64),
            "attention_mask": enc["attention_mask"].astype(np.int64),
        }

    def _infer(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self._session.run(None, feeds)[0]  # ONNX Runtime's run is safe to call from several threads

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        import numpy as np

        rows = 1 if self.int8 else self.batch_size  # see ONNX_INT8_PARAMS: int8 vectors must not depend on batch-mates

        def fn(part: list[str]) -> np.ndarray:  # part is length-sorted: consecutive batches pad little
            feeds = [self._feeds(part[i : i + rows]) for i in range(0, len(part), rows)]
            out = self._lanes.map(self._infer, feeds) if self._lanes is not None else map(self._infer, feeds)
            return np.concatenate(list(out))

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]


_CACHE: dict[tuple[str, str, int, str, int, str], Embedder] = {}


@dataclass(frozen=True)
class EmbedderKind:
    """One entry of the registry: what `[embedder].name` can be."""

    description: str
    load: Callable[[EmbedderSettings, Path, int], Embedder]  # (settings, models_dir, threads)
    tag: Callable[[EmbedderSettings, Path], str]  # the tag it will report, without loading or building anything
    build: Callable[[Path], bool] = lambda models_dir: False  # its one-time local artifact; True if built now
    cpu_only: bool = False


def _onnx(int8: bool) -> EmbedderKind:
    name = "minilm-onnx-int8" if int8 else "minilm-onnx"

    def tag(cfg: EmbedderSettings, models_dir: Path) -> str:
        fp32, q8 = onnx_fingerprints(minilm_path())
        return f"{name}-{(q8 if int8 else fp32)[1]}"

    return EmbedderKind(
        f"the same MiniLM exported to ONNX Runtime{' and int8-quantized' if int8 else ''} on first use (CPU)",
        lambda cfg, models_dir, threads: OnnxEmbedder(
            name, models_dir, int8=int8, batch_size=cfg.batch_size, threads=threads
        ),
        tag,
        lambda models_dir: build_minilm_onnx(models_dir, int8=int8)[2],
        cpu_only=True,
    )


EMBEDDERS: dict[str, EmbedderKind] = {
    "minilm": EmbedderKind(
        "all-MiniLM-L6-v2 from its packaged weights (sentence-transformers; the default)",
        lambda cfg, models_dir, threads: SentenceTransformerEmbedder(
            "minilm", str(minilm_path()), cfg.batch_size, cfg.device
        ),
        lambda cfg, models_dir: st_tag("minilm", str(minilm_path())),
    ),
    "minilm-static": EmbedderKind(
        "a static model distilled from MiniLM with model2vec on first use (fastest, lower quality)",
        lambda cfg, models_dir, threads: StaticEmbedder("minilm-static", models_dir),
        lambda cfg, models_dir: f"minilm-static-{static_fingerprint()}",
        lambda models_dir: build_minilm_static(models_dir)[1],
    ),
    "minilm-onnx": _onnx(int8=False),
    "minilm-onnx-int8": _onnx(int8=True),
}
# Any other name is a sentence-transformers model name (a local directory, or a model installed with its weights).
OTHER = EmbedderKind(
    "any other name: a sentence-transformers model (a local directory or an installed model)",
    lambda cfg, models_dir, threads: SentenceTransformerEmbedder(cfg.name, cfg.name, cfg.batch_size, cfg.device),
    lambda cfg, models_dir: st_tag(cfg.name, cfg.name),
)


def _api_kind() -> EmbedderKind:
    from ragpipe.embed.api import ApiEmbedder, api_tag

    return EmbedderKind(
        "openai:<model>: an embeddings API at [embedder].base_url (tagged by a fingerprint of its vectors)",
        lambda cfg, models_dir, threads: ApiEmbedder(cfg),
        lambda cfg, models_dir: api_tag(cfg),
        cpu_only=True,
    )


def kind_of(cfg: EmbedderSettings) -> EmbedderKind:
    if cfg.name.startswith(API_PREFIX):
        return _api_kind()
    return EMBEDDERS.get(cfg.name, OTHER)


def prepare(cfg: EmbedderSettings, models_dir: Path) -> bool:
    """Build the embedder's local artifact (static distillation, ONNX export) when it is missing; True if built now.
    Called before a stage opens the warehouse, so that minutes of building never hold the DuckDB writer lock."""
    return kind_of(cfg).build(models_dir)


def load_embedder(cfg: EmbedderSettings, models_dir: Path, threads: int = 0) -> Embedder:
    """Load (once per process) the embedder named in settings.

    `threads` caps the CPU threads (0: every usable core); embedding shards sharing a machine split its cores.
    """
    key = (cfg.name, str(models_dir), cfg.batch_size, cfg.device, threads, cfg.base_url)
    if key in _CACHE:
        return _CACHE[key]
    kind = kind_of(cfg)
    if kind.cpu_only and cfg.device != "cpu":
        raise ValueError(f'embedder {cfg.name} runs on ONNX Runtime\'s CPU provider; set [embedder].device = "cpu"')
    if threads and not kind.cpu_only:
        import torch

        torch.set_num_threads(threads)
    emb = _CACHE[key] = kind.load(cfg, models_dir, threads)
    return emb


def embedder_tag(cfg: EmbedderSettings, models_dir: Path) -> str:
    """The tag load_embedder(cfg, ...) would report, without loading (or building) the model."""
    return kind_of(cfg).tag(cfg, models_dir)


@dataclass
class LazyEmbedder:
    """The settings' embedder, loaded on first use: a sync with nothing new to embed never loads (or builds) a model."""

    cfg: EmbedderSettings
    models_dir: Path
    threads: int = 0
    tag: str = ""
    _emb: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.tag = embedder_tag(self.cfg, self.models_dir)

    def loaded(self) -> Embedder:
        if self._emb is None:
            self._emb = load_embedder(self.cfg, self.models_dir, threads=self.threads)
            if self._emb.tag != self.tag:  # the cheap tag and the model's own must agree, or vectors would be misfiled
                raise RuntimeError(f"embedder {self.cfg.name}: loaded tag {self._emb.tag} differs from {self.tag}")
        return self._emb

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def dims(self) -> int:
        return int(self.loaded().dims)

    @property
    def built(self) -> bool:  # a fresh ONNX export / static distillation happened when this loaded
        return self._emb is not None and bool(getattr(self._emb, "built", False))

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        return self.loaded().encode(texts, progress=progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.loaded().count_tokens(texts)


def describe(emb: Embedder) -> str:
    return json.dumps({"name": emb.name, "tag": emb.tag, "dims": emb.dims})
