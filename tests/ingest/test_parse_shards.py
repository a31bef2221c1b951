"""Sharded parsing: the warehouse is the same for 1 or N shards in any completion order, bad files become
ingest_errors rows as unsharded, killed shards resume, and the worker count follows the cores and memory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import EXAMPLES, Project, make_project

from ragpipe import ingest
from ragpipe.ingest import WORKER_RSS_MB, derive_workers, parse_shards
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect


def test_worker_count_from_cores_and_memory() -> None:
    per_worker = WORKER_RSS_MB + 2048
    assert derive_workers(3, 2048, cpus=64, memory_mb=10**6) == 3  # [parser].workers wins
    assert derive_workers(0, 2048, cpus=2, memory_mb=10**6) == 1  # two cores: one worker (measured faster)
    assert derive_workers(0, 2048, cpus=1, memory_mb=None) == 1
    assert derive_workers(0, 2048, cpus=32, memory_mb=10**6) == 32  # one per core when memory allows
    assert derive_workers(0, 2048, cpus=32, memory_mb=10 * per_worker + 1) == 10  # memory caps it
    assert derive_workers(0, 512, cpus=32, memory_mb=10 * per_worker) > 10  # a lower per-document limit: more
    assert derive_workers(0, 2048, cpus=32, memory_mb=100) == 1  # always at least one
    assert derive_workers(0, 2048, cpus=32, memory_mb=None) == 32
    assert derive_workers(0, 2048, cpus=32, memory_mb=10**6, share=4) == 8  # 4 shards on one machine
    assert derive_workers(0, 2048, cpus=32, memory_mb=8 * per_worker, share=4) == 2
    assert derive_workers(0, 2048, cpus=4, memory_mb=10**6, share=2) == 1


KEEP = (
    "announcements/2022-04-12-hr-300x-launch.md",
    "announcements/2023-06-20-lumen-acquisition.html",
    "announcements/2024-10-07-monterrey-office.txt",
    "contracts/brightline-msa.md",
    "policies/data-retention-schedule.html",
    "policies/password-policy-2020.txt",
    "product/hr-200-datasheet.md",
    "reports/q2-2024.pdf",
)
BAD = ("bad/empty.md", "bad/binary.md", "bad/corrupt.pdf")


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A small corpus (every format, three bad files) with the corpus stage done, documents not yet parsed."""
    p = make_project(tmp_path_factory.mktemp("parse-shards") / "proj", with_golden=False)
    shutil.rmtree(p.corpus)
    for rel in KEEP:
        (p.corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLES / "corpus" / rel, p.corpus / rel)
    (p.corpus / "bad").mkdir()
    (p.corpus / "bad/empty.md").write_bytes(b"")
    (p.corpus / "bad/binary.md").write_bytes(bytes(range(256)) * 4)
    (p.corpus / "bad/corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage\n%%EOF")
    p.materialize(["corpus"])
    return p


def _copy(p: Project, dest: Path) -> Project:
    shutil.copytree(p.root, dest)
    return Project(dest, dg.DagsterInstance.ephemeral())


def _warehouse(p: Project) -> dict[str, list[tuple[Any, ...]]]:
    """Everything the documents stage writes except timings, run ids and absolute paths, in storage order."""
    return {
        "documents": p.sql(
            "SELECT doc_id, sha256, format, n_elements, n_chars, text, elements_json FROM documents ORDER BY rowid"
        ),
        "errors": p.sql("SELECT path, stage, sha256, error_class, message FROM ingest_errors ORDER BY rowid"),
    }


@pytest.fixture(scope="module")
def reference(synced: Project, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[Any, ...]]]:
    ref = _copy(synced, tmp_path_factory.mktemp("ref") / "proj")
    s = ref.settings()
    with connect(s.duckdb_path) as con:
        stats = ingest.parse_documents(s, con, "run-ref")
    assert (stats["parsed_this_run"], stats["failed_this_run"]) == (len(KEEP), len(BAD))
    return _warehouse(ref)


