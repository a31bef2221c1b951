"""Post-launch monitoring: traces read and checked line by line, each line once, dropped fields never stored, the
rates per day, and a day judged out of its recent interval; through the library and through Dagster."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import ROOT, write_settings
from monitorkit import ingest, rows, traces_settings

from ragpipe.monitor import TraceProblem, citation_hit, days, judge, parse_trace
from ragpipe.settings import Settings, load_settings
from ragpipe.warehouse import connect

GOLDEN = ROOT / "bench" / "data" / "first_contact" / "realdocs3_golden.jsonl"
CTX = "Rust's `char` type is 4 bytes in size and represents a Unicode scalar value."


def trace(**fields: Any) -> dict[str, Any]:
    base = {"time": "2026-11-02T09:30:00+01:00", "question": "How big is char?", "answer": "4 bytes [1].",
            "contexts": [CTX]}  # fmt: skip
    return {**base, **fields}


def lines(*objs: Any) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def settings(root: Path, **monitor: Any) -> Settings:
    return traces_settings(root, GOLDEN, **{"min_traces": 20, **monitor})


def test_a_trace_is_read_under_its_other_names_and_times_become_utc() -> None:
    t = parse_trace(json.dumps({"timestamp": 1764576000, "user_input": "q?", "response": "a.",
                                "retrieved_contexts": [{"text": "c", "source": "doc.pdf"}], "tokens": {"prompt": 5, "completion": 2}}))  # fmt: skip
    assert (t.question, t.answer, t.contexts, t.sources, t.tokens) == ("q?", "a.", ["c"], ["doc.pdf"], 7)
    assert t.at == dt.datetime(2025, 12, 1, 8, 0)
    assert parse_trace(json.dumps(trace())).at == dt.datetime(2026, 11, 2, 8, 30)  # +01:00 -> UTC


@pytest.mark.parametrize(
    ("obj", "named"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a trace is a JSON object"),
        (trace(time="yesterday"), "'time' is not an ISO 8601 time"),
        ({k: v for k, v in trace().items() if k != "answer"}, "no 'answer' field (also read as: response, output)"),
        (trace(contexts="one text"), "'contexts' must be a list"),
        (trace(contexts=[{"source": "a.pdf"}]), "'contexts'[0] must be a text or an object with a 'text' field"),
        (trace(latency_ms="fast"), "'latency_ms' must be a non-negative number"),
        (trace(corrected="yes"), "'corrected' must be true or false"),
    ],
)
def test_a_bad_trace_names_its_field(obj: Any, named: str) -> None:
    with pytest.raises(TraceProblem, match=named.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_trace(obj if isinstance(obj, str) else json.dumps(obj))


def test_a_corrected_answer_that_differs_is_a_correction_and_an_equal_one_is_not() -> None:
    assert parse_trace(json.dumps(trace(corrected_answer="8 bytes"))).corrected is True
    assert parse_trace(json.dumps(trace(corrected_answer="4 bytes [1]."))).corrected is False
    assert parse_trace(json.dumps(trace())).corrected is None  # not reported: not in the rate's denominator


@pytest.mark.parametrize(
    ("answer", "hit"),
    [
        ("It is 4 bytes [1].", True),
        ("It is 8 bytes [1].", False),  # the cited context says 4
        ("It is 4 bytes [2].", False),  # there is no second context
        ('The book says it "represents a Unicode scalar value".', True),
        ('The book says it "represents a Unicode code point".', False),  # a quote the context does not hold
        ('The "char" type is 8 bytes.', False),  # a quoted word is a term: the sentence itself is checked
        ("Rust's char type is 4 bytes in size.", True),  # uncited: its sentences are what it says the context says
        ("Python integers have arbitrary precision.", False),
    ],
)
def test_citation_hit_finds_what_the_answer_quotes_or_cites_in_its_own_contexts(answer: str, hit: bool) -> None:
    assert citation_hit(answer, [CTX]) is hit


def test_bad_lines_are_named_and_skipped_the_rest_is_stored(tmp_path: Path) -> None:
    s = settings(tmp_path)
    (s.monitor.traces_dir / "day1.jsonl").write_text(lines(trace(id="a"), "{oops", trace(id="b", time="soon")))
    got = ingest(s)
    assert got.traces == 1
    assert got.problems == [
        "day1.jsonl:2: not JSON (Expecting property name enclosed in double quotes: column 2)",
        "day1.jsonl:3: 'time' is not an ISO 8601 time or epoch seconds: 'soon'",
    ]
    assert rows(s, "SELECT file, line, problem LIKE 'not JSON%' FROM trace_problems ORDER BY line") == [
        ("day1.jsonl", 2, True),
        ("day1.jsonl", 3, False),
    ]


def test_each_line_once_new_lines_only_a_copied_file_and_a_half_written_line(tmp_path: Path) -> None:
    s = settings(tmp_path)
    day = s.monitor.traces_dir / "day1.jsonl"
    day.write_text(lines(trace(answer="one"), trace(answer="two")) + json.dumps(trace(answer="three"))[:40])
    assert ingest(s).traces == 2  # the last line is still being written: it waits
    with day.open("a") as f:
        f.write(json.dumps(trace(answer="three"))[40:] + "\n")
    again = ingest(s)
    assert (again.traces, again.repeated, again.files_read) == (1, 0, 1)  # only the new line was read
    (s.monitor.traces_dir / "copy.jsonl").write_text(day.read_text())
    copied = ingest(s)
    assert (copied.traces, copied.repeated) == (0, 3)  # a copy of a file adds nothing
    assert ingest(s).files_read == 0  # nothing changed: nothing read
    day.write_text(lines(trace(answer="four")))  # rewritten from the start (a rotated log)
    assert ingest(s).traces == 1
    assert rows(s, "SELECT count(*) FROM production_traces") == [(4,)]


def test_dropped_fields_never_reach_the_warehouse(tmp_path: Path) -> None:
    s = settings(tmp_path, drop_fields=["user", "question", "meta.email", "source"])  # a plain name: anywhere
    secret = trace(user="alice@example.com", meta={"email": "alice@example.com", "plan": "pro"},
                   contexts=[{"text": CTX, "source": "alice-private.pdf"}], authorization="Bearer sk-123")  # fmt: skip
    (s.monitor.traces_dir / "d.jsonl").write_text(lines(secret))
    assert ingest(s).traces == 1
    (row,) = rows(s, "SELECT question, extra, contexts, citation_hit FROM production_traces")
    assert row[0] is None and row[3] is True  # dropped, yet read for the rates first
    assert json.loads(row[1]) == {"meta": {"plan": "pro"}, "authorization": "Bearer sk-123"}
    assert "alice" not in json.dumps(row)
    # the default list drops credentials an app may log by mistake
    s2 = settings(tmp_path / "defaults")
    (s2.monitor.traces_dir / "d.jsonl").write_text(lines(secret))
    ingest(s2)
    assert "sk-123" not in json.dumps(rows(s2, "SELECT * FROM production_traces"), default=str)
    assert "alice@example.com" not in json.dumps(rows(s2, "SELECT * FROM production_traces"), default=str)


def series(rates: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Days of (refusals, traces); other rates absent."""
    start = dt.date(2026, 11, 1)
    out = []
    for i, (k, n) in enumerate(rates):
        out.append({"day": start + dt.timedelta(days=i), "traces": n, "refusals": k, "answered": 0, "hits": 0,
                    "correction_reported": 0, "corrections": 0, "refusal_rate": k / n, "citation_hit_rate": None,
                    "correction_rate": None})  # fmt: skip
    return out


