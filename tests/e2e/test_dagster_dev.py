"""A real `dagster dev` on a throwaway project, driven over GraphQL: assets, checks, sensors, schedule, a launched
run of the whole graph, the verdicts' metadata, and a clean stop of the whole process tree.

The flow is `make demo` then `make ui`: the graph is first materialized in-process into the instance that
`dagster dev` then serves. On a fresh instance the corpus sensor and the automation sensor (both RUNNING) each
launch a run of the whole graph for the missing assets; every step of every run takes the duckdb pool's one slot,
including its process start, so three whole-graph runs take many minutes on a loaded 2-core machine. The daemon
may still launch runs of its own here; the test tolerates them (any run failing fails it) and follows its own run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import dagster as dg
import pytest
import yaml
from conftest import ROOT, Project, make_project
from devkit import ASSETS, free_port, group_members, processes_using, sigint_not_ignored, trim_project

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.timeout(400)]

CHECKS = {"no_failures", "every_test_ran", "verified_under_current_embedder", "golden_stamps_current", "inputs_current"}
LOCATION = "ragpipe"  # [tool.dagster] code_location_name in pyproject.toml


def write_instance(home: Path) -> None:
    """The project's dagster.yaml with its relative storage paths made absolute inside `home`."""
    cfg = yaml.safe_load((ROOT / "dagster.yaml").read_text(encoding="utf-8"))
    assert cfg["telemetry"] == {"enabled": False}
    assert cfg["concurrency"]["pools"]["default_limit"] == 1
    cfg["storage"]["sqlite"]["base_dir"] = str(home / "storage")
    cfg["local_artifact_storage"]["config"]["base_dir"] = str(home)
    cfg["compute_logs"]["config"]["base_dir"] = str(home / "logs")
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")


def seed(p: Project, home: Path) -> str:
    """What `ragpipe demo` does: materialize the graph in-process into the instance `dagster dev` will serve."""
    from ragpipe.assets.runner import materialize

    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = materialize(str(p.settings_file), sorted(ASSETS), instance, tags={"ragpipe/trigger": "test_seed"})
        assert result.success, [str(e) for e in result.all_events if e.is_failure]
        return result.run_id


class DagsterDev:
    def __init__(self, proc: subprocess.Popen, port: int, log: Path, home: Path):
        self.proc, self.port, self.log, self.home = proc, port, log, home
        self.url = f"http://127.0.0.1:{port}"
        self.left_after_stop: list[int] | None = None
        self.stop_s = 0.0
        self.needed_sigkill = False

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def get(self, path: str) -> int:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            return resp.status

    def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        req = urllib.request.Request(self.url + "/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            doc = json.loads(resp.read())
        assert not doc.get("errors"), doc["errors"]
        return doc["data"]

    def wait_ready(self, timeout_s: float) -> float:
        t0 = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.get("/server_info") == 200:
                    return time.monotonic() - t0
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() - t0 > timeout_s:
                pytest.fail(f"dagster dev did not answer HTTP 200 within {timeout_s:g} s:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after `timeout_s`; records what is left afterwards."""
        pgid = self.proc.pid  # start_new_session: the process is its group's leader
        t0 = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.proc.poll()  # reap the leader
            if not group_members(pgid):
                break
            time.sleep(0.5)
        else:
            self.needed_sigkill = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while group_members(pgid) and time.monotonic() < deadline:
                self.proc.poll()
                time.sleep(0.2)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.stop_s = time.monotonic() - t0
        time.sleep(0.5)
        self.left_after_stop = sorted(set(group_members(pgid)) | set(processes_using(self.home)))


@contextlib.contextmanager
def dagster_dev(settings_file: Path, home: Path) -> Iterator[DagsterDev]:
    assert (home / "dagster.yaml").is_file()
    port = free_port()
    env = {**os.environ, "RAGPIPE_SETTINGS": str(settings_file), "DAGSTER_HOME": str(home)}
    log = home / "dagster-dev.log"
    with open(log, "wb") as out, sigint_not_ignored():
        proc = subprocess.Popen(
            [sys.executable, "-m", "dagster", "dev", "-h", "127.0.0.1", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the whole tree is stopped with one killpg
        )
    dev = DagsterDev(proc, port, log, home)
    try:
        yield dev
    finally:
        dev.stop()


REPOS = """{ repositoriesOrError { __typename ... on RepositoryConnection { nodes { name location { name } } }
  ... on PythonError { message } } }"""

WORKSPACE = """{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message stack } } } } } }"""

ASSET_NODES = (
    """{ assetNodes { assetKey { path } assetChecksOrError { __typename ... on AssetChecks { checks { name } } } } }"""
)

INSTIGATORS = """query($r: RepositorySelector!) {
  sensorsOrError(repositorySelector: $r) { __typename ... on Sensors { results { name sensorState { status } } }
    ... on PythonError { message } }
  schedulesOrError(repositorySelector: $r) { __typename ... on Schedules { results { name cronSchedule
    scheduleState { status } } } ... on PythonError { message } } }"""

LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId status } }
  ... on PythonError { message stack } ... on InvalidSubsetError { message } ... on PipelineNotFoundError { message }
  ... on RunConfigValidationInvalid { errors { message } } ... on ConflictingExecutionParamsError { message } } }"""

RUNS = """{ runsOrError { ... on Runs { results { runId status jobName tags { key value }
  assetMaterializations { assetKey { path } } } } } }"""

RUN_ERRORS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { eventConnection(limit: 1000) { events {
  __typename ... on MessageEvent { message level } ... on ExecutionStepFailureEvent { stepKey error { message } } } } } } }"""

