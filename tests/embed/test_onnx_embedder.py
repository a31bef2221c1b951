"""The ONNX Runtime backends of the packaged MiniLM ("minilm-onnx", "minilm-onnx-int8") against the torch embedder.

Real model, real export (once per test session, into a temporary models directory), real sentences from the bundled
example corpus.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ragpipe.embed as embed
import ragpipe.embed.embedders as embedders
import ragpipe.embed.model_build as model_build
from ragpipe.settings import EmbedderSettings

pytestmark = [pytest.mark.slow, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus"


def _sentences(n: int = 20) -> list[str]:
    """n real sentences of varied length from the example corpus's Markdown and text files, plus a long passage."""
    out: list[str] = []
    for path in sorted(CORPUS.rglob("*.md")) + sorted(CORPUS.rglob("*.txt")):
        text = re.sub(r"[#*|`>_-]+", " ", path.read_text(encoding="utf-8"))
        for s in re.split(r"(?<=[.!?])\s+", text):
            s = " ".join(s.split())
            if len(s) >= 40 and s not in out:
                out.append(s)
                break
        if len(out) >= n - 1:
            break
    long_text = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in sorted(CORPUS.rglob("*.md"))[:3])
    out.append(long_text)  # far beyond 256 tokens: both backends truncate the same way
    assert len(out) == n
    return out


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def torch_emb(models_dir: Path) -> embed.Embedder:
    return embed.load_embedder(EmbedderSettings(name="minilm", batch_size=8), models_dir)


@pytest.fixture(scope="module")
def onnx_fp32(models_dir: Path) -> embed.OnnxEmbedder:
    emb = embed.load_embedder(EmbedderSettings(name="minilm-onnx", batch_size=8), models_dir)
    assert isinstance(emb, embed.OnnxEmbedder)
    return emb


@pytest.fixture(scope="module")
def onnx_int8(models_dir: Path, onnx_fp32: embed.OnnxEmbedder) -> embed.OnnxEmbedder:
    emb = embed.load_embedder(EmbedderSettings(name="minilm-onnx-int8", batch_size=8), models_dir)
    assert isinstance(emb, embed.OnnxEmbedder)
    return emb


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    return _sentences()


