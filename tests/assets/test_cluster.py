"""The graph on a cluster executor whose workers share no disk: dagster-celery with a real Redis broker, the Dagster
instance on a real PostgreSQL server, staging and LanceDB on a real S3-compatible server (moto), three Celery worker
processes each in its own directory with its own settings file, as separate machines would be.

`wh` holds the warehouse and serves only the warehouse queue; `s1` and `s2` serve the shard queue and have no corpus,
no DuckDB file and no LanceDB store: what they parse and embed reaches them through object storage only. One of them
is killed (SIGKILL, the whole process group) in the middle of a shard step; the step goes back on its queue and the
other finishes it. The tables equal those of a one-process run of the same corpus. A run launched while the broker is
unreachable fails with one line that names it, and nothing is queued.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import dagster as dg
import numpy as np
import pytest
from conftest import EXAMPLES, MODELS_DIR, Project, project_settings, write_settings
from pgkit import VARIANT, PgServer
from s3kit import BUCKET, S3Server, _free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.dagster,
    pytest.mark.postgres,
    pytest.mark.s3,
    pytest.mark.cluster,
    pytest.mark.timeout(900),
]

REQUIRE_ENV = "RAGPIPE_REQUIRE_REDIS"
CORPUS_DIRS = ("announcements", "reports")  # 12 files: Markdown, HTML, text and 2 PDFs
WAREHOUSE_STEPS = {"corpus", "documents.parse_plan", "documents.parse_merge", "chunks"}
WAREHOUSE_STEPS |= {"embeddings.embed_plan", "embeddings.embed_merge", "inputs_current"}  # the last: a check
SHARD_STEPS = {"documents.parse_shard_0", "documents.parse_shard_1"}
SHARD_STEPS |= {"embeddings.embed_shard_0", "embeddings.embed_shard_1"}
SELECTION = ["corpus", "documents", "chunks", "embeddings"]


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A throwaway redis-server on a free loopback port (no persistence); yields its URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=(workdir / "server.log").open("w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"redis-server exited with {proc.returncode}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start within 30 s"
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """redis-server from Debian's package (.ci/run installs it)."""
    if shutil.which("redis-server") is None:
        reason = "redis-server is not installed (Debian's redis-server package)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1: Redis is required here)")
        pytest.skip(reason)
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def cluster_settings(server: S3Server, broker: str, models_dir: str) -> dict[str, Any]:
    settings = project_settings(embedder="minilm", models_dir=models_dir)
    settings["warehouse"].update(
        lancedb_uri=f"s3://{BUCKET}/cluster/lancedb",
        staging_uri=f"s3://{BUCKET}/cluster/staging",
        s3={"endpoint_url": server.endpoint, "region": "us-east-1", "allow_http": True},
    )
    settings["scale"] = {
        "parse_shards": 2,
        "embed_shards": 2,
        "executor": "celery",
        "broker": broker,
        "visibility_timeout_s": 60,  # a killed worker's step is queued again after 60 s (every step here is shorter)
    }
    return settings


def copy_corpus(dest: Path) -> None:
    for name in CORPUS_DIRS:
        shutil.copytree(EXAMPLES / "corpus" / name, dest / name)


def machine(root: Path, settings: dict[str, Any]) -> Path:
    """A directory standing for a machine: its settings file and its Dagster home (the PostgreSQL variant, verbatim,
    whose relative paths resolve against the working directory, this one)."""
    (root / "dagster_home").mkdir(parents=True)
    shutil.copy(VARIANT, root / "dagster_home" / "dagster.yaml")
    return write_settings(root / "ragpipe.toml", settings)


@dataclass
class Worker:
    name: str
    root: Path
    proc: subprocess.Popen[bytes]

    @property
    def log(self) -> Path:
        return self.root / "worker.log"

    def kill(self) -> None:
        with_group = self.proc.poll() is None
        if with_group:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


