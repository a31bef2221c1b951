"""Automation evaluated tick by tick in-process, and the corpus sensor on a temporary corpus (real Dagster)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from conftest import Project, make_project

from ragpipe.assets import build_definitions
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.runner import asset_states, materialize

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]

DOWNSTREAM_OF_CHUNKS = {"chunks", "embeddings", "stamps", "retrievals", "answers", "verdicts"}


def tick(p: Project, cursor: dg.AssetDaemonCursor | None) -> tuple[set[str], dg.AssetDaemonCursor]:
    defs = build_definitions(str(p.settings_file))
    result = dg.evaluate_automation_conditions(defs=defs, instance=p.instance, cursor=cursor)
    requested = {k.to_user_string() for k, v in result._requested_partitions_by_asset_key.items() if v}
    assert result.total_requested == len(requested)
    return requested, result.cursor


def test_automation_tick_by_tick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = make_project(tmp_path / "auto")
    requested, cursor = tick(p, None)
    assert "corpus" in requested  # a fresh project: the missing root is requested

    p.materialize()
    requested, cursor = tick(p, cursor)
    assert requested == set()  # nothing changed, nothing requested

    # a chunker change: the whole downstream set in one tick, nothing on the next
    p.configure(max_characters=500)
    requested, cursor = tick(p, cursor)
    assert requested == DOWNSTREAM_OF_CHUNKS
    requested, cursor = tick(p, cursor)
    assert requested == set()
    # what `ragpipe status` shows: the whole chain, not only the first asset
    states = {s.key: s for s in asset_states(build_definitions(str(p.settings_file)).resolve_asset_graph(), p.instance)}
    assert states["chunks"].status == "stale" and any(
        "[chunker].max_characters 800 -> 500" in c for c in states["chunks"].causes
    )
    assert {k for k, s in states.items() if s.status != "fresh"} == DOWNSTREAM_OF_CHUNKS

    # the requested run fails: it is not requested again tick after tick (a failure that recurs would launch a run
    # a minute); `ragpipe status` says why; the next change to what it depends on requests it again
    import ragpipe.ingest

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(ragpipe.ingest, "chunk_documents", broken)
    failed = materialize(str(p.settings_file), sorted(DOWNSTREAM_OF_CHUNKS), p.instance)
    assert not failed.success
    monkeypatch.undo()
    for _ in range(3):
        requested, cursor = tick(p, cursor)
        assert requested == set()
    states = {s.key: s for s in asset_states(build_definitions(str(p.settings_file)).resolve_asset_graph(), p.instance)}
    assert states["chunks"].failure and "RuntimeError: disk full" in states["chunks"].failure
    p.configure(max_characters=450)
    requested, cursor = tick(p, cursor)
    assert requested == DOWNSTREAM_OF_CHUNKS

    p.materialize(sorted(DOWNSTREAM_OF_CHUNKS))
    requested, cursor = tick(p, cursor)
    assert requested == set()
    states = {s.key: s for s in asset_states(build_definitions(str(p.settings_file)).resolve_asset_graph(), p.instance)}
    assert states["chunks"].failure is None

    # an embedder change: embeddings and below, never chunks
    p.configure(max_characters=450, embedder="minilm-static")
    requested, cursor = tick(p, cursor)
    assert requested == {"embeddings", "retrievals", "answers", "verdicts"}
    requested, cursor = tick(p, cursor)
    assert requested == set()


def _sensor_result(p: Project, cursor: str | None, defs: dg.Definitions | None = None) -> dg.SensorResult:
    sensor = build_definitions(str(p.settings_file)).get_sensor_def("corpus_sensor")
    context = dg.build_sensor_context(
        cursor=cursor,
        instance=p.instance,
        resources={"ragpipe": RagpipeResource(settings_path=str(p.settings_file))},
        definitions=defs,
    )
    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_corpus_sensor_one_event_per_real_change(tmp_path: Path) -> None:
    p = make_project(tmp_path / "sensor", with_golden=False)
    first = _sensor_result(p, None)
    assert not first.run_requests and first.cursor  # never ingested: the automation sensor's job, not an event
    cursor = first.cursor

    def step(change: object) -> int:
        nonlocal cursor
        if callable(change):
            change()
        result = _sensor_result(p, cursor)
        cursor = result.cursor or cursor
        return len(result.run_requests or [])

    assert step(None) == 0  # unchanged corpus: a skip
    f = p.corpus / "policies" / "new-policy.md"
    assert step(lambda: f.write_text("# New policy\n\nBadges must be worn at all times.\n")) == 1  # add
    assert step(None) == 0
    assert step(lambda: f.write_text("# New policy\n\nBadges must be visible at all times.\n")) == 1  # edit
    assert step(lambda: f.touch()) == 0  # mtime only: no event (content hashes, not mtimes)
    assert step(lambda: f.rename(f.with_name("badge-policy.md"))) == 1  # rename
    assert step(lambda: f.with_name("badge-policy.md").unlink()) == 1  # delete
    assert step(None) == 0
    # a restart with the stored cursor: no duplicate event
    assert len(_sensor_result(p, cursor).run_requests or []) == 0


def test_a_corpus_change_is_one_evaluation_the_sensors_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus sensor's run request names its job's assets, and the run records them as its selection: what
    Dagster's automation reads to tell that a run which updated an asset's inputs handled the asset too (a request
    naming none left it to guess, and under the daemon the hour-long soak saw a second evaluation after corpus runs).
    A tick half-way through the run and one after it request nothing."""
    from devkit import trim_project

    import ragpipe.embed
    from ragpipe.assets.sensors import CORPUS_SELECTION

    p = make_project(tmp_path / "p")
    trim_project(p)
    p.materialize()
    _, cursor = tick(p, None)
    first = _sensor_result(p, None)
    (p.corpus / "policies" / "badges.md").write_text("# Badges\n\nBadges must be worn at all times.\n")
    defs = build_definitions(str(p.settings_file))
    (request,) = _sensor_result(p, first.cursor, defs).run_requests
    assert set(request.asset_selection) == set(CORPUS_SELECTION.resolve(defs.resolve_asset_graph()))
    half_way = []
    embed_chunks = ragpipe.embed.embed_chunks

    def a_tick_first(*args: object, **kwargs: object) -> object:
        nonlocal cursor
        requested, cursor = tick(p, cursor)  # the daemon's tick, while this run is between chunks and embeddings
        half_way.append(requested)
        return embed_chunks(*args, **kwargs)

    monkeypatch.setattr(ragpipe.embed, "embed_chunks", a_tick_first)
    job = defs.resolve_job_def("corpus_change")
    run = job.execute_in_process(instance=p.instance, asset_selection=request.asset_selection, tags=request.tags)
    monkeypatch.undo()
    assert run.success and p.instance.get_run_by_id(run.run_id).asset_selection == set(request.asset_selection)
    assert half_way == [set()]
    requested, cursor = tick(p, cursor)
    assert requested == set()


