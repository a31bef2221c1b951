"""An hour-long soak of the running deployment: the Dagster webserver and daemon (four sensors and the schedule on),
the team's app under test over HTTP, a traces directory, and the bundled example's golden set. While it runs:

* the corpus changes every minute (a real document added, edited, deleted or renamed; seeded),
* the app logs a production trace every second (a new file every ten minutes, now and then a line cut off),
* the app is deployed again every ten minutes with the other embedder (minilm <-> minilm-128) and a new version,
  the new process accepting on the shared socket before the old one stops,
* the daemon is SIGKILLed every fifteen minutes (the process alone, as a crash or the out-of-memory killer ends it)
  and started again five seconds later, as a supervisor would.

At the end, once the daemon has caught up: every run's outcome (a failed run is a finding), every corpus state
evaluated exactly once, every deploy evaluated, every trace counted once and every cut-off line a problem, the
warehouse equal to the corpus on disk (documents, chunks, vectors in DuckDB and LanceDB), every DuckDB table read in
full, resident memory of each long-lived process with its slope after warm-up, and no process left once the services
are stopped.

    .venv/bin/python bench/soak.py                      # an hour, seed 1
    .venv/bin/python bench/soak.py --minutes 20 --seed 3 --change-every 60 --deploy-every 300 --kill-every 450
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

import bench.soakkit as kit  # noqa: E402
from bench._common import RESULTS, machine, write_json  # noqa: E402

BIN = Path(sys.executable).parent
REALDOCS = ROOT.parent / "shared" / "data" / "realdocs" / "docs"
EMBEDDERS = ("minilm", "minilm-128")
BUSY = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}


def build(work: Path, sock: Any) -> tuple[Any, Path]:
    """The bundled example (trimmed as the Dagster tests trim it) with the app as its subject and a traces
    directory; an instance home with the project's dagster.yaml. Returns (project, home)."""
    from conftest import make_project, project_settings, write_settings
    from devkit import trim_project
    from test_dagster_dev import write_instance

    p = make_project(work / "proj")
    trim_project(p)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/ask"
    subject = {
        "kind": "http",
        "url": url,
        "body": '{"question": "{question}", "id": "{question_id}"}',
        "timeout_s": 120,
    }
    write_settings(p.settings_file, {**project_settings(), "subject": subject, "monitor": {"traces_dir": "../traces"}})
    home = work / "home"
    write_instance(home)
    return p, home


