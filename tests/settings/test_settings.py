"""Settings: one file, per-stage code versions, clear errors."""

from pathlib import Path

import pytest
from conftest import Project, make_project

from ragpipe.assets import build_definitions
from ragpipe.settings import SettingsError, load_settings


def _code_versions(p: Project) -> dict[str, str]:
    defs = build_definitions(str(p.settings_file))
    graph = defs.resolve_asset_graph()
    return {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}


def test_chunker_change_versions_chunks_not_embeddings(tmp_path: Path) -> None:
    p = make_project(tmp_path / "p")
    before = _code_versions(p)
    p.configure(max_characters=500)
    after = _code_versions(p)
    assert after["chunks"] != before["chunks"]
    assert after["embeddings"] == before["embeddings"]
    assert after["documents"] == before["documents"]


def test_embedder_change_versions_embeddings_not_chunks(tmp_path: Path) -> None:
    p = make_project(tmp_path / "p")
    before = _code_versions(p)
    p.configure(embedder="minilm-static")
    after = _code_versions(p)
    assert after["embeddings"] != before["embeddings"]
    assert after["chunks"] == before["chunks"]
    assert after["retrievals"] == before["retrievals"]


def test_settings_errors_name_file_and_field(tmp_path: Path) -> None:
    f = tmp_path / "ragpipe.toml"
    f.write_text('[corpus]\ndir = "c"\n[chunker]\nstrategy = "paragraphs"\n')
    with pytest.raises(
        SettingsError, match=r"ragpipe.toml.*\[chunker\].strategy must be .by_title., .basic. or .sentences."
    ):
        load_settings(f)
    f.write_text('[corpus]\ndir = "c"\n[chunker]\nmax_characters = "big"\n')
    with pytest.raises(SettingsError, match=r"\[chunker\].max_characters must be int"):
        load_settings(f)
    f.write_text('[corpus]\ndir = "c"\n[embedder]\nmodel = "x"\n')
    with pytest.raises(SettingsError, match=r"unknown key.*\[embedder\].model"):
        load_settings(f)
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_settings_path_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "other.toml"
    f.write_text('[corpus]\ndir = "docs"\n')
    monkeypatch.setenv("RAGPIPE_SETTINGS", str(f))
    s = load_settings()
    assert s.corpus.dir == tmp_path / "docs"
    assert s.duckdb_path == tmp_path / "warehouse" / "ragpipe.duckdb"


def test_parse_workers_and_shards_version_nothing(tmp_path: Path) -> None:
    """How parsing is split (processes, shards) does not change what it produces: no stage becomes stale."""
    p = make_project(tmp_path / "p")
    before = _code_versions(p)
    with p.settings_file.open("a") as fh:
        fh.write("\n[scale]\nparse_shards = 3\n")
    text = p.settings_file.read_text()
    p.settings_file.write_text(text.replace("[chunker]", "[parser]\nworkers = 4\n\n[chunker]", 1))
    assert p.settings().parser.workers == 4 and p.settings().scale.parse_shards == 3
    assert _code_versions(p) == before
    p.settings_file.write_text(text.replace("[chunker]", "[parser]\nworkers = -1\n\n[chunker]", 1))
    with pytest.raises(SettingsError, match=r"\[parser\].workers must be 0"):
        load_settings(p.settings_file)


def test_answerer_threads_versions_nothing(tmp_path: Path) -> None:
    """[answerer].threads sets how fast a local model runs, not what it answers: no stage and no NIAH run key moves
    (a run stopped under one thread count resumes under another)."""
    from ragpipe.niah import run_key

    p = make_project(tmp_path / "p")
    before, s0 = _code_versions(p), p.settings()
    text = p.settings_file.read_text()
    with p.settings_file.open("a") as fh:
        fh.write("\n[answerer]\nthreads = 1\n" if "[answerer]" not in text else "")
    if "[answerer]" in text:
        p.settings_file.write_text(text.replace("[answerer]", "[answerer]\nthreads = 1", 1))
    s1 = p.settings()
    assert s1.answerer.threads == 1 and s0.answerer.threads == 0
    assert _code_versions(p) == before
    assert run_key(s1, s1.niah, "h") == run_key(s0, s0.niah, "h")
    p.settings_file.write_text(p.settings_file.read_text().replace("threads = 1", "threads = -2"))
    with pytest.raises(SettingsError, match=r"\[answerer\].threads must be 0"):
        load_settings(p.settings_file)


def test_cluster_settings_choose_the_executor_and_version_nothing(tmp_path: Path) -> None:
    """Where steps run and where they stage their files does not change what they produce; the job is wired for it:
    the Celery executor, shard steps on the shared queue, everything else on the warehouse queue, outputs staged."""
    p = make_project(tmp_path / "p")
    before = _code_versions(p)
    text = p.settings_file.read_text()
    cluster = (
        '\n[scale]\nparse_shards = 2\nembed_shards = 2\nexecutor = "celery"\nbroker = "redis://10.0.0.5:6379/1"\n'
        '\n[warehouse.s3]\nendpoint_url = "http://127.0.0.1:9000"\nallow_http = true\n'
    )
    p.settings_file.write_text(
        text.replace("[warehouse]\n", '[warehouse]\nstaging_uri = "s3://bucket/stage/"\n', 1) + cluster
    )
    s = p.settings()
    assert s.staging_uri == "s3://bucket/stage" and s.scale.executor == "celery"
    assert _code_versions(p) == before
    defs = build_definitions(str(p.settings_file))
    job = defs.resolve_job_def("ragpipe_job")
    assert job.executor_def.name == "ragpipe_celery"
    assert type(defs.resources["io_manager"]).__name__ == "StagingIOManager"
    queues = {node.name: node.definition.tags.get("dagster-celery/queue") for node in job.graph.node_dict.values()}
    assert queues["documents"] is None  # a graph: its shard ops carry the tag
    shard_ops = job.graph.node_named("documents").definition.node_defs
    assert {op.name: op.tags.get("dagster-celery/queue") for op in shard_ops} == {
        "parse_plan": None,
        "parse_shard_0": "dagster",
        "parse_shard_1": "dagster",
        "parse_merge": None,
    }
    # without a cluster: Dagster's own executor and IO manager
    p.settings_file.write_text(text)
    defs = build_definitions(str(p.settings_file))
    assert defs.resolve_job_def("ragpipe_job").executor_def.name != "ragpipe_celery"
    assert "io_manager" not in (defs.resources or {})


@pytest.mark.parametrize(
    "section, message",
    [
        ('[scale]\nexecutor = "k8s"', r"\[scale\].executor must be one of multiprocess, celery"),
        ('[scale]\nbroker = "amqp://h:5672//"', r"\[scale\].broker must be a redis://"),
        (
            '[scale]\nbroker = "redis://:hunter2@h:6379/0"',
            r"\[scale\].broker: a password does not belong.*REDIS_PASSWORD",
        ),
        ('[scale]\nwarehouse_queue = "dagster"', r"\[scale\].warehouse_queue must be a queue name other than"),
        ('[warehouse]\nstaging_uri = "s3://key:secret@bucket/x"', r"\[warehouse\].staging_uri: credentials do not"),
        ('[warehouse]\nstaging_uri = "gs://bucket/x"', r"\[warehouse\].staging_uri 'gs://bucket/x': only local"),
    ],
)
def test_cluster_settings_errors_name_the_field(tmp_path: Path, section: str, message: str) -> None:
    f = tmp_path / "ragpipe.toml"
    f.write_text(f'[corpus]\ndir = "c"\n{section}\n')
    with pytest.raises(SettingsError, match=message):
        load_settings(f)