@pytest.fixture(scope="module")
def reference(torch_emb: embed.Embedder, sentences: list[str]) -> np.ndarray:
    return torch_emb.encode(sentences)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_fp32_agrees_with_torch(onnx_fp32: embed.OnnxEmbedder, reference: np.ndarray, sentences: list[str]) -> None:
    got = onnx_fp32.encode(sentences)
    assert got.shape == (len(sentences), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = _cosines(got, reference)
    assert cos.min() >= 0.999, cos


def test_int8_agrees_with_torch(onnx_int8: embed.OnnxEmbedder, reference: np.ndarray, sentences: list[str]) -> None:
    got = onnx_int8.encode(sentences)
    assert got.shape == (len(sentences), 384)
    cos = _cosines(got, reference)
    assert cos.min() >= 0.98, cos


@pytest.mark.parametrize("backend", ["torch", "fp32", "int8"])
def test_a_vector_depends_on_its_text_alone(
    backend: str,
    torch_emb: embed.Embedder,
    onnx_fp32: embed.OnnxEmbedder,
    onnx_int8: embed.OnnxEmbedder,
    sentences: list[str],
) -> None:
    """The content-hash cache and sharded embedding reuse a vector wherever its text was embedded: batch-mates
    (int8's per-tensor activation scales would see them) must not change it."""
    emb = {"torch": torch_emb, "fp32": onnx_fp32, "int8": onnx_int8}[backend]
    alone = np.stack([emb.encode([t])[0] for t in sentences[:4]])
    batched = emb.encode(sentences)[:4]
    assert np.abs(alone - batched).max() < 1e-5


def test_interface(onnx_fp32: embed.OnnxEmbedder, torch_emb: embed.Embedder, sentences: list[str]) -> None:
    assert onnx_fp32.dims == 384 == torch_emb.dims
    assert onnx_fp32.max_seq_length == 256
    assert onnx_fp32.count_tokens(sentences) == torch_emb.count_tokens(sentences)  # the MiniLM tokenizer, untruncated
    assert max(onnx_fp32.count_tokens(sentences)) > 256
    calls: list[tuple[int, int]] = []
    order = sentences[::-1] + ["", "x"]
    vecs = onnx_fp32.encode(order, progress=lambda done, total, secs: calls.append((done, total)))
    assert calls and calls[-1] == (len(order), len(order))
    single = onnx_fp32.encode([order[3]])
    assert _cosines(vecs[3:4], single)[0] > 0.99999  # input order is kept, whatever the batch it ran in
    assert onnx_fp32.encode([]).shape[0] == 0


def test_tags(onnx_fp32: embed.OnnxEmbedder, onnx_int8: embed.OnnxEmbedder, torch_emb: embed.Embedder) -> None:
    tags = {torch_emb.tag, onnx_fp32.tag, onnx_int8.tag}
    assert len(tags) == 3
    assert re.fullmatch(r"minilm-onnx-[0-9a-f]{8}", onnx_fp32.tag)
    assert re.fullmatch(r"minilm-onnx-int8-[0-9a-f]{8}", onnx_int8.tag)
    assert re.fullmatch(r"minilm-[0-9a-f]{8}", torch_emb.tag)


def test_second_load_reuses_cached_export(
    models_dir: Path, onnx_fp32: embed.OnnxEmbedder, onnx_int8: embed.OnnxEmbedder
) -> None:
    assert onnx_fp32.model_file is not None and onnx_int8.model_file is not None
    assert onnx_fp32.model_file.parent.parent == models_dir
    mtimes = {p: p.stat().st_mtime_ns for p in (onnx_fp32.model_file, onnx_int8.model_file)}
    builds = dict(embed.ONNX_BUILDS)
    # fresh instances (load_embedder would return its per-process cache): the models on disk are reused
    again_fp32 = embed.OnnxEmbedder("minilm-onnx", models_dir)
    again_int8 = embed.OnnxEmbedder("minilm-onnx-int8", models_dir, int8=True)
    assert not again_fp32.built and not again_int8.built
    assert embed.ONNX_BUILDS == builds
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    assert (again_fp32.tag, again_int8.tag) == (onnx_fp32.tag, onnx_int8.tag)
    # no temporary build directories are left behind
    assert not [p for p in models_dir.iterdir() if ".tmp-" in p.name]


def test_failed_build_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(source: Path, out_dir: Path, max_seq: int) -> None:
        (out_dir / "model.onnx").write_bytes(b"half a model")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(model_build, "_export_minilm_onnx", boom)
    with pytest.raises(RuntimeError, match="killed mid-export"):
        model_build.build_minilm_onnx(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_onnx_embedder_needs_cpu(models_dir: Path) -> None:
    with pytest.raises(ValueError, match="CPU"):
        embed.load_embedder(EmbedderSettings(name="minilm-onnx", device="cuda"), models_dir)


@pytest.mark.parametrize("name", ["minilm-onnx", "minilm-onnx-int8"])
def test_every_core_runs_its_own_inference_and_the_vectors_are_the_same(
    name: str, models_dir: Path, onnx_int8: embed.OnnxEmbedder, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """threads = 0 on a machine of 3 cores: three single-threaded runs side by side, the vectors in input order and
    equal to one single-threaded run's, whatever the batch (many more texts than one length-sorted slice)."""
    monkeypatch.setattr(embedders, "usable_cpus", lambda: 3)
    cfg = EmbedderSettings(name=name, batch_size=8)
    wide = embedders.kind_of(cfg).load(cfg, models_dir, 0)
    single = embedders.kind_of(cfg).load(cfg, models_dir, 1)
    assert wide._lanes is not None and wide._lanes._max_workers == 3 and single._lanes is None
    texts = [f"{s} ({i})" for i in range(15) for s in sentences]  # 300 texts: several slices of 256
    assert np.array_equal(wide.encode(texts), single.encode(texts))