def test_a_doubled_refusal_rate_is_out_and_the_usual_swing_is_not() -> None:
    usual = [(30, 300), (36, 300), (27, 300), (33, 300), (30, 300), (39, 300), (28, 300)]
    (refusal, *_rest) = judge(series([*usual, (62, 300)]), 7, 30)
    assert refusal.status == "out" and "OUT of its recent interval" in refusal.line()
    assert judge(series([*usual, (38, 300)]), 7, 30)[0].status == "ok"  # within the days' own range
    assert judge(series([*usual, (62, 300)][-1:]), 7, 30)[0].status == "not enough traces"  # nothing before it
    assert judge(series([*usual, (5, 10)]), 7, 30)[0].day == dt.date(2026, 11, 7)  # a 10-trace day is not judged
    assert all(j.status == "not enough traces" for j in judge(series([*usual, (62, 300)]), 7, 30)[1:])


def generate(out: Path, *args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "bench" / "monitor_traces.py"), "--out", str(out), *args], check=True,
                   capture_output=True, timeout=120)  # fmt: skip


def test_a_broken_retriever_day_from_a_real_answerer_is_judged_out(tmp_path: Path) -> None:
    """Traces written now by the extractive answerer over realdocs questions; the last day's retriever is broken."""
    s = settings(tmp_path)
    generate(s.monitor.traces_dir, "--llm-per-day", "0", "--extractive-per-day", "50")
    got = ingest(s)
    assert got.traces == 8 * 50 and not got.problems and not got.trap_note
    with connect(s.duckdb_path, read_only=True) as con:
        every = days(con)
    good = judge(every[:-1], 7, 20)
    assert [j.status for j in good if j.rate == "refusal_rate"] == ["ok"]
    broken = {j.rate: j for j in judge(every, 7, 20)}
    assert broken["refusal_rate"].status == "out" and broken["refusal_rate"].value > broken["refusal_rate"].baseline
    assert sum(d["trap_hits"] for d in every) > 0  # questions reach the golden negatives' trap passages