def test_a_change_while_a_corpus_run_waits_to_start_is_left_to_that_run(tmp_path: Path) -> None:
    """Under load, corpus changes come faster than runs start: a change seen while a corpus run is queued requests
    nothing (the run reads the corpus when it starts) and the queued run is retagged with the state it will read; once
    no run waits, the next change requests one again."""
    p = make_project(tmp_path / "queue", with_golden=False)
    cursor = _sensor_result(p, None).cursor
    queued = dg.DagsterRun(
        job_name="corpus_change", status=dg.DagsterRunStatus.NOT_STARTED, tags={"ragpipe/trigger": "corpus"}
    )
    p.instance.add_run(queued)
    (p.corpus / "policies" / "a.md").write_text("# A\n\nOne new policy.\n")
    result = _sensor_result(p, cursor)
    assert not result.run_requests and "waits to start" in result.skip_reason.skip_message
    assert result.cursor != cursor  # the state is taken: the waiting run reads it
    tagged = p.instance.get_run_by_id(queued.run_id).tags["ragpipe/corpus_manifest"]
    assert tagged == result.cursor[:16]
    cursor = result.cursor
    p.instance.delete_run(queued.run_id)  # it started and ended, or someone removed it: no run waits now
    (p.corpus / "policies" / "b.md").write_text("# B\n\nAnother policy.\n")
    (request,) = _sensor_result(p, cursor).run_requests
    assert request.tags["ragpipe/trigger"] == "corpus"