def start_worker(name: str, root: Path, queues: str, postgres: PgServer) -> Worker:
    env = {
        **os.environ,
        **postgres.env(),
        "DAGSTER_HOME": str(root / "dagster_home"),
        "RAGPIPE_SETTINGS": str(root / "ragpipe.toml"),
    }
    cmd = [sys.executable, "-m", "celery", "-A", "ragpipe.assets.worker", "worker", "-Q", queues, "-c", "1"]
    cmd += ["-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    log = (root / "worker.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return Worker(name, root, proc)


def wait_ready(workers: list[Worker], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    for w in workers:
        while "ready." not in w.log.read_text(errors="replace"):
            assert w.proc.poll() is None, f"worker {w.name} exited:\n{w.log.read_text(errors='replace')[-3000:]}"
            assert time.monotonic() < deadline, f"worker {w.name} not ready:\n{w.log.read_text(errors='replace')}"
            time.sleep(0.5)


def kill_first_shard_worker(workers: list[Worker], killed: list[Worker], stop: threading.Event) -> None:
    """Kill the first shard worker seen with a work file in its own staging cache (it is in a shard step), once."""
    while not stop.is_set() and not killed:
        for w in workers:
            if any((w.root / "warehouse" / "staging").glob("parse-*/work-*")):
                time.sleep(1.0)  # well into the step: its parser process is starting
                w.kill()
                killed.append(w)
                return
        time.sleep(0.1)


def placements(instance: dg.DagsterInstance, run_id: str) -> dict[str, list[str]]:
    """step key -> the queue it was submitted to, then the Celery workers that started it, in order (from the run's
    engine events)."""
    seen: dict[str, list[str]] = {}
    for record in instance.all_logs(run_id):
        ev = record.dagster_event
        if ev is None or not ev.is_engine_event:
            continue
        message = ev.message or ""
        if message.startswith("Submitting celery task"):
            seen.setdefault(ev.step_key, []).insert(0, message.split('to queue "')[1].rstrip('".'))
        elif "in celery worker" in message:
            md = ev.engine_event_data.metadata
            step, host = md["step_keys"].value, md["Celery worker"].value.split("@")[0]
            if host not in seen.setdefault(step, []):
                seen[step].append(host)
    return seen


@dataclass
class ClusterRun:
    warehouse: Project
    shard_roots: list[Path]
    instance: dg.DagsterInstance
    result: Any
    killed: str
    placement: dict[str, list[str]]
    broker_down: Any


@pytest.fixture(scope="module")
def cluster(
    pg: PgServer,  # noqa: F811
    s3: S3Server,  # noqa: F811
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ClusterRun]:
    from ragpipe.assets.runner import materialize

    base = tmp_path_factory.mktemp("cluster")
    wh = base / "wh"
    settings = cluster_settings(s3, redis_url, MODELS_DIR)
    machine(wh, settings)
    copy_corpus(wh / "corpus")
    shutil.copy(EXAMPLES / "golden.jsonl", wh / "golden.jsonl")
    shard_roots = []
    for name in ("s1", "s2"):  # no corpus, no golden file, models built in their own directory
        machine(base / name, cluster_settings(s3, redis_url, "models"))
        shard_roots.append(base / name)

    mp = pytest.MonkeyPatch()
    for k, v in pg.env().items():
        mp.setenv(k, v)
    mp.setenv("DAGSTER_HOME", str(wh / "dagster_home"))
    mp.setenv("RAGPIPE_SETTINGS", str(wh / "ragpipe.toml"))
    mp.chdir(wh)
    instance = dg.DagsterInstance.get()
    # The broker down: the run fails at once with one line, nothing queued (a dead port stands for it). Before the
    # workers start: a worker reads its settings file as it starts, and must not read this one.
    write_settings(wh / "ragpipe.toml", cluster_settings(s3, f"redis://127.0.0.1:{_free_port()}/0", MODELS_DIR))
    down = materialize(str(wh / "ragpipe.toml"), SELECTION, instance, multiprocess=True)
    write_settings(wh / "ragpipe.toml", settings)
    workers = [start_worker("wh", wh, "ragpipe-warehouse", pg)]
    workers += [start_worker(r.name, r, "dagster", pg) for r in shard_roots]
    stop, killed = threading.Event(), []
    try:
        wait_ready(workers)
        killer = threading.Thread(target=kill_first_shard_worker, args=(workers[1:], killed, stop), daemon=True)
        killer.start()
        result = materialize(str(wh / "ragpipe.toml"), SELECTION, instance, multiprocess=True)
        stop.set()
        killer.join(10)
        logs = "\n".join(f"--- {w.name}\n{w.log.read_text(errors='replace')[-4000:]}" for w in workers)
        assert result.success, [str(e) for e in result.all_events if e.is_failure] + [logs]
        assert killed, "no shard worker was seen in a shard step: nothing was killed\n" + logs
        yield ClusterRun(
            Project(wh, instance),
            shard_roots,
            instance,
            result,
            killed[0].name,
            placements(instance, result.run_id),
            down,
        )
    finally:
        stop.set()
        for w in workers:
            w.kill()
        mp.undo()


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The same corpus through the default graph in one process: no shards, LanceDB on local disk."""
    root = tmp_path_factory.mktemp("one") / "proj"
    copy_corpus(root / "corpus")
    write_settings(root / "ragpipe.toml", project_settings(embedder="minilm"))
    p = Project(root, dg.DagsterInstance.ephemeral())
    p.materialize(SELECTION)
    return p


def test_writers_run_on_the_warehouse_worker_and_shards_elsewhere(cluster: ClusterRun) -> None:
    placed = cluster.placement
    assert set(placed) == WAREHOUSE_STEPS | SHARD_STEPS, placed
    assert all(placed[step] == ["ragpipe-warehouse", "wh"] for step in WAREHOUSE_STEPS), placed
    assert all(placed[step][0] == "dagster" and set(placed[step][1:]) <= {"s1", "s2"} for step in SHARD_STEPS), placed
    # A shard machine holds no warehouse and never had the corpus: it parsed what object storage gave it.
    for root in cluster.shard_roots:
        assert not (root / "corpus").exists()
        assert not (root / "warehouse" / "ragpipe.duckdb").exists() and not (root / "warehouse" / "lancedb").exists()
    # Its copy of a finished shard's files is gone (they stay in object storage until the merge deletes them).
    worked = next(r for r in cluster.shard_roots if r.name != cluster.killed)
    assert (worked / "warehouse" / "staging").is_dir() and not any((worked / "warehouse" / "staging").rglob("work-*"))


def test_a_shard_killed_mid_step_is_finished_by_the_other_worker(cluster: ClusterRun) -> None:
    retried = [step for step, (_queue, *hosts) in cluster.placement.items() if len(hosts) == 2]
    survivor = ({"s1", "s2"} - {cluster.killed}).pop()
    assert len(retried) == 1 and cluster.placement[retried[0]][1:] == [cluster.killed, survivor], cluster.placement
    assert retried[0].startswith("documents.parse_shard_")
    done = {
        e.step_key for e in cluster.result.all_events if e.event_type_value == "STEP_SUCCESS" and e.step_key in retried
    }
    assert done == set(retried)


def test_cluster_tables_equal_the_one_process_run(cluster: ClusterRun, one_process: Project) -> None:
    docs = "SELECT doc_id, sha256, format, n_elements, n_chars, text, elements_json FROM documents ORDER BY doc_id"
    assert cluster.warehouse.sql(docs) == one_process.sql(docs)
    chunks = "SELECT chunk_id, doc_id, content_hash, text FROM chunks ORDER BY chunk_id"
    assert cluster.warehouse.sql(chunks) == one_process.sql(chunks) and len(one_process.sql(chunks)) > 20
    a, b = vectors(cluster.warehouse), vectors(one_process)
    assert a.keys() == b.keys() and all(a[k][0] == b[k][0] for k in a)
    assert max(float(np.abs(a[k][1] - b[k][1]).max()) for k in a) < 1e-6
    assert cluster.warehouse.settings().lancedb_is_remote and not one_process.settings().lancedb_is_remote


def vectors(p: Project) -> dict[str, tuple[str, np.ndarray]]:
    from ragpipe.embed import load_embedder, store

    s = p.settings()
    emb = load_embedder(s.embedder, s.models_dir)
    rows = store.table_rows(
        store.open_store(s).open_table(store.table_name(emb.tag)), ["chunk_id", "content_hash", "vector"]
    )
    return {r["chunk_id"]: (r["content_hash"], np.asarray(r["vector"], dtype=np.float32)) for r in rows}


def test_staging_is_emptied_after_the_merges(cluster: ClusterRun, s3: S3Server) -> None:  # noqa: F811
    left = [k for k in s3.keys("cluster/staging/") if not k.startswith("cluster/staging/outputs/") and k[-1] != "/"]
    assert left == []
    assert s3.keys("cluster/staging/outputs/"), "the steps' outputs went through object storage"


def test_broker_down_fails_the_run_with_one_line(cluster: ClusterRun) -> None:
    from ragpipe.cli.common import failure_lines

    down = cluster.broker_down
    assert not down.success
    lines = failure_lines(down)  # what `ragpipe ci` prints
    assert len(lines) == 1 and "BrokerUnavailable: cannot reach the Celery broker redis://127.0.0.1:" in lines[0], lines
    assert "([scale].broker)" in lines[0] and "Start Redis" in lines[0], lines
    started = [e.step_key for e in down.all_events if e.event_type_value == "STEP_START"]
    assert started == []
