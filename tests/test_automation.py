"""Automation evaluated tick by tick in-process, and the corpus sensor on a temporary corpus (real Dagster)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets import build_definitions
from assets.resources import RagpipeResource
from assets.runner import asset_states, materialize

from conftest import Project, make_project

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
    states = {s.key: s for s in asset_states(build_definitions(str(p.settings_file)), p.instance)}
    assert states["chunks"].status == "stale" and any("code version" in c for c in states["chunks"].causes)
    assert {k for k, s in states.items() if s.status != "fresh"} == DOWNSTREAM_OF_CHUNKS

    # the requested run fails: the change is not swallowed, the next tick requests it again
    import ragpipe.ingest

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(ragpipe.ingest, "chunk_documents", broken)
    failed = materialize(str(p.settings_file), sorted(DOWNSTREAM_OF_CHUNKS), p.instance)
    assert not failed.success
    monkeypatch.undo()
    requested, cursor = tick(p, cursor)
    assert requested == DOWNSTREAM_OF_CHUNKS

    p.materialize(sorted(DOWNSTREAM_OF_CHUNKS))
    requested, cursor = tick(p, cursor)
    assert requested == set()

    # an embedder change: embeddings and below, never chunks
    p.configure(max_characters=500, embedder="minilm-static")
    requested, cursor = tick(p, cursor)
    assert requested == {"embeddings", "retrievals", "answers", "verdicts"}
    requested, cursor = tick(p, cursor)
    assert requested == set()


def _sensor_result(p: Project, cursor: str | None) -> dg.SensorResult:
    defs = build_definitions(str(p.settings_file))
    sensor = defs.get_sensor_def("corpus_sensor")
    context = dg.build_sensor_context(cursor=cursor, instance=p.instance,
                                      resources={"ragpipe": RagpipeResource(settings_path=str(p.settings_file))})
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
    schedule = defs.get_schedule_def("nightly_evaluation")
    assert schedule.cron_schedule == "0 3 * * *"
    assert schedule.tags["ragpipe/trigger"] == "scheduled"