def test_fresh_sensor_reruns_only_when_the_corpus_changed_since_ingestion(tmp_path: Path) -> None:
    p = make_project(tmp_path / "fresh", with_golden=False)
    p.materialize(["corpus"])
    result = _sensor_result(p, None)
    assert not result.run_requests and result.cursor
    (p.corpus / "added-while-the-sensor-was-off.md").write_text("# Note\n\nA file added while no sensor ran.\n")
    assert len(_sensor_result(p, None).run_requests or []) == 1


def test_definitions_declare_sensors_running_and_nightly_schedule(tmp_path: Path) -> None:
    p = make_project(tmp_path / "defs", with_golden=False)
    defs = build_definitions(str(p.settings_file))
    assert defs.get_sensor_def("ragpipe_automation").default_status == dg.DefaultSensorStatus.RUNNING
    assert defs.get_sensor_def("corpus_sensor").default_status == dg.DefaultSensorStatus.RUNNING
    assert defs.get_sensor_def("ragpipe_currency").default_status == dg.DefaultSensorStatus.RUNNING
    schedule = defs.get_schedule_def("nightly_evaluation")
    assert schedule.cron_schedule == "0 3 * * *"
    assert schedule.tags["ragpipe/trigger"] == "scheduled"


def test_a_golden_set_that_always_fails_runs_once_and_waits_for_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken golden set file fails golden_set at once (no step retry: it fails the same way every time), the
    automation requests nothing more tick after tick, and fixing the file requests the evaluation again."""
    import ragpipe.evaluate

    p = make_project(tmp_path / "auto")
    p.materialize()
    _, cursor = tick(p, None)
    good = p.golden.read_text()
    p.golden.write_text(good + '{"question_id": "broken"\n')
    calls = []
    real = ragpipe.evaluate.load_golden_stage

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ragpipe.evaluate, "load_golden_stage", counted)
    requested, cursor = tick(p, cursor)
    assert "golden_set" in requested  # the file changed: golden_set's code version with it
    result = materialize(str(p.settings_file), sorted(requested), p.instance)
    assert not result.success and len(calls) == 1  # not retried
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert failure.step_failure_data.error.cls_name == "Failure"
    assert "GoldenSetError" in failure.step_failure_data.error.message  # the error first, not a stack trace
    from ragpipe.cli.common import failure_code, failure_lines
    from ragpipe.core import EXIT_INPUT

    assert failure_code(failure_lines(result)) == EXIT_INPUT  # `ragpipe ci` exits 2: fix the file
    for _ in range(3):
        requested, cursor = tick(p, cursor)
        assert requested == set()
    rows = p.sql("SELECT asset, error FROM eval_failures")
    assert rows and rows[-1][0] == "golden_set" and "malformed JSON" in rows[-1][1]
    assert (
        p.sql(
            "SELECT count(*) FROM latest_verdicts WHERE stale_reason LIKE 'the latest evaluation failed at golden_set%'"
        )[0][0]
        > 0
    )
    assert "golden_set" in p.sql("SELECT banner FROM evaluation_status")[0][0]
    p.golden.write_text(good)
    requested, cursor = tick(p, cursor)
    assert "golden_set" in requested


def test_a_transient_failure_is_retried_in_the_run_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragpipe.assets.automation
    import ragpipe.evaluate

    monkeypatch.setattr(ragpipe.assets.automation, "RETRY_POLICY", dg.RetryPolicy(max_retries=2, delay=0.1))
    import ragpipe.assets.stages

    monkeypatch.setattr(ragpipe.assets.stages, "RETRY_POLICY", ragpipe.assets.automation.RETRY_POLICY)
    p = make_project(tmp_path / "auto")
    p.materialize()
    calls = []

    def flaky(*args: object, **kwargs: object) -> object:
        calls.append(1)
        raise RuntimeError("warehouse busy")

    monkeypatch.setattr(ragpipe.evaluate, "verdict_stage", flaky)
    result = materialize(str(p.settings_file), ["verdicts"], p.instance)
    assert not result.success and len(calls) == 3  # the first attempt and two retries, then the run fails
    assert [e.event_type_value for e in result.all_events].count("STEP_UP_FOR_RETRY") == 2


def test_an_embedder_switch_builds_its_model_before_taking_the_writer_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a new embedder's model takes minutes on first use: readers (`ragpipe sql`) must not wait for it."""
    import duckdb

    from ragpipe import embed

    p = make_project(tmp_path / "auto")
    p.materialize()
    p.configure(embedder="minilm-static")
    seen: list[int] = []
    real = embed.prepare

    def spy(cfg: object, models_dir: Path) -> bool:
        # Opening the file read-only fails while any connection holds it read-write.
        with duckdb.connect(str(p.settings().duckdb_path), read_only=True) as con:
            seen.append(con.execute("SELECT count(*) FROM chunks").fetchone()[0])
        return real(cfg, models_dir)  # type: ignore[arg-type]

    monkeypatch.setattr(embed, "prepare", spy)
    p.materialize(["embeddings"])
    assert seen and seen[0] > 0