VERDICTS = """{ assetOrError(assetKey: {path: ["verdicts"]}) { __typename ... on Asset {
  assetMaterializations(limit: 10) { runId metadataEntries { __typename label
    ... on MarkdownMetadataEntry { mdStr } ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text }
    ... on TableMetadataEntry { table { records schema { columns { name } } } } } } } } }"""

CHECK_EXECUTIONS = """query($name: String!) { assetCheckExecutions(assetKey: {path: ["verdicts"]}, checkName: $name,
  limit: 10) { runId status evaluation { success checkName } } }"""


def wait_for_location(dev: DagsterDev, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        ws = dev.gql(WORKSPACE)["workspaceOrError"]
        entries = {e["name"]: e for e in ws.get("locationEntries", [])}
        entry = entries.get(LOCATION)
        if entry and entry["loadStatus"] == "LOADED":
            err = entry["locationOrLoadError"]
            assert err["__typename"] == "RepositoryLocation", (
                err.get("message", "") + "\n" + "".join(err.get("stack", []))
            )
            return
        if time.monotonic() > deadline:
            pytest.fail(f"code location {LOCATION!r} not loaded within {timeout_s:g} s: {ws}\n{dev.log_tail()}")
        time.sleep(1)


STEP_STATS = """{ runsOrError { ... on Runs { results { runId jobName status stepStats { stepKey status startTime endTime } } } } }"""


def run_overview(dev: DagsterDev) -> str:
    """Each run with its steps' status and seconds: what a timeout message needs."""
    lines = []
    for r in dev.gql(STEP_STATS)["runsOrError"]["results"]:
        steps = ", ".join(
            f"{s['stepKey']} {s['status']}"
            + (f" {s['endTime'] - s['startTime']:.0f}s" if s["startTime"] and s["endTime"] else "")
            for s in r["stepStats"]
        )
        lines.append(f"{r['runId'][:8]} {r['jobName']} {r['status']}: {steps}")
    return "\n".join(lines)


def run_errors(dev: DagsterDev, run_id: str) -> list[str]:
    events = dev.gql(RUN_ERRORS, id=run_id)["runOrError"]["eventConnection"]["events"]
    out = []
    for e in events:
        if e["__typename"] == "ExecutionStepFailureEvent":
            out.append(f"step {e['stepKey']}: {e['error']['message']}")
        elif e.get("level") == "ERROR":
            out.append(e["message"])
    return out


def materialized(run: dict[str, Any]) -> set[str]:
    return {"/".join(m["assetKey"]["path"]) for m in run["assetMaterializations"]}


def wait_for_run(dev: DagsterDev, run_id: str, deadline: float) -> dict[str, dict[str, Any]]:
    """Poll until our run ends; any run failing (ours or one the daemon launched) fails the test, as a user would
    see it red in the UI. Returns every run by id."""
    while True:
        runs = {r["runId"]: r for r in dev.gql(RUNS)["runsOrError"]["results"]}
        assert run_id in runs, f"our run {run_id} is not in the run list: {list(runs)}"
        for r in runs.values():
            if r["status"] in ("FAILURE", "CANCELED"):
                tags = {t["key"]: t["value"] for t in r["tags"]}
                pytest.fail(
                    f"run {r['runId']} ({r['jobName']}, {tags}) {r['status']}: {run_errors(dev, r['runId'])}\n"
                    f"{run_overview(dev)}"
                )
        if runs[run_id]["status"] == "SUCCESS":
            return runs
        if time.monotonic() > deadline:
            pytest.fail(f"run {run_id} not finished by the deadline; runs:\n{run_overview(dev)}\n{dev.log_tail(20)}")
        time.sleep(2)


def test_dagster_dev_over_graphql(tmp_path: Path) -> None:
    t_start = time.monotonic()
    budget = t_start + 360  # the whole test, leaving room for the stop under the 400 s timeout
    p = make_project(tmp_path / "proj")
    n_tests = trim_project(p)
    home = tmp_path / "dagster_home"
    write_instance(home)
    seed_run = seed(p, home)
    seed_s = time.monotonic() - t_start

    with dagster_dev(p.settings_file, home) as dev:
        up_s = dev.wait_ready(timeout_s=90)
        assert dev.get("/") == 200
        wait_for_location(dev, timeout_s=60)

        # the code location and its one repository
        repos = dev.gql(REPOS)["repositoriesOrError"]
        assert repos["__typename"] == "RepositoryConnection", repos
        names = [n["name"] for n in repos["nodes"] if n["location"]["name"] == LOCATION]
        assert len(names) == 1, repos
        selector = {"repositoryLocationName": LOCATION, "repositoryName": names[0]}

        # the asset graph, with the checks on verdicts
        nodes = dev.gql(ASSET_NODES)["assetNodes"]
        by_key = {"/".join(n["assetKey"]["path"]): n for n in nodes}
        assert ASSETS <= set(by_key), sorted(by_key)  # other groups (on-demand ones) may sit beside the graph
        checks = by_key["verdicts"]["assetChecksOrError"]
        assert checks["__typename"] == "AssetChecks", checks
        assert {c["name"] for c in checks["checks"]} == CHECKS

        # sensors RUNNING without anyone switching them on; the nightly schedule is there
        inst = dev.gql(INSTIGATORS, r=selector)
        assert inst["sensorsOrError"]["__typename"] == "Sensors", inst["sensorsOrError"]
        sensors = {s["name"]: s["sensorState"]["status"] for s in inst["sensorsOrError"]["results"]}
        assert sensors.get("ragpipe_automation") == "RUNNING", sensors
        assert sensors.get("corpus_sensor") == "RUNNING", sensors
        assert sensors.get("ragpipe_currency") == "RUNNING", sensors
        assert inst["schedulesOrError"]["__typename"] == "Schedules", inst["schedulesOrError"]
        schedules = {s["name"]: s for s in inst["schedulesOrError"]["results"]}
        assert "nightly_evaluation" in schedules, schedules
        assert schedules["nightly_evaluation"]["cronSchedule"]

        # materialize the whole graph, as "Materialize all" in the UI does. The in-process executor spares a process
        # start per step (each holds the duckdb pool's one slot; ~20 s apiece on a loaded 2-core machine).
        params = {
            "selector": {
                **selector,
                "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": [a]} for a in sorted(ASSETS)],
            },
            "mode": "default",
            "runConfigData": {"execution": {"config": {"in_process": {}}}},
            "executionMetadata": {"tags": [{"key": "ragpipe/trigger", "value": "test_dagster_dev"}]},
        }
        launched = dev.gql(LAUNCH, p=params)["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]

        runs = wait_for_run(dev, run_id, deadline=budget)
        run_s = time.monotonic() - t_start
        assert materialized(runs[run_id]) == ASSETS
        assert runs[seed_run]["status"] == "SUCCESS"  # the in-process run shows in the UI's history too
        others = sorted(f"{r['jobName']}:{r['status']}" for k, r in runs.items() if k not in (run_id, seed_run))

        # the verdicts' materialization metadata, as the UI shows it
        asset = dev.gql(VERDICTS)["assetOrError"]
        assert asset["__typename"] == "Asset", asset
        mats = [m for m in asset["assetMaterializations"] if m["runId"] == run_id]
        assert len(mats) == 1, [m["runId"] for m in asset["assetMaterializations"]]
        entries = {e["label"]: e for e in mats[0]["metadataEntries"]}
        assert entries["summary"]["__typename"] == "MarkdownMetadataEntry"
        assert "ragpipe evaluation" in entries["summary"]["mdStr"]
        counts = {}
        for label in ("pass", "fail", "did_not_run", "error"):
            assert entries[label]["__typename"] == "IntMetadataEntry", entries[label]
            counts[label] = entries[label]["intValue"]
        assert sum(counts.values()) == n_tests == entries["tests"]["intValue"], (counts, n_tests)
        # the tests a reader is looking for are inline tables (the UI hides a long Markdown value behind a link)
        for label in ("failing_tests", "did_not_run_tests", "needs_review_tests", "unverified_tests"):
            assert entries[label]["__typename"] == "TableMetadataEntry", entries[label]
        dnr_rows = [json.loads(r) for r in entries["did_not_run_tests"]["table"]["records"]]
        assert len(dnr_rows) == min(counts["did_not_run"], 25) + (counts["did_not_run"] > 25)
        assert all(r["test"] and r["reason"] for r in dnr_rows[:25]), dnr_rows

        # every check on verdicts was evaluated by our run (passed or not, it ran: no execution failure)
        by_check = {}
        for name in sorted(CHECKS):
            execs = [e for e in dev.gql(CHECK_EXECUTIONS, name=name)["assetCheckExecutions"] if e["runId"] == run_id]
            assert len(execs) == 1, (name, execs)
            assert execs[0]["status"] in ("SUCCEEDED", "FAILED"), (name, execs[0])
            assert execs[0]["evaluation"]["checkName"] == name
            assert execs[0]["evaluation"]["success"] == (execs[0]["status"] == "SUCCEEDED")
            by_check[name] = execs[0]["evaluation"]["success"]
        assert by_check["every_test_ran"] == (counts["did_not_run"] == 0)
        assert by_check["no_failures"] == (counts["fail"] + counts["error"] == 0)

    # the whole process tree is gone: dagster dev, webserver, daemon, code servers, run workers
    assert dev.left_after_stop == [], f"processes left after stop: {dev.left_after_stop}"
    assert dev.proc.returncode is not None
    print(
        f"\nseed {seed_s:.0f} s; dagster dev answered after {up_s:.1f} s; our run succeeded {run_s:.0f} s after the "
        f"test started; verdicts {counts}; checks {by_check}; other runs: {others or 'none'}; stopped in "
        f"{dev.stop_s:.1f} s{' (SIGKILL needed)' if dev.needed_sigkill else ' by SIGTERM'}"
    )


@pytest.mark.timeout(900)
def test_a_deleted_anchor_document_under_the_running_daemon(tmp_path: Path) -> None:
    """`make ui` with the sensors on, and a document the golden set quotes is deleted: the corpus sensor launches
    one run, it succeeds, only the tests anchored in that document read did_not_run (with the reason), every other
    test is judged in the same evaluation, and the following ticks launch nothing."""
    from ragpipe.warehouse import connect

    p = make_project(tmp_path / "proj")
    trim_project(p)
    with open(p.settings_file, "a", encoding="utf-8") as fh:
        fh.write("\n[automation]\ncorpus_sensor_interval_s = 5\n")
    gone = "reports/q3-2023.md"
    hit = {
        json.loads(x)["question_id"]
        for x in p.golden.read_text().splitlines()
        if (json.loads(x).get("trap_source") or json.loads(x).get("evidence_source")) == gone
    }
    assert hit
    home = tmp_path / "dagster_home"
    write_instance(home)
    seed(p, home)
    (p.corpus / gone).unlink()
    deadline = time.monotonic() + 780
    with dagster_dev(p.settings_file, home) as dev:
        dev.wait_ready(timeout_s=90)
        wait_for_location(dev, timeout_s=60)

        def corpus_runs() -> list[dict[str, Any]]:
            return [
                r
                for r in dev.gql(RUNS)["runsOrError"]["results"]
                if {t["key"]: t["value"] for t in r["tags"]}.get("ragpipe/trigger") == "corpus"
            ]

        while not corpus_runs():
            assert time.monotonic() < deadline, f"the corpus sensor launched no run\n{dev.log_tail()}"
            time.sleep(2)
        run_id = corpus_runs()[0]["runId"]
        runs = wait_for_run(dev, run_id, deadline=deadline)
        assert "verdicts" in materialized(runs[run_id]), run_overview(dev)
        time.sleep(45)  # more than one tick of each sensor: nothing more is launched
        after = {r["runId"]: r["status"] for r in dev.gql(RUNS)["runsOrError"]["results"]}
        assert set(after) == set(runs), run_overview(dev)
        assert len(corpus_runs()) == 1
        assert corpus_runs()[0]["jobName"] == "corpus_change"  # the run's target in the Runs list
    # `make ui` stays readable: the run logs its progress at INFO, not each Dagster event at DEBUG (only the step
    # workers' own start lines remain, one per step)
    console = dev.log.read_text(encoding="utf-8", errors="replace")
    assert console.count(" - DEBUG - ") <= len(ASSETS) + 1, console.count(" - DEBUG - ")

    with connect(p.settings().duckdb_path, read_only=True) as con:
        rows = con.execute("SELECT question_id, verdict, reason, stale_reason FROM latest_verdicts").fetchall()
        trigger = con.execute("SELECT trigger FROM latest_eval_run").fetchone()[0]
    verdicts = {q: (v, r, s) for q, v, r, s in rows}
    assert set(verdicts) == {json.loads(x)["question_id"] for x in p.golden.read_text().splitlines() if x.strip()}
    for q, (v, reason, stale) in verdicts.items():
        assert stale is None, (q, stale)
        if q in hit:
            assert v == "did_not_run" and f"missing from corpus: {gone} deleted" in reason, (q, v, reason)
        else:
            assert "missing from corpus" not in reason
    assert trigger == "corpus"