FIXTURE = ROOT / "tests" / "fixtures" / "traces"


def test_recorded_traces_of_two_real_answerers_move_both_rates_on_the_broken_day(tmp_path: Path) -> None:
    """tests/fixtures/traces: the extractive baseline and SmolLM2 answering realdocs questions (bench/monitor_traces.py);
    on the last day the retriever returns another document's passages: the refusal rate rises and, among the answers
    given, the citation hit rate falls (SmolLM2 answers from what it knows), each judged out of its interval."""
    s = settings(tmp_path)
    for f in sorted(FIXTURE.glob("*.jsonl")):
        (s.monitor.traces_dir / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    ingest(s)
    with connect(s.duckdb_path, read_only=True) as con:
        every = days(con)
    assert len(every) == 8
    # 65 traces a day, of which 10 to 27 answered (not refused): judged from 10 counted traces on
    assert all(j.status == "ok" for j in judge(every[:-1], 7, 10) if j.value is not None)
    broken = {j.rate: j for j in judge(every, 7, 10)}
    assert broken["refusal_rate"].status == "out" and broken["refusal_rate"].value > broken["refusal_rate"].baseline
    hit = broken["citation_hit_rate"]
    assert hit.day == every[-1]["day"] and hit.status == "out" and hit.value < hit.baseline
    assert judge(every, 7, 20)[1].day < every[-1]["day"]  # 13 answers on the broken day: below 20, not judged


def _defs_and_resources(s: Settings) -> tuple[dg.Definitions, dict[str, Any]]:
    from ragpipe.assets import build_definitions
    from ragpipe.assets.resources import RagpipeResource

    return build_definitions(str(s.source)), {"ragpipe": RagpipeResource(settings_path=str(s.source))}


def test_the_sensor_runs_the_asset_and_its_check_warns_on_the_broken_day(tmp_path: Path) -> None:
    s = settings(tmp_path)
    defs, resources = _defs_and_resources(s)
    instance = dg.DagsterInstance.ephemeral()
    sensor = defs.get_sensor_def("traces_sensor")

    def tick(cursor: str | None) -> dg.SensorResult:
        return sensor(dg.build_sensor_context(cursor=cursor, instance=instance, resources=resources))

    assert not tick(None).run_requests  # an empty folder: nothing to run
    files = sorted(FIXTURE.glob("*.jsonl"))
    for f in files[:-1]:
        (s.monitor.traces_dir / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    first = tick(None)
    assert len(first.run_requests) == 1 and first.run_requests[0].tags["ragpipe/trigger"] == "traces"
    assert not tick(first.cursor).run_requests  # unchanged: no run

    job = defs.resolve_job_def("monitor_job")
    calm = job.execute_in_process(instance=instance)
    assert calm.success
    (check,) = calm.get_asset_check_evaluations()
    assert check.passed, check.description

    (s.monitor.traces_dir / files[-1].name).write_text(files[-1].read_text(encoding="utf-8") + "{broken\n")
    assert len(tick(first.cursor).run_requests) == 1  # a new file: a run
    result = job.execute_in_process(instance=instance)
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert "refusal_rate" in check.description and "OUT of its recent interval" in check.description
    (mat,) = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in mat.materialization.metadata.items()}
    assert meta["new_traces"] > 0 and meta["new_bad_lines"] == meta["bad_lines"] == 1
    assert f"{files[-1].name}:" in meta["bad_lines_named"] and "not JSON" in meta["bad_lines_named"]
    assert meta["figure"].startswith("![rates](data:image/png;base64,")
    # inline tables on the asset's page: the latest day first, and each rate's reading
    days_shown = [r.data["day"] for r in meta["daily"].records]
    assert "2026-11-08" in days_shown and days_shown == sorted(days_shown, reverse=True)
    readings = {r.data["rate"]: r.data for r in meta["rates_judged"].records}
    assert (
        readings["refusal_rate"]["status"] == "out"
        and "OUT of its recent interval" in readings["refusal_rate"]["reading"]
    )
    assert result.dagster_run.job_name == "monitor_job"  # a named run, not Dagster's ad hoc asset job

    # [monitor].min_traces changed, no new trace: the sensor runs it again, so the rates are judged under it
    grown = tick(first.cursor).cursor
    s = settings(tmp_path, min_traces=5)
    defs, resources = _defs_and_resources(s)
    sensor = defs.get_sensor_def("traces_sensor")
    (again,) = tick(grown).run_requests
    assert again.tags["ragpipe/trigger"] == "settings"
    assert not tick(tick(grown).cursor).run_requests  # once


def test_ragpipe_monitor_prints_the_days_and_gates_on_a_rate_out_of_its_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragpipe.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # its runs in its own instance, not the checkout's (make test)
    s = settings(tmp_path)
    generate(s.monitor.traces_dir, "--llm-per-day", "0", "--days", "8")
    (s.monitor.traces_dir / "late.jsonl").write_text(lines(trace(time="tomorrow")))
    assert main(["--settings", str(s.source), "monitor", "--gate"]) == 1
    out = capsys.readouterr().out
    assert "360 new traces from 9 files, 1 new bad lines (1 recorded)" in out  # 8 days of 45
    assert "late.jsonl:1: 'time' is not an ISO 8601 time" in out
    assert "2026-11-08" in out and "refusal_rate on 2026-11-08" in out and "OUT of its recent interval" in out
    assert main(["--settings", str(s.source), "monitor"]) == 0  # without --gate: reported, not blocking
    assert "0 new traces from 0 files, 0 new bad lines (1 recorded)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("monitor", "named"),
    [
        ({"traces_dir": 3}, r"\[monitor\].traces_dir must be a path"),
        ({"window_days": 0}, r"\[monitor\].window_days, min_traces and sensor_interval_s must be at least 1"),
        ({"drop_fields": "user"}, r"\[monitor\].drop_fields must be a list"),
        ({"traces": "x"}, r"unknown key\(s\) \[monitor\].traces"),
    ],
)
def test_a_bad_monitor_setting_is_named(tmp_path: Path, monitor: dict[str, Any], named: str) -> None:
    from ragpipe.settings import SettingsError

    path = write_settings(tmp_path / "ragpipe.toml", {"corpus": {"dir": "corpus"}, "monitor": monitor})
    with pytest.raises(SettingsError, match=named):
        load_settings(path)