def _currency_tick(p: Project) -> tuple[set[str], dict[str, tuple[bool, str]]]:
    """One tick of the real currency sensor; returns the assets it reported and every inputs_current result."""
    from ragpipe.assets.inputs_current import CHECK_NAME, inputs_current_sensor

    defs = build_definitions(str(p.settings_file))
    ctx = dg.build_sensor_context(instance=p.instance, repository_def=defs.get_repository_def())
    skip = inputs_current_sensor()(ctx)
    reported = set() if skip.skip_message == "no change" else set(skip.skip_message.split(" for ", 1)[1].split(", "))
    keys = [k for k in defs.resolve_asset_graph().asset_check_keys if k.name == CHECK_NAME]
    latest = p.instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    results = {}
    for k, rec in latest.items():
        data = rec.event.dagster_event.event_specific_data
        results[k.asset_key.to_user_string()] = (data.passed, data.description)
    return reported, results


def test_inputs_current_names_each_kind_of_change_in_the_users_words(tmp_path: Path) -> None:
    """Settings, golden file and corpus changes each named as what changed, not as 'has a new code version'; current
    again exactly when the inputs are back to what was materialized."""
    p = make_project(tmp_path / "why")
    assert p.materialize().dagster_run.job_name == "ragpipe_job"  # a named run in the UI's Runs list
    automation = build_definitions(str(p.settings_file)).get_sensor_def("ragpipe_automation")
    assert automation.run_tags == {"ragpipe/trigger": "settings"}

    # the corpus sensor saw the files change and its run started: nothing below the corpus is current until it syncs
    from dagster import DagsterRun

    tags = {"ragpipe/trigger": "corpus", "ragpipe/corpus_manifest": "0" * 16}
    queued = DagsterRun(job_name="corpus_change", run_id="feedc0de" * 4, status=dg.DagsterRunStatus.STARTED, tags=tags)
    p.instance.add_run(queued)
    results = _currency_tick(p)[1]
    assert all(
        not ok and "corpus: files changed on disk; run feedc0de is ingesting" in why for ok, why in results.values()
    )
    p.instance.delete_run(queued.run_id)
    assert all(passed for passed, _ in _currency_tick(p)[1].values())

    p.configure(embedder="minilm-static", k=8)
    why = _currency_tick(p)[1]["verdicts"][1]
    assert "embeddings: settings [embedder].name minilm -> minilm-static" in why, why
    assert "retrievals: settings [retriever].k 5 -> 8" in why, why
    assert "code version" not in why and "chunker" not in why, why
    p.configure()  # back to what was materialized: current again, with no run
    assert all(passed for passed, _ in _currency_tick(p)[1].values())

    lines = p.golden.read_text().splitlines()
    import json

    first = json.loads(lines[0])
    first["question"] += " Answer briefly."
    p.golden.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    results = _currency_tick(p)[1]
    assert f"golden_set: golden file: {first['question_id']} edited" in results["verdicts"][1], results["verdicts"]
    assert results["chunks"][0]  # the golden set is not upstream of the chunks

    (p.corpus / "policies" / "pto-policy.html").unlink()
    assert p.materialize(["corpus", "golden_set"]).success  # what a corpus run does first (and the edit taken)
    results = _currency_tick(p)[1]
    why = results["chunks"][1]
    assert "documents: corpus: policies/pto-policy.html deleted (corpus re-materialized at " in why, results
    assert "golden file" not in results["verdicts"][1]


