"""The production instance on PostgreSQL (deploy/postgres/dagster.yaml) against a real PostgreSQL server.

The server: the one named by $RAGPIPE_TEST_POSTGRES_URL (a fresh database is created on it and dropped afterwards,
so its role needs CREATEDB), or else a throwaway cluster started here from the PostgreSQL server binaries (initdb,
pg_ctl on PATH or under /usr/lib/postgresql/*/bin). Without binaries the tests skip, unless
RAGPIPE_REQUIRE_POSTGRES=1 (CI sets it), then they fail.

The variant file is copied verbatim into a temporary DAGSTER_HOME and configured through its environment variables
only. `ragpipe ci` records its runs and materializations in PostgreSQL, and a real `dagster-daemon` ticks the
sensors and keeps the schedule's state there; no SQLite storage appears anywhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import dagster as dg
import pytest
from conftest import Project, make_project
from devkit import ASSETS, group_members, processes_using, sigint_not_ignored, trim_project
from pgkit import VARIANT, PgServer

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.postgres, pytest.mark.timeout(300)]

SENSORS = {"corpus_sensor", "ragpipe_automation", "ragpipe_currency", "traces_sensor"}
SCHEDULE = "nightly_evaluation"


SQLITE_MAGIC = b"SQLite format 3\x00"


def sqlite_files(*roots: Path) -> list[Path]:
    """Every SQLite database file under `roots`, by its header (whatever its name)."""
    found = []
    for root in roots:
        for f in root.rglob("*"):
            if f.is_file() and not f.is_symlink():
                with open(f, "rb") as fh:
                    if fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                        found.append(f)
    return found


@dataclass
class Deployment:
    pg: PgServer
    home: Path
    project: Project
    env: dict[str, str]

    def ragpipe(self, *args: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
        """The `ragpipe` CLI in its own process, from the project root, as a deployment runs it."""
        return subprocess.run(
            [sys.executable, "-m", "ragpipe.cli", "--settings", str(self.project.settings_file), *args],
            cwd=self.project.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def no_sqlite(self) -> None:
        assert not (self.home / "storage").exists()  # where Dagster's default SQLite storage would go
        assert sqlite_files(self.home, self.project.root) == []


@pytest.fixture(scope="module")
def deployment(pg: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """DAGSTER_HOME holding the variant verbatim, its variables set, a throwaway project; cwd is the project root
    (the variant's relative artifact and compute-log paths resolve there, as in a deployment)."""
    base = tmp_path_factory.mktemp("pg-deploy")
    home = base / "dagster_home"
    home.mkdir()
    shutil.copyfile(VARIANT, home / "dagster.yaml")
    p = make_project(base / "proj")
    trim_project(p)
    with open(p.settings_file, "a", encoding="utf-8") as fh:
        fh.write("\n[automation]\ncorpus_sensor_interval_s = 5\n")  # a change reaches the daemon sooner
    env_vars = {**pg.env(), "DAGSTER_HOME": str(home), "RAGPIPE_SETTINGS": str(p.settings_file)}
    mp = pytest.MonkeyPatch()
    try:
        for k, v in env_vars.items():
            mp.setenv(k, v)
        mp.chdir(p.root)
        yield Deployment(pg, home, p, {**os.environ})
    finally:
        mp.undo()


def instance_tables(pg: PgServer) -> set[str]:
    return {r[0] for r in pg.query("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}


def test_ci_records_runs_and_materializations_in_postgres(deployment: Deployment) -> None:
    d = deployment
    t0 = time.monotonic()
    ci = d.ragpipe("ci")
    assert ci.returncode in (0, 1), ci.stdout + ci.stderr  # 1: the gate blocked, a verdict; not a crash
    assert "materialized" in ci.stdout, ci.stdout + ci.stderr
    first_s = time.monotonic() - t0

    from dagster import DagsterRunStatus

    with dg.DagsterInstance.get() as instance:
        storages = (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
        assert all(type(s).__module__.startswith("dagster_postgres.") for s in storages), storages
        runs = instance.get_runs()
        assert len(runs) == 2, runs  # `ragpipe ci` on a fresh project: the corpus scan, then everything below
        assert {r.status for r in runs} == {DagsterRunStatus.SUCCESS}
        assert {r.tags.get("ragpipe/trigger") for r in runs} == {"ci"}
        run_ids = {r.run_id for r in runs}
        for asset in ASSETS:
            record = instance.get_latest_materialization_event(dg.AssetKey(asset))
            assert record is not None and record.run_id in run_ids, asset

    # The same rows, read straight from PostgreSQL.
    assert {"runs", "event_logs", "asset_keys", "jobs", "job_ticks", "instigators"} <= instance_tables(d.pg)
    assert {(r[0], r[1]) for r in d.pg.query("SELECT run_id, status FROM runs")} == {(i, "SUCCESS") for i in run_ids}
    materialized = d.pg.query(
        "SELECT DISTINCT asset_key FROM event_logs WHERE dagster_event_type = %s", ("ASSET_MATERIALIZATION",)
    )
    assert {dg.AssetKey.from_db_string(r[0]).to_user_string() for r in materialized} == ASSETS

    # A second process reads that history back from PostgreSQL: nothing is stale, only the corpus scan runs.
    again = d.ragpipe("ci")
    assert again.returncode == ci.returncode, again.stdout + again.stderr
    assert "everything is up to date" in again.stdout, again.stdout + again.stderr
    assert d.pg.query("SELECT count(*) FROM runs")[0][0] == 3
    d.no_sqlite()
    print(f"first ci {first_s:.1f} s, total {time.monotonic() - t0:.1f} s")


@contextlib.contextmanager
def dagster_daemon(d: Deployment) -> Iterator[Path]:
    """`dagster-daemon run` on the project's code location, its own process group, stopped with the whole tree."""
    log = d.home / "daemon.log"
    # the installed code location: the test project, like a deployment, holds no definitions.py
    cmd = [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-m", "ragpipe.assets.location"]
    cmd += ["-d", str(d.project.root)]
    with open(log, "wb") as out, sigint_not_ignored():
        proc = subprocess.Popen(
            cmd,
            cwd=d.project.root,
            env=d.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            proc.poll()
            if not group_members(proc.pid):
                break
            time.sleep(0.5)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


def instigators(instance: dg.DagsterInstance) -> dict[str, tuple[Any, list[Any]]]:
    """name -> (stored state, its finished ticks, oldest first)."""
    out = {}
    for state in instance.all_instigator_state():
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id)
        finished = sorted((t for t in ticks if t.status.value != "STARTED"), key=lambda t: t.timestamp)
        assert not [t for t in finished if t.status.value == "FAILURE"], [t.error for t in finished]
        out[state.name] = (state, finished)
    return out


def wait_for(what: str, check: Any, timeout_s: float, log: Path) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
            pytest.fail(f"{what}: not within {timeout_s:g} s; dagster-daemon log:\n{tail}")
        time.sleep(1)


def test_daemon_ticks_sensors_and_keeps_schedule_state_in_postgres(deployment: Deployment) -> None:
    """Follows the `ragpipe ci` test on the same deployment: the graph is up to date when the daemon starts."""
    d = deployment
    t0 = time.monotonic()
    with dagster_daemon(d) as log, dg.DagsterInstance.get() as instance:
        # The sensors (declared RUNNING) tick and the schedule's state is stored, all in PostgreSQL.
        def ticked() -> dict[str, tuple[Any, list[Any]]] | None:
            seen = instigators(instance)
            return seen if all(seen.get(s, (None, []))[1] for s in SENSORS) and SCHEDULE in seen else None

        seen = wait_for("a tick of each sensor and the schedule's state", ticked, 120, log)
        ticked_s = time.monotonic() - t0
        schedule = seen[SCHEDULE][0]
        assert schedule.status.value == "DECLARED_IN_CODE"  # running, as declared in code
        assert schedule.instigator_data.cron_schedule == "0 3 * * *"
        first = seen["corpus_sensor"][1][0]
        assert first.skip_reason == "corpus state recorded", first  # ingested by `ragpipe ci`: no run for it

        # A corpus change: the sensor requests a run, the run queue launches it, and the run's own process writes
        # its events to PostgreSQL. (The whole run takes minutes of step processes on a small machine: the first
        # materialization from the launched process is the proof needed here.)
        (d.project.corpus / "policies" / "badge-policy.md").write_text(
            "# Badge policy\n\nBadges must be worn visibly at all times on company premises.\n", encoding="utf-8"
        )

        def launched() -> Any:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"ragpipe/trigger": "corpus"}))
            if not runs:
                return None
            assert len(runs) == 1, runs  # one change, one run
            event = instance.get_latest_materialization_event(dg.AssetKey("corpus"))
            return runs[0] if event is not None and event.run_id == runs[0].run_id else None

        run = wait_for("the corpus sensor's run materializing `corpus`", launched, 150, log)
        launched_s = time.monotonic() - t0
        assert run.status.value in ("STARTED", "SUCCESS"), run.status
        assert run.tags.get("dagster/sensor_name") == "corpus_sensor"

    # Straight from PostgreSQL: the stored instigator states, their ticks, the daemons' heartbeats, the run.
    states = {s.selector_id: (n, s) for n, (s, _) in seen.items()}
    rows = d.pg.query("SELECT selector_id, instigator_type, status FROM instigators")
    assert {states[r[0]][0]: (r[1], r[2]) for r in rows if r[0] in states} == {
        "corpus_sensor": ("SENSOR", "DECLARED_IN_CODE"),
        "ragpipe_automation": ("SENSOR", "DECLARED_IN_CODE"),
        "ragpipe_currency": ("SENSOR", "DECLARED_IN_CODE"),
        "traces_sensor": ("SENSOR", "DECLARED_IN_CODE"),
        SCHEDULE: ("SCHEDULE", "DECLARED_IN_CODE"),
    }
    ticks = d.pg.query("SELECT selector_id, count(*) FROM job_ticks WHERE type = 'SENSOR' GROUP BY selector_id")
    assert {states[r[0]][0] for r in ticks if r[1] >= 1} == SENSORS
    daemons = {r[0] for r in d.pg.query("SELECT daemon_type FROM daemon_heartbeats")}
    assert {"SENSOR", "SCHEDULER", "ASSET", "QUEUED_RUN_COORDINATOR"} <= daemons
    assert d.pg.query("SELECT count(*) FROM runs WHERE run_id = %s", (run.run_id,))[0][0] == 1
    left = processes_using(d.home)
    assert left == [], f"processes left running after the daemon stopped: {left}"
    d.no_sqlite()
    print(
        f"ticks after {ticked_s:.1f} s, the sensor's run wrote `corpus` after {launched_s:.1f} s, "
        f"stopped after {time.monotonic() - t0:.1f} s"
    )