def test_not_enough_traces_gives_the_counts_there_are_and_names_the_knob() -> None:
    (refusal, *_rest) = judge(series([(1, 13)] * 8), 7, 30)  # 13 a day: never 30 on one day
    assert refusal.status == "not enough traces"
    line = refusal.line()
    assert "13 on the latest day" in line and "91 in the days before" in line  # 7 days of 13 before the last
    assert "[monitor].min_traces asks for 30" in line
    (short_before, *_rest) = judge(series([(1, 13)] * 2 + [(5, 40)]), 7, 30)  # a day of 40, only 26 before it
    assert short_before.status == "not enough traces"
    assert "40 on the latest day, 26 in the days before" in short_before.line()


def test_a_long_file_is_read_in_blocks_and_a_run_killed_between_them_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragpipe.monitor.ingest as ingest_module

    s = settings(tmp_path)
    (s.monitor.traces_dir / "day.jsonl").write_text(lines(*(trace(id=f"t{i}", answer=f"{i} bytes") for i in range(7))))
    monkeypatch.setattr(ingest_module, "BLOCK_LINES", 3)
    real_write, calls = ingest_module._write, []

    def dies_on_the_second_block(*args: Any) -> None:
        calls.append(args[2])
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process killed while writing its second block
        real_write(*args)

    monkeypatch.setattr(ingest_module, "_write", dies_on_the_second_block)
    with pytest.raises(KeyboardInterrupt):
        ingest(s)
    assert rows(s, "SELECT count(*) FROM production_traces") == [(3,)]  # the first block, whole
    monkeypatch.setattr(ingest_module, "_write", real_write)
    again = ingest(s)
    assert (again.traces, again.repeated) == (4, 0)  # from where it stopped: nothing twice
    assert rows(s, "SELECT count(*), count(DISTINCT trace_id) FROM production_traces") == [(7, 7)]
    assert rows(s, "SELECT lines_read, lines_seen FROM trace_files") == [(7, 7)]