def _sharded(p: Project, n: int, order: list[int]) -> dict[str, Any]:
    s = p.settings()
    with connect(s.duckdb_path) as con:
        plan = parse_shards.plan_parse_shards(s, con, n)
    for i in order:
        parse_shards.parse_shard(s, Path(plan["stage"]), i, n, workers=1)
    with connect(s.duckdb_path) as con:
        stats = parse_shards.merge_parse_shards(s, con, "run-merge", Path(plan["stage"]), n)
    assert not Path(plan["stage"]).exists()
    return {**plan, **stats}


@pytest.mark.slow
@pytest.mark.parametrize("n,order", [(1, [0]), (3, [2, 1, 0]), (3, [0, 2, 1])])
def test_any_shard_count_and_order_gives_the_unsharded_warehouse(
    synced: Project, reference: dict[str, Any], tmp_path: Path, n: int, order: list[int]
) -> None:
    q = _copy(synced, tmp_path / "q")
    stats = _sharded(q, n, order)
    assert sum(stats["shard_sizes"]) == len(KEEP) + len(BAD)
    assert (stats["parsed_this_run"], stats["failed_this_run"], stats["ingest_errors"]) == (len(KEEP), len(BAD), 3)
    assert _warehouse(q) == reference
    errors = {r[0]: r for r in reference["errors"]}
    assert set(errors) == set(BAD) and all(r[1] == "parse" and r[4].startswith(r[0]) for r in errors.values())
    again = _sharded(q, n, order)  # nothing new: an empty plan, nothing parsed, the warehouse unchanged
    assert (again["files"], again["parsed_this_run"], again["unchanged"]) == (0, 0, len(KEEP) + len(BAD))
    assert _warehouse(q) == reference


