"""LanceDB and the warehouse exports on S3-compatible object storage, against a real S3 server process on loopback.

moto's server mode runs as a subprocess; the pipeline runs through the real CLI and Dagster graph with
[warehouse].lancedb_uri = "s3://…", and its verdicts must equal those of the same project stored locally (the shared
evaluated base of tests/faultkit.py). The secret access key is a sentinel that must appear nowhere: not in the output,
the project's files (DuckDB, Dagster storage), nor the bucket.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from conftest import ROOT, Project, make_project
from faultkit import copy_project, evaluated_base, python_env, ragpipe_cli
from s3kit import BUCKET, KEY_ID, SENTINEL, S3Server, _free_port

from ragpipe.embed import store
from ragpipe.settings import SettingsError, settings_from_dict
from ragpipe.versions import code_version

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.s3]


def s3_settings(p: Project, endpoint: str, lancedb_uri: str) -> None:
    """Point the project's LanceDB store at `lancedb_uri` through the server at `endpoint`."""
    text = p.settings_file.read_text(encoding="utf-8")
    if "\n[warehouse.s3]" in text:  # set before: drop it (the [warehouse.s3] table is last)
        text = text[: text.index("\n[warehouse.s3]")].replace(
            text[text.index("lancedb_uri") :].split("\n", 1)[0] + "\n", "", 1
        )
    text = text.replace("[warehouse]\n", f'[warehouse]\nlancedb_uri = "{lancedb_uri}"\n', 1)
    text += f'\n[warehouse.s3]\nendpoint_url = "{endpoint}"\nregion = "us-east-1"\nallow_http = true\n'
    p.settings_file.write_text(text, encoding="utf-8")