def test_staleness_down_the_chain_as_a_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A settings change shows on every asset below it at once (inputs_current fails), not only on the first."""
    p = make_project(tmp_path / "cur")
    p.materialize()  # the run executes inputs_current too: everything current
    # ... planned at the run's start, so the UI would tie it to the materialization before: reported once after it
    reported, results = _currency_tick(p)
    assert len(reported) == len(results) == 8 and all(passed for passed, _ in results.values())
    assert _currency_tick(p)[0] == set()

    p.configure(max_characters=500)
    reported, results = _currency_tick(p)
    assert reported == DOWNSTREAM_OF_CHUNKS
    assert results["documents"][0] and results["golden_set"][0]
    passed, why = results["verdicts"]
    # the cause in the user's words, from the settings the definition and the materialization each record
    assert not passed and why.startswith("NOT CURRENT") and "chunks: settings [chunker].max_characters " in why
    assert why.split("[chunker].max_characters ", 1)[1].split(" | ")[0].endswith(" -> 500"), why
    assert _currency_tick(p)[0] == set()  # reported once, not every tick

    # the run fails at chunks: still not current, and the reason says so on every asset below it
    import ragpipe.ingest

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(ragpipe.ingest, "chunk_documents", broken)
    assert not materialize(str(p.settings_file), sorted(DOWNSTREAM_OF_CHUNKS), p.instance).success
    monkeypatch.undo()
    reported, results = _currency_tick(p)
    assert (
        not results["verdicts"][0]
        and "the latest attempt at chunks failed: RuntimeError: disk full" in results["verdicts"][1]
    )
    assert results["golden_set"][0]

    p.materialize(sorted(DOWNSTREAM_OF_CHUNKS))
    reported, results = _currency_tick(p)
    assert all(passed for passed, _ in results.values()), results


def test_an_automation_run_names_what_changed_once_for_all_its_steps(tmp_path: Path) -> None:
    """The automation tags every run `settings`; the first evaluation step reads what changed and the run keeps its
    word: a retriever change reads `settings` (not `upstream` from the steps after it), a golden line edit `golden`,
    a chunker change run through in the same run `settings` (its own upstream steps are no outside cause)."""
    import json

    p = make_project(tmp_path / "auto")
    p.materialize()

    def automation_run(selection: set[str]) -> tuple[str, str]:
        result = materialize(str(p.settings_file), sorted(selection), p.instance, {"ragpipe/trigger": "settings"})
        assert result.success
        run = p.sql("SELECT trigger FROM eval_runs ORDER BY started_at DESC LIMIT 1")[0][0]
        return run, p.instance.get_run_by_id(result.run_id).tags["ragpipe/trigger"]

    p.configure(k=4)
    assert automation_run({"retrievals", "answers", "verdicts"}) == ("settings", "settings")
    lines = p.golden.read_text().splitlines()
    test = json.loads(lines[0])
    test["question"] = test["question"].rstrip("?") + " exactly?"
    p.golden.write_text("\n".join([json.dumps(test), *lines[1:]]) + "\n")
    assert automation_run({"golden_set", "stamps", "retrievals", "answers", "verdicts"}) == ("golden", "golden")
    p.configure(k=4, max_characters=500)
    assert automation_run(DOWNSTREAM_OF_CHUNKS) == ("settings", "settings")
