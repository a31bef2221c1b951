"""Helpers for the fault, hostile-input and security tests: real processes, real signals, a real HTTP server.

Nothing here fakes a fault: processes are killed with SIGKILL, servers are killed mid-run, files are really hostile.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).resolve().parent / "openai_server.py"
LIVE: list["Proc"] = []  # every Proc started, for kill_survivors

# Runs ragpipe's library stage functions (what the Dagster assets call) in a process of its own, printing every log
# line. argv: settings file, comma-separated stages, run id, and a regex: when a log line matches it, the process
# prints PAUSED and waits there (holding the warehouse connection, as the stage would), to be killed at that point.
DRIVER = r"""
import re, sys, time
import ragpipe
from ragpipe import embed, evaluate, ingest
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect

settings_file, stages, run_id, pause = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
pattern = re.compile(pause) if pause else None

def log(msg):
    print(msg, flush=True)
    if pattern is not None and pattern.search(msg):
        print("PAUSED", flush=True)
        time.sleep(3600)

STAGES = {
    "corpus": ingest.sync_corpus, "documents": ingest.parse_documents, "chunks": ingest.chunk_documents,
    "embeddings": embed.embed_chunks, "golden_set": evaluate.load_golden_stage, "stamps": evaluate.stamp_stage,
    "retrievals": evaluate.retrieve_stage, "answers": evaluate.answer_stage, "verdicts": evaluate.verdict_stage,
}
settings = load_settings(settings_file)
for stage in stages:
    with connect(settings.duckdb_path, wait_s=120) as con:
        STAGES[stage](settings, con, run_id, log=log)
    print(f"STAGE-DONE {stage}", flush=True)
print("ALL-DONE", flush=True)
"""


def kill_survivors(since: int = 0) -> list[str]:
    """SIGKILL the process group of every Proc started after the first `since` that is still running (a test that
    failed before finishing its processes); returns their command lines. conftest calls it after each test with the
    count from before the test, so processes of module- or session-scoped fixtures live on."""
    killed = []
    while len(LIVE) > since:
        proc = LIVE.pop()
        if proc.p.poll() is None:
            killed.append(" ".join(proc.argv)[:200])
            proc.sigkill()
    return killed


class Proc:
    """A child process whose merged stdout/stderr is read line by line on a thread (never blocks the test)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT):
        self.argv = argv
        self.p = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        LIVE.append(self)
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> str:
        """The first line (from now on) matching `pattern`; AssertionError on timeout or exit without it."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s; output:\n{self.output[-4000:]}")
            try:
                line = self._q.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"process exited ({self.p.wait()}) before {pattern!r}; output:\n{self.output[-4000:]}"
                )
            if rx.search(line):
                return line

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it has not exited within `grace` seconds (a loaded machine, or a SIGTERM that an
        earlier test left ignored in the process that started it): no test depends on how a server exits."""
        self.p.terminate()
        try:
            return self.p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return self.sigkill()

    def sigkill(self) -> int:
        """SIGKILL the whole process group (the process and any workers it started); returns the exit status."""
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.p.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.sigkill()
            raise AssertionError(f"process did not finish within {timeout} s; output:\n{self.output[-4000:]}") from None

    def finish(self, timeout: float) -> tuple[int, str]:
        code = self.wait(timeout)
        self._reader.join(10)  # the rest of the output
        return code, self.output


def python_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAGPIPE_SETTINGS", None)
    env.update(extra)
    return env


def driver(
    settings_file: Path, stages: list[str], run_id: str, pause: str = "", env: dict[str, str] | None = None
) -> Proc:
    return Proc(
        [sys.executable, "-c", DRIVER, str(settings_file), ",".join(stages), run_id, pause], env=env or python_env()
    )


def run_driver(
    settings_file: Path, stages: list[str], run_id: str, timeout: float = 300, env: dict[str, str] | None = None
) -> str:
    proc = driver(settings_file, stages, run_id, env=env)
    code, out = proc.finish(timeout)
    assert code == 0 and "ALL-DONE" in out, out[-4000:]
    return out


def ragpipe_cli(root: Path, *args: str, env: dict[str, str] | None = None) -> Proc:
    """`python -m ragpipe.cli --settings <root>/ragpipe.toml ...` run in the project, which is its DAGSTER_HOME.

    The working directory matters: dagster.yaml's relative storage paths resolve against it.
    """
    env = dict(env or python_env())
    env["DAGSTER_HOME"] = str(root)
    return Proc(
        [sys.executable, "-m", "ragpipe.cli", "--settings", str(root / "ragpipe.toml"), *args], env=env, cwd=root
    )


_BASES: dict[str, Path] = {}


def evaluated_base(tmp_path_factory: Any) -> Path:
    """conftest.make_project over the bundled example, with the repository's dagster.yaml (persistent instance in
    the project, the "duckdb" pool of one), brought up to date by one real `ragpipe ci`. Built once per session;
    scenarios work on copies (shutil.copytree), so each starts from a fully evaluated warehouse and instance."""
    if "evaluated" not in _BASES:
        from conftest import make_project

        root = tmp_path_factory.mktemp("evaluated-base") / "proj"
        make_project(root)
        (root / "dagster.yaml").write_bytes((ROOT / "dagster.yaml").read_bytes())
        code, out = ragpipe_cli(root, "ci").finish(900)
        assert code in (0, 1) and "GATE:" in out, out[-4000:]
        _BASES["evaluated"] = root
    return _BASES["evaluated"]


def copy_project(base: Path, dest: Path) -> Any:
    import shutil

    import dagster as dg
    from conftest import Project

    shutil.copytree(base, dest, symlinks=True)
    return Project(dest, dg.DagsterInstance.ephemeral())


class OpenAIServer:
    """tests/openai_server.py in its own process on a free port."""

    def __init__(self, slow_s: float = 5.0):
        self.proc = Proc([sys.executable, str(SERVER), "--port", "0", "--slow-s", str(slow_s)])
        line = self.proc.wait_for(r"^READY \d+", timeout=60)
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_requests", timeout=5) as resp:
            return json.loads(resp.read())

    def kill(self) -> None:
        self.proc.sigkill()

    def __enter__(self) -> "OpenAIServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()


def files_under(root: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                yield p
