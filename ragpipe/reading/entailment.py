"""ragpipe's entailment reader: one claim beside the retrieved texts, read as supported, contradicted or not in the
context, with the probability of each. A 3-layer cross-encoder trained here (bench/train_entailer.py, data by
ragpipe.reading.synth); ragpipe/reading/entailer/ holds its trained layers and card.json (recipe, seed, validation
figures). The first use builds an int8 ONNX model from them and the packaged MiniLM's embeddings, once, under the
models directory ($RAGPIPE_MODELS_DIR, default ~/.cache/ragpipe/models); importing this module loads nothing."""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.reading.premises import premise

ENTAILER_DIR = Path(__file__).parent / "entailer"
LAYERS = 3
MAX_TOKENS = 128
LABELS = ("supported", "contradicted", "not_in_context")


@dataclass(frozen=True)
class Entailment:
    claim: str
    label: str  # the likeliest of LABELS
    supported: float
    contradicted: float
    not_in_context: float
    premise: str  # the sentences of the retrieved texts it was read against


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    from ragpipe.embed import minilm_path

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def encode(claims: Sequence[str], premises: Sequence[str], tensors: str = "pt") -> Any:
    """The model's input: each claim first, its premise second, cut to MAX_TOKENS together."""
    return _tokenizer()(
        list(claims),
        list(premises),
        truncation="longest_first",  # the longer of the two is cut first (a long claim as well)
        max_length=MAX_TOKENS,
        padding=True,
        return_tensors=tensors,
    )


def available() -> bool:
    """Are the trained layers shipped with this installation?"""
    return (ENTAILER_DIR / "layers.safetensors").is_file()


def _models_dir() -> Path:
    root = os.environ.get("RAGPIPE_MODELS_DIR")
    return Path(root) if root else Path.home() / ".cache" / "ragpipe" / "models"


def _fingerprint() -> str:
    h = hashlib.sha256(f"entailer layers={LAYERS} tokens={MAX_TOKENS} int8".encode())
    h.update((ENTAILER_DIR / "layers.safetensors").read_bytes())
    return h.hexdigest()[:10]


def torch_model(folder: Path = ENTAILER_DIR, layers: int = LAYERS) -> Any:
    """The trained layers of `folder` (the shipped ones, or any bench/train_entailer.py wrote) on the packaged
    MiniLM's embeddings, as a torch model in eval mode."""
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    from ragpipe.embed import minilm_path

    hf_logging.set_verbosity_error()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(minilm_path()), num_labels=len(LABELS), num_hidden_layers=layers, attn_implementation="eager"
    )
    state = {k: v.float() for k, v in load_file(str(folder / "layers.safetensors")).items()}
    missing = set(model.load_state_dict(state, strict=False).missing_keys)
    assert all(k.startswith("bert.embeddings") for k in missing), f"entailer weights lack {sorted(missing)[:3]}"
    return model.eval()


def _build(out_dir: Path) -> None:
    """Trained layers + the packaged embeddings -> torch model -> ONNX -> int8 (weights per channel)."""
    import warnings

    import torch

    from ragpipe.embed import quantize_int8

    model = torch_model()
    sample = encode(["a claim"], ["a premise sentence. And a second."])
    raw = out_dir / "fp32.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(raw),
            dynamo=False,
            opset_version=17,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")},
            do_constant_folding=True,
        )
    quantize_int8(raw, out_dir)
    raw.unlink()


class Reader:
    """The int8 ONNX session, built on first use (atomically; a second process reuses it)."""

    def __init__(self) -> None:
        from ragpipe.embed import ONNX_FILE, atomic_build

        target = _models_dir() / f"entailer-{_fingerprint()}"
        atomic_build(target, _build)
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = min(2, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(target / ONNX_FILE), opts, providers=["CPUExecutionProvider"])

    def scores(self, claims: Sequence[str], premises: Sequence[str]) -> list[tuple[float, float, float]]:
        import numpy as np

        if not claims:
            return []
        x = encode(claims, premises, tensors="np")
        feed = {k: x[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        logits = self.session.run(None, feed)[0]
        e = np.exp(logits - logits.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        return [(float(a), float(b), float(c)) for a, b, c in p]


_LOCK = threading.Lock()
_READER: Reader | None = None


def reader() -> Reader:
    global _READER
    with _LOCK:
        if _READER is None:
            _READER = Reader()
        return _READER


@functools.lru_cache(maxsize=4096)
def _read(claim: str, contexts: tuple[str, ...]) -> Entailment:
    text = premise(claim, contexts)
    s, c, n = reader().scores([claim], [text])[0]
    label = LABELS[max(range(3), key=lambda k: (s, c, n)[k])]
    return Entailment(claim, label, s, c, n, text)


def entail(claims: Sequence[str], contexts: Sequence[str]) -> list[Entailment]:
    """Each claim read against the retrieved texts (one at a time: an int8 session's numbers for a text do not depend
    on its batch-mates, so a claim's reading is a function of the claim and the texts alone)."""
    ctx = tuple(contexts)
    return [_read(c, ctx) for c in claims]
