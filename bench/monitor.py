"""Monitoring throughput: production traces ingested per second, against DuckDB's own JSON reader in the same run.

The traces are the recorded ones of tests/fixtures/traces (real answers of the extractive baseline and SmolLM2 over
realdocs questions, bench/monitor_traces.py), repeated with a fresh id and time each up to --traces, spread over
--days files. Each scenario runs in its own process (whole-process wall time and peak RSS):

- ragpipe: `ingest_traces` into a fresh warehouse (parse and check each line, refusal, citation hit and trap readings,
  the fields dropped: in one worker process per core; one transaction per block), then the rates judged;
- again: the same call once more (nothing new: the no-op a sensor tick pays);
- appended: one more file of 1 % of the traces;
- baseline: DuckDB `read_json_auto` of the same files into a table (no readings, no checks): the floor of loading.

    .venv/bin/python bench/monitor.py --traces 100000
    .venv/bin/python bench/monitor.py --parts             # CPU per trace of each part of reading a line
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import RESULTS, ROOT, _status_kb, machine, write_json  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "traces"
GOLDEN = ROOT / "bench" / "data" / "first_contact" / "realdocs3_golden.jsonl"


def make_traces(folder: Path, n: int, n_days: int, start: int = 0) -> None:
    recorded = [json.loads(line) for f in sorted(FIXTURE.glob("*.jsonl")) for line in f.read_text().splitlines()]
    per_day = -(-n // n_days)
    first = dt.datetime(2026, 10, 1)
    for d in range(n_days):
        lines = []
        for i in range(d * per_day + start, min((d + 1) * per_day, n) + start):
            t = dict(recorded[i % len(recorded)])
            t["id"] = f"t{i}"
            t["time"] = (first + dt.timedelta(days=d, seconds=(i * 37) % 86400)).isoformat() + "Z"
            lines.append(json.dumps(t))
        (folder / f"{start}-{d:03d}.jsonl").write_text("\n".join(lines) + "\n")


def child(mode: str, project: Path) -> None:
    from ragpipe.settings import load_settings
    from ragpipe.warehouse import connect

    s = load_settings(project / "ragpipe.toml")
    t0 = time.perf_counter()
    if mode == "baseline":
        import duckdb

        con = duckdb.connect(str(project / "baseline.duckdb"))
        pattern = str(s.monitor.traces_dir / "*.jsonl")
        con.execute(
            f"CREATE OR REPLACE TABLE t AS SELECT * FROM read_json_auto('{pattern}', format='newline_delimited')"
        )
        n = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
        con.close()
    else:
        from ragpipe.monitor import days, ingest_traces, judge

        with connect(s.duckdb_path) as con:
            got = ingest_traces(s, con)
            judge(days(con), s.monitor.window_days, s.monitor.min_traces)
        n = got.traces
    wall = time.perf_counter() - t0
    me, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    mine, theirs = me.ru_utime + me.ru_stime, workers.ru_utime + workers.ru_stime
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over from the forking parent (this benchmark, which
    # held the traces it wrote) across exec. The workers' figure is ru_maxrss: they fork from this process, small then.
    peak_kb = _status_kb("VmHWM") or me.ru_maxrss
    print(json.dumps({"mode": mode, "traces": n, "seconds": round(wall, 2), "peak_rss_mb": round(peak_kb / 1024),
                      "worker_peak_rss_mb": round(workers.ru_maxrss / 1024), "cpu_seconds": round(mine + theirs, 2),
                      "caller_cpu_seconds": round(mine, 2)}))  # fmt: skip


def parts() -> None:
    """CPU per trace of each part of reading a line, one process, over the recorded traces repeated to 20,000 lines."""
    from ragpipe.monitor.readings import citation_hit
    from ragpipe.monitor.rows import _arrow, _row, _stored
    from ragpipe.monitor.traces import load_line, trace_from
    from ragpipe.reading import is_refusal
    from ragpipe.settings.monitor import DEFAULT_DROP

    with tempfile.TemporaryDirectory() as tmp:  # the benchmark's own lines: the recorded traces with an id and a time
        make_traces(Path(tmp), 20000, 1)
        raws = next(Path(tmp).iterdir()).read_bytes().splitlines()

    def timed(name: str, fn: Any, items: Any, per: int = 1) -> list:
        gc.disable()  # as in the workers, which read a chunk with the collector off
        t0 = time.process_time()
        out = [fn(x) for x in items]
        spent = time.process_time() - t0
        gc.enable()
        print(f"{name:<42} {spent / (len(items) * per) * 1e6:6.1f} us a trace", flush=True)
        return out

    objs = timed("JSON", lambda b: load_line(b.decode()), raws)
    traces = timed("fields checked (trace_from)", trace_from, objs)
    timed("refusal (is_refusal)", lambda t: is_refusal(t.answer), traces)
    said = [t for t in traces if not is_refusal(t.answer)]
    timed(f"citation check ({len(said)} not refusals)", lambda t: citation_hit(t.answer, t.contexts), said)
    timed("stored form (drop_fields, JSON)", lambda t: _stored(t, DEFAULT_DROP), traces)
    from ragpipe.monitor.readings import TrapIndex
    from ragpipe.monitor.rows import RowReader

    reader = RowReader(TrapIndex({}), (), DEFAULT_DROP)
    rows = timed("the whole row (_row)", lambda t: _row(t, "f", 1, reader), traces)
    _arrow(rows[:10])  # pyarrow's first arrays start its memory pool and converters: 0.2 s once a process

    timed("Arrow table (in blocks of 1,000 rows)", lambda i: _arrow(rows[i : i + 1000]), range(0, 20000, 1000), 1000)
    print(f"refusals: {len(traces) - len(said)} of {len(traces)}")


def run(mode: str, project: Path) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--project", str(project)], check=True,
                         capture_output=True, text=True)  # fmt: skip
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_seconds"] = round(time.perf_counter() - t0, 2)
    print(f"{mode:<9} {res['traces']:>8} traces  {res['seconds']:>7.2f} s  {res['traces'] / max(res['seconds'], 1e-9):>9.0f}/s"
          f"  process {res['process_seconds']:.2f} s  peak {res['peak_rss_mb']} MB"
          f" (largest worker {res['worker_peak_rss_mb']} MB)  cpu {res['cpu_seconds']:.2f} s"
          f" (caller {res['caller_cpu_seconds']:.2f} s)", flush=True)  # fmt: skip
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=20)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--parts", action="store_true", help="CPU per trace of each part of the reading, one process")
    args = ap.parse_args()
    if args.parts:
        return parts()
    if args.child:
        return child(args.child, args.project)
    with tempfile.TemporaryDirectory(prefix="ragpipe-monitor-bench-") as tmp:
        project = Path(tmp)
        (project / "traces").mkdir()
        (project / "ragpipe.toml").write_text(
            f'[warehouse]\ndir = "warehouse"\n[corpus]\ndir = "corpus"\n[golden]\npath = "{GOLDEN}"\n'
            '[monitor]\ntraces_dir = "traces"\n'
        )
        make_traces(project / "traces", args.traces, args.days)
        size = sum(f.stat().st_size for f in (project / "traces").iterdir())
        print(f"{args.traces} traces in {args.days} files, {size / 2**20:.1f} MiB", flush=True)
        results = {"baseline": run("baseline", project), "ragpipe": run("ragpipe", project)}
        results["again"] = run("again", project)
        make_traces(project / "traces", args.traces // 100, 1, start=args.traces)
        results["appended"] = run("appended", project)
        rate = results["ragpipe"]["traces"] / results["ragpipe"]["seconds"]
        ratio = results["ragpipe"]["seconds"] / results["baseline"]["seconds"]
        print(f"ragpipe: {rate:.0f} traces/s; {ratio:.1f}x DuckDB's bare JSON load of the same files")
        write_json(RESULTS / "monitor.json", {"machine": machine(), "traces": args.traces, "mib": round(size / 2**20, 1),
                                              "results": results, "traces_per_s": round(rate), "ratio_to_baseline": round(ratio, 2)})  # fmt: skip


if __name__ == "__main__":
    main()