def cli(root: Path, *args: str, timeout: float = 900) -> tuple[int, str]:
    env = python_env(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return ragpipe_cli(root, *args, env=env).finish(timeout)


def files_under(root: Path) -> list[Path]:
    return [f for f in root.rglob("*") if f.is_file()]


def verdicts(p: Project) -> dict[str, tuple]:
    rows = p.sql("SELECT question_id, verdict, reason, anchor_retrieved, refused, took_trap FROM latest_verdicts")
    return {r[0]: r[1:] for r in rows}


def ranked(p: Project) -> dict[str, list[str]]:
    rows = p.sql(
        "SELECT question_id, list(chunk_id ORDER BY rank) FROM retrievals "
        "WHERE eval_run_id = (SELECT eval_run_id FROM latest_eval_run) GROUP BY 1"
    )
    return dict(rows)


@pytest.fixture(scope="module")
def s3_run(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    """The bundled example evaluated by `ragpipe ci` with its vectors in s3://BUCKET/lance."""
    p = make_project(tmp_path_factory.mktemp("s3run") / "proj")
    (p.root / "dagster.yaml").write_bytes((ROOT / "dagster.yaml").read_bytes())
    s3_settings(p, s3.endpoint, f"s3://{BUCKET}/lance")
    code, out = cli(p.root, "ci")
    assert code in (0, 1) and "GATE:" in out, out[-4000:]
    return p, out


def test_pipeline_on_s3_matches_local_and_keeps_the_secret(
    s3_run: tuple[Project, str], s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    p, out = s3_run
    settings = p.settings()
    assert settings.lancedb_uri == f"s3://{BUCKET}/lance" and settings.lancedb_is_remote
    assert not (p.root / "warehouse" / "lancedb").exists()  # nothing written to the local default

    # the vectors, their deletions log and both indexes' files are in the bucket, and LanceDB reads them from there
    tag = p.sql("SELECT DISTINCT embedder_tag FROM embeddings")[0][0]
    keys = s3.keys("lance/")
    table_prefix = f"lance/{store.table_name(tag)}.lance/"
    assert any(k.startswith(table_prefix + "data/") for k in keys), keys[:20]
    assert any(k.startswith(table_prefix + "_indices/") for k in keys), "no full-text index in the bucket"
    n_chunks = p.sql("SELECT count(*) FROM chunks WHERE chunker_tag = ?", [settings.chunker_tag])[0][0]
    table = store.open_table(store.open_store(settings), tag, 0)
    assert table.count_rows() == n_chunks > 0
    assert "FTS" in {i.index_type for i in table.list_indices()}
    from ragpipe.ingest import summary
    from ragpipe.warehouse import connect

    with connect(settings.duckdb_path, read_only=True) as con:
        assert f"s3://{BUCKET}/lance (LanceDB)" in summary(
            con, settings
        )  # what `ragpipe ingest` prints names the store

    # the same project stored locally: same retrievals (hybrid: vector + BM25), same verdicts
    local = copy_project(evaluated_base(tmp_path_factory), tmp_path_factory.mktemp("local") / "proj")
    assert not local.settings().lancedb_is_remote
    assert ranked(p) == ranked(local) and ranked(p)
    assert verdicts(p) == verdicts(local) and len(verdicts(p)) >= 10

    # the secret: not in the output, no file of the project (DuckDB, Dagster storage and logs), no object in the bucket
    assert SENTINEL not in out
    needle = SENTINEL.encode()
    for f in files_under(p.root):
        assert needle not in f.read_bytes(), f
    all_keys = s3.keys()
    assert all_keys
    for key in all_keys:
        assert needle not in s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read(), key


def test_export_to_s3_round_trips_every_table_and_view(s3_run: tuple[Project, str], s3: S3Server) -> None:
    p, _ = s3_run
    code, out = cli(p.root, "export", "--to", f"s3://{BUCKET}/exports", timeout=300)
    assert code == 0, out[-4000:]
    assert SENTINEL not in out
    relations = [
        r[0]
        for r in p.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND NOT starts_with(table_name, '_') ORDER BY 1"
        )
    ]
    assert {
        "chunks",
        "documents",
        "verdicts",
        "retrievals",
        "answers",
        "eval_runs",
        "latest_verdicts",
        "verdict_history",
        "eval_run_summary",
    } <= set(relations)
    fs = s3.filesystem()
    manifest = json.loads(fs.open_input_stream(f"{BUCKET}/exports/_manifest.json").read())
    listed = {r["name"]: r["rows"] for r in manifest["relations"]}
    assert sorted(listed) == relations
    for name in relations:
        expected = p.sql(f'SELECT count(*) FROM "{name}"')[0][0]
        table = pq.read_table(f"{BUCKET}/exports/{name}.parquet", filesystem=fs)
        assert table.num_rows == expected == listed[name], name
        assert f"s3://{BUCKET}/exports/{name}.parquet" in out  # every file written is printed, with its row count
    assert p.sql("SELECT count(*) FROM verdicts")[0][0] > 0
    back = pq.read_table(f"{BUCKET}/exports/latest_verdicts.parquet", filesystem=fs).to_pylist()
    assert {r["question_id"]: r["verdict"] for r in back} == {k: v[0] for k, v in verdicts(p).items()}
    assert not [k for k in s3.keys("exports/") if k.endswith(".tmp")]


def test_interrupted_export_leaves_no_complete_looking_file(
    s3_run: tuple[Project, str], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragpipe.warehouse import connect, export_warehouse

    p, _ = s3_run
    calls: list[int] = []
    real = pq.ParquetWriter.write_batch

    def dies_on_the_third_table(self: Any, batch: Any, *a: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the process interrupted half-way through writing a file
        return real(self, batch, *a, **kw)

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", dies_on_the_third_table)
    written: list[str] = []
    with connect(p.settings().duckdb_path, read_only=True) as con, pytest.raises(KeyboardInterrupt):
        export_warehouse(
            p.settings(),
            con,
            f"s3://{BUCKET}/partial",
            ["answers", "chunks", "documents", "verdicts"],
            log=lambda e: written.append(e.name),
        )
    keys = [k for k in s3.keys("partial/") if not k.endswith("/")]  # pyarrow may leave a directory marker
    assert written == ["answers", "chunks"]
    assert sorted(keys) == ["partial/answers.parquet", "partial/chunks.parquet"], keys  # no manifest, no temp file


def test_moved_store_is_refused_until_ingested(s3_run: tuple[Project, str], s3: S3Server, tmp_path: Path) -> None:
    """The location is no part of any code version: a store moved without its vectors fails retrieval loudly."""
    from ragpipe.assets.runner import materialize

    p = copy_project(s3_run[0].root, tmp_path / "proj")
    s3_settings(p, s3.endpoint, f"s3://{BUCKET}/moved")
    result = materialize(str(p.settings_file), ["retrievals"], p.instance)
    assert not result.success
    message = " ".join(
        str(e.event_specific_data.error.cause.message)
        for e in result.all_events
        if e.is_step_failure and e.event_specific_data.error.cause
    )
    assert f"s3://{BUCKET}/moved is empty" in message and "ragpipe ingest" in message, message


class HashEmbedder:
    """A deterministic stand-in embedder (random unit vectors seeded by the text) for store-level tests."""

    name = tag = "hash-test"
    dims = 32

    def encode(self, texts: list[str], progress: Any = None) -> Any:
        import hashlib

        import numpy as np

        out = []
        for t in texts:
            v = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=self.dims)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, dtype=np.float32)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]


def test_store_features_on_s3_sync_by_content_hash_fts_and_ann(s3: S3Server) -> None:
    """What the pipeline above does not reach on a small corpus: deletes and reuse by content hash on a re-sync, and
    the ANN index (built above [retriever].ann_min_rows), all on the bucket."""
    from ragpipe.ingest import Chunk, content_hash
    from ragpipe.rag import fts_search, vector_search
    from ragpipe.settings import S3Settings

    def chunks(texts: dict[str, str]) -> list[Chunk]:
        return [
            Chunk(cid, "doc", i, t, 0, len(t), None, None, content_hash(t)) for i, (cid, t) in enumerate(texts.items())
        ]

    texts = {
        f"c{i}": f"passage {i} about topic {i % 17} with the word {'zebra' if i == 7 else 'plain'}" for i in range(1200)
    }
    emb = HashEmbedder()
    db = store.connect(
        f"s3://{BUCKET}/features", S3Settings(endpoint_url=s3.endpoint, region="us-east-1", allow_http=True)
    )
    table, first = store.sync_vectors(db, emb, chunks(texts), run_id="r1")
    assert (first.embedded, first.reused, first.deleted) == (1200, 0, 0)
    # c0 removed, c1's text under a new id (its vector reused by content hash, not re-embedded), one new chunk
    texts2 = {k: v for k, v in texts.items() if k not in ("c0", "c1")}
    texts2 |= {"moved": texts["c1"], "fresh": "a brand new passage about giraffes"}
    table, second = store.sync_vectors(db, emb, chunks(texts2), run_id="r2")
    assert (second.embedded, second.reused, second.deleted, second.kept) == (1, 1, 2, 1198)
    rows = {r["chunk_id"]: r["content_hash"] for r in store.table_rows(table, ["chunk_id", "content_hash"])}
    assert rows == {k: content_hash(v) for k, v in texts2.items()}

    store.ensure_fts_index(table)
    assert [h.chunk_id for h in fts_search(table, "zebra", 3)][:1] == ["c7"]
    assert [h.chunk_id for h in fts_search(table, "giraffes", 3)][:1] == ["fresh"]
    assert store.ensure_vector_index(table, min_rows=1000) == "built"
    assert store.ensure_vector_index(table, min_rows=1000) == "kept"
    assert "IvfHnswSq" in {i.index_type for i in table.list_indices()}
    hits = vector_search(table, emb.encode([texts2["c9"]])[0], 5)
    assert hits[0].chunk_id == "c9"
    keys = s3.keys("features/")
    assert any("/_indices/" in k for k in keys) and any("/_deletions/" in k for k in keys)


# -- bad input --------------------------------------------------------------------------------------------------------


def test_missing_bucket_is_named_with_what_to_do(s3: S3Server, s3_run: tuple[Project, str], tmp_path: Path) -> None:
    p = make_project(tmp_path / "proj")
    s3_settings(p, s3.endpoint, "s3://no-such-bucket/lance")
    t0 = time.monotonic()
    code, out = cli(p.root, "ingest", timeout=120)
    assert code == 2, out[-4000:]
    assert time.monotonic() - t0 < 60  # refused before the corpus is parsed
    assert "s3://no-such-bucket/lance" in out and "does not exist" in out and "aws s3 mb s3://no-such-bucket" in out, (
        out
    )
    assert "Traceback" not in out and SENTINEL not in out and KEY_ID not in out
    assert not (p.root / "warehouse" / "ragpipe.duckdb").exists()

    code, out = cli(s3_run[0].root, "export", "--to", "s3://no-such-bucket/exports", timeout=120)
    assert code == 2 and "s3://no-such-bucket/exports" in out and "does not exist" in out, out
    assert "Traceback" not in out and SENTINEL not in out


def test_unreachable_endpoint_is_named_with_what_to_do(s3_run: tuple[Project, str], tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    p = make_project(tmp_path / "proj")
    s3_settings(p, dead, f"s3://{BUCKET}/lance")
    code, out = cli(p.root, "ci", timeout=180)
    assert code == 2, out[-4000:]
    assert f"s3://{BUCKET}/lance (endpoint {dead})" in out and "unreachable" in out and "endpoint_url" in out, out
    assert "Traceback" not in out and SENTINEL not in out

    q = copy_project(s3_run[0].root, tmp_path / "copy")
    s3_settings(q, dead, f"s3://{BUCKET}/lance")
    code, out = cli(q.root, "export", "--to", f"s3://{BUCKET}/exports", timeout=180)
    assert code == 2 and "unreachable" in out and f"s3://{BUCKET}/exports" in out, out
    assert "Traceback" not in out and SENTINEL not in out


def test_settings_refuse_credentials_in_uri_and_unannounced_http(tmp_path: Path) -> None:
    src = tmp_path / "ragpipe.toml"
    base = {"corpus": {"dir": "corpus"}}

    def load(warehouse: dict[str, Any]) -> Any:
        return settings_from_dict({**base, "warehouse": warehouse}, src)

    s = load({"lancedb_uri": "s3://b/p/"})
    assert s.lancedb_uri == "s3://b/p" and s.s3.endpoint_url is None
    assert load({}).lancedb_uri == str(tmp_path / "warehouse" / "lancedb")
    assert load({"lancedb_uri": "vectors"}).lancedb_uri == str(tmp_path / "vectors")
    with pytest.raises(SettingsError, match="credentials do not belong in the URI") as exc:
        load({"lancedb_uri": f"s3://{KEY_ID}:{SENTINEL}@b/p"})
    assert SENTINEL not in str(exc.value)
    with pytest.raises(SettingsError, match="allow_http = true"):
        load({"lancedb_uri": "s3://b/p", "s3": {"endpoint_url": "http://127.0.0.1:9000"}})
    with pytest.raises(SettingsError, match="only local paths and s3://"):
        load({"lancedb_uri": "gs://b/p"})
    with pytest.raises(SettingsError, match=r"unknown key\(s\) \[warehouse.s3\].secret_access_key"):
        load({"s3": {"secret_access_key": "x"}})
    # where the store lives changes no stage's code version
    moved = load({"lancedb_uri": "s3://b/p", "s3": {"endpoint_url": "https://s3.example.com", "region": "eu-west-1"}})
    assert all(
        code_version(moved, stage) == code_version(load({}), stage)
        for stage in ("corpus", "parser", "chunker", "embedder", "golden", "retriever", "answerer", "verdict")
    )