@pytest.mark.slow
def test_a_killed_shard_resumes_and_finished_shards_are_not_parsed_again(
    synced: Project, reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = _copy(synced, tmp_path / "killed")
    s = q.settings()
    with connect(s.duckdb_path) as con:
        plan = parse_shards.plan_parse_shards(s, con, 3)
    stage = Path(plan["stage"])
    parse_shards.parse_shard(s, stage, 0, 3, workers=1)
    parse_shards.parse_shard(s, stage, 1, 3, workers=1)
    # shard 1 was killed after its first file, in the middle of writing the second line of its journal
    lines = (stage / parse_shards._results_name(1, 3)).read_text().splitlines(keepends=True)
    assert len(lines) >= 2, "the test needs a shard of two files or more"
    (stage / parse_shards._results_name(1, 3)).unlink()
    parse_shards._journal(stage, 1, 3).write_text(lines[0] + lines[1][:20])
    with connect(s.duckdb_path) as con:
        with pytest.raises(parse_shards.StagingError, match=r"results-1-of-3.jsonl.*results-2-of-3.jsonl.*again"):
            parse_shards.merge_parse_shards(s, con, "run-early", stage, 3)
        again = parse_shards.plan_parse_shards(s, con, 3)
    assert again["stage"] == plan["stage"]  # the same plan: the work so far is found

    parsed: list[str] = []
    real = parse_shards.parse_one

    def counting(settings: Any, pool: Any, rel: str, sha: str) -> Any:
        parsed.append(rel)
        return real(settings, pool, rel, sha)

    monkeypatch.setattr(parse_shards, "parse_one", counting)
    done = [parse_shards.parse_shard(s, stage, i, 3, workers=1) for i in range(3)]
    assert [d["resumed"] for d in done] == [True, False, False]
    assert done[1]["kept"] == 1 and done[1]["parsed"] == len(lines) - 1
    assert len(parsed) == plan["shard_sizes"][1] - 1 + plan["shard_sizes"][2]
    with connect(s.duckdb_path) as con:
        parse_shards.merge_parse_shards(s, con, "run-resumed", stage, 3)
    assert _warehouse(q) == reference


@pytest.mark.slow
@pytest.mark.dagster
def test_dagster_run_with_two_parse_shards(synced: Project, reference: dict[str, Any], tmp_path: Path) -> None:
    """The multiprocess executor (as the daemon and `ragpipe ci --multiprocess` run it): shards in two processes."""
    from ragpipe.assets.runner import materialize

    q = _copy(synced, tmp_path / "dg")
    with q.settings_file.open("a") as fh:
        fh.write("\n[scale]\nparse_shards = 2\n")
    (tmp_path / "dagster_home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    before = os.environ.get("RAGPIPE_SETTINGS")
    result = materialize(str(q.settings_file), ["documents"], instance, multiprocess=True)
    assert result.success, [str(e) for e in result.all_events if e.is_failure]
    assert os.environ.get("RAGPIPE_SETTINGS") == before  # the step processes' variable does not outlive the run
    steps, pids = set(), {}
    for ev in result.all_events:
        if ev.event_type_value == "STEP_SUCCESS" and ev.step_key.startswith("documents."):
            steps.add(ev.step_key.removeprefix("documents."))
        if ev.event_type_value == "STEP_OUTPUT" and ev.step_key.startswith("documents.parse_shard_"):
            pids[ev.step_key] = ev.event_specific_data.metadata["pid"].value
    assert steps == {"parse_plan", "parse_shard_0", "parse_shard_1", "parse_merge"}
    assert len(set(pids.values())) == 2, pids
    record = instance.fetch_materializations(dg.AssetKey("documents"), limit=1).records[0]
    md = {k: v.value for k, v in record.asset_materialization.metadata.items()}
    assert (md["shards"], md["documents"], md["ingest_errors"]) == (2, len(KEEP), len(BAD))
    assert _warehouse(q) == reference
    assert not list((q.settings().warehouse_dir / "staging").glob("parse-*"))


class _Killed(BaseException):
    """Stands for SIGKILL in the middle of a shard: nothing after it runs."""


@pytest.mark.slow
@pytest.mark.s3
def test_a_shard_killed_on_one_machine_resumes_on_another_through_object_storage(
    synced: Project,
    reference: dict[str, Any],
    s3: Any,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With an s3:// staging_uri, machines that share no disk: B parses from the staged files (it has no corpus), is
    killed after a file, and C finishes that shard from the journal B left in object storage."""
    from s3kit import BUCKET

    q = _copy(synced, tmp_path / "a")
    text = q.settings_file.read_text().replace("[warehouse]\n", f'[warehouse]\nstaging_uri = "s3://{BUCKET}/ps"\n', 1)
    text += f'\n[warehouse.s3]\nendpoint_url = "{s3.endpoint}"\nregion = "us-east-1"\nallow_http = true\n'
    q.settings_file.write_text(text)
    machines = {}
    for name in ("b", "c"):  # the same settings file, its own directory: no corpus, no warehouse
        (tmp_path / name).mkdir()
        (tmp_path / name / "ragpipe.toml").write_text(text)
        machines[name] = load_settings(tmp_path / name / "ragpipe.toml")
    s = q.settings()
    with connect(s.duckdb_path) as con:
        plan = parse_shards.plan_parse_shards(s, con, 3)
    stage = Path(plan["stage"])
    assert plan["shard_sizes"][1] >= 2, "the test needs a shard of two files or more"
    parsed: list[str] = []
    real = parse_shards.parse_one

    def killed_after_one(settings: Any, pool: Any, rel: str, sha: str) -> Any:
        if parsed:
            raise _Killed()
        parsed.append(rel)
        return real(settings, pool, rel, sha)

    monkeypatch.setattr(parse_shards, "JOURNAL_SYNC_S", 0.0)
    monkeypatch.setattr(parse_shards, "parse_one", killed_after_one)
    with pytest.raises(_Killed):
        parse_shards.parse_shard(machines["b"], stage, 1, 3, workers=1)
    assert not machines["b"].corpus.dir.exists()

    def counting(settings: Any, pool: Any, rel: str, sha: str) -> Any:
        parsed.append(rel)
        return real(settings, pool, rel, sha)

    parsed.clear()
    monkeypatch.setattr(parse_shards, "parse_one", counting)
    done = [parse_shards.parse_shard(machines["c"], stage, i, 3, workers=1) for i in range(3)]
    assert done[1]["kept"] == 1 and done[1]["parsed"] == plan["shard_sizes"][1] - 1
    assert len(parsed) == sum(plan["shard_sizes"]) - 1
    with connect(s.duckdb_path) as con:
        parse_shards.merge_parse_shards(s, con, "run-remote", stage, 3)
    assert _warehouse(q) == reference
    assert [k for k in s3.keys("ps/") if not k.endswith("/")] == []  # the merge deleted the stage