class Soak:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args, self.work, self.t0 = args, work, time.monotonic()
        self.logs = work / "logs"
        self.logs.mkdir(parents=True)
        self.mark = f"{os.getpid()}-{args.seed}"
        self.sock = kit.listening_socket()
        self.p, self.home = build(work, self.sock)
        self.env = {**os.environ, "RAGPIPE_SETTINGS": str(self.p.settings_file), "DAGSTER_HOME": str(self.home),
                    kit.MARK: self.mark}  # fmt: skip
        rng = random.Random(args.seed)
        s = self.p.settings()
        self.corpus = kit.Corpus(s.corpus.dir, s.corpus.exclude, rng, kit.real_sources(REALDOCS, 40, rng))
        recorded = [json.loads(x) for f in sorted((ROOT / "tests/fixtures/traces").glob("*.jsonl"))
                    for x in f.read_text().splitlines() if x.strip()]  # fmt: skip
        self.traces = kit.Traces(work / "traces", recorded)
        self.samples: list[tuple[float, int, str, float]] = []  # (seconds, pid, role, MB)
        self.deploys: list[dict[str, Any]] = []
        self.kills: list[float] = []
        self.stop = threading.Event()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def log(self, msg: str) -> None:
        print(f"[{self.elapsed() / 60:5.1f} min] {msg}", flush=True)

    def deploy(self) -> None:
        n = len(self.deploys) + 1
        embedder = EMBEDDERS[(n - 1) % 2]
        new = kit.start_app(n, embedder, self.sock, self.corpus.root, self.env, self.logs)
        old = self.app if self.deploys else None
        self.app = new
        if old is not None:
            old.stop()
        self.deploys.append({"t": round(self.elapsed(), 1), "version": str(n), "embedder": embedder})
        self.log(f"deploy {n}: the app with {embedder}")

    def start_daemon(self) -> None:
        self.daemon = kit.Service("daemon", [str(BIN / "dagster-daemon"), "run"], self.env, self.logs)

    def kill_daemon(self) -> None:
        self.daemon.kill()
        self.kills.append(round(self.elapsed(), 1))
        self.log(f"daemon SIGKILLed (pid {self.daemon.proc.pid}); restarting in 5 s")
        time.sleep(5)
        self.start_daemon()

    def background(self) -> None:
        """A trace every second; every process's memory every 10 s."""
        next_sample = 0.0
        while not self.stop.is_set():
            t = self.elapsed()
            self.traces.write(t)
            if t >= next_sample:
                self.samples += [(t, pid, role, mb) for pid, (role, mb) in kit.processes(self.mark).items()]
                next_sample = t + 10
            self.stop.wait(self.args.trace_every)

    def run(self) -> None:
        import dagster as dg

        from ragpipe.assets.runner import materialize

        a = self.args
        self.deploy()
        self.log("seeding the instance (the graph materialized once in-process, as `make demo` does)")
        with dg.DagsterInstance.from_config(str(self.home)) as instance:  # the whole graph, the app observed too
            assert materialize(str(self.p.settings_file), None, instance, tags={"ragpipe/trigger": "demo"}).success
        from devkit import free_port

        self.web_port = free_port()
        argv = [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(self.web_port)]
        self.web = kit.Service("webserver", argv, self.env, self.logs)
        self.start_daemon()
        self.dagster = kit.Dagster(self.web_port)
        self.dagster.ready(180)
        self.t0 = time.monotonic()
        self.log(f"deployment up; soaking {a.minutes:g} min (seed {a.seed}, work dir {self.work})")
        bg = threading.Thread(target=self.background, daemon=True)
        bg.start()
        nxt = {"change": a.change_every, "deploy": a.deploy_every, "kill": a.kill_every}
        while self.elapsed() < a.minutes * 60:
            t = self.elapsed()
            if t >= nxt["change"]:
                rec = self.corpus.change(t)
                self.log(f"corpus: {rec['op']} {rec['path']} -> {rec['digest']}")
                nxt["change"] += a.change_every
            if t >= nxt["deploy"]:
                self.deploy()
                nxt["deploy"] += a.deploy_every
            if t >= nxt["kill"]:
                self.kill_daemon()
                nxt["kill"] += a.kill_every
            time.sleep(0.5)
        self.stop.set()
        bg.join()
        self.log(f"writers stopped: {len(self.corpus.changes)} corpus changes, {len(self.deploys)} deploys, "
                 f"{self.traces.good} traces and {self.traces.bad} cut-off lines, {len(self.kills)} daemon kills")  # fmt: skip

    def settle(self, timeout_s: float) -> float:
        """Wait until the daemon has caught up: the last corpus state ingested, the last deploy and every trace
        read, and no run queued or running on seven polls in a row (two minutes: two ticks of the slowest sensor).
        Returns the seconds it took."""
        t0, quiet = time.monotonic(), 0
        final = self.corpus.changes[-1]["digest"] if self.corpus.changes else None
        while quiet < 7:
            if time.monotonic() - t0 > timeout_s:
                self.log(f"not settled within {timeout_s:g} s")
                break
            time.sleep(20)
            runs = self.dagster.runs()
            busy = [r for r in runs if r["status"] in BUSY]
            caught_up = final is None or any(r["tags"].get("ragpipe/corpus_manifest") == final for r in runs)
            quiet = quiet + 1 if not busy and caught_up else 0
        return time.monotonic() - t0

    def shutdown(self) -> dict[str, Any]:
        """The services stopped as an operator stops them (SIGTERM); then what is still running with the mark."""
        clean = {"webserver": self.web.stop(), "daemon": self.daemon.stop(), "app": self.app.stop()}
        deadline = time.monotonic() + 90  # a code server notices its daemon is gone within its heartbeat timeout
        while kit.processes(self.mark) and time.monotonic() < deadline:
            time.sleep(2)
        left = kit.processes(self.mark)
        return {"exited_on_sigterm": clean, "left_90s_after": [f"{pid} {role}" for pid, (role, _) in left.items()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--change-every", type=float, default=60, help="seconds between corpus changes (default 60)")
    ap.add_argument("--trace-every", type=float, default=1, help="seconds between traces (default 1)")
    ap.add_argument("--deploy-every", type=float, default=600, help="seconds between deploys (default 600)")
    ap.add_argument("--kill-every", type=float, default=900, help="seconds between daemon kills (default 900)")
    ap.add_argument("--settle-timeout", type=float, default=1800, help="seconds to wait for the daemon to catch up")
    args = ap.parse_args()
    import conftest  # noqa: F401  (the offline environment, as the suite has it)

    from bench.soakcheck import report

    work = Path(tempfile.mkdtemp(prefix="ragpipe-soak-"))
    soak = Soak(args, work)
    try:
        soak.run()
        settle_s = soak.settle(args.settle_timeout)
        soak.log(f"settled in {settle_s:.0f} s; reading the outcome")
        runs = soak.dagster.runs()
        failed = {r["runId"]: soak.dagster.errors(r["runId"]) for r in runs if r["status"] not in ("SUCCESS",)}
        stopped = soak.shutdown()
    except BaseException:
        for name in ("web", "daemon", "app"):
            if hasattr(soak, name):
                getattr(soak, name).stop(10)
        raise
    raw = {"runs": runs, "failed": failed, "stopped": stopped, "settle_s": settle_s, "samples": soak.samples,
           "changes": soak.corpus.changes, "deploys": soak.deploys, "kills": soak.kills, "minutes": args.minutes,
           "traces": [soak.traces.good, soak.traces.bad]}  # fmt: skip
    write_json(work / "raw.json", raw)  # what the report is computed from: `bench/soakcheck.py WORK_DIR` again
    result = report(work, raw)
    result.update(machine=machine(), args=vars(args), work=str(work))
    write_json(RESULTS / "soak.json", result)
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
