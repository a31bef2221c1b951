"""The pieces of bench/soak.py: the deployment's processes, what each holds in memory, the corpus that changes, the
traces that arrive, and the Dagster instance read over GraphQL."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARK = "RAGPIPE_SOAK"  # in every process the soak starts, and so in every child of theirs
# role of a process by its command line, first match
ROLES = (
    ("webserver", "dagster-webserver"),
    ("daemon", "dagster-daemon"),
    ("code server", "api grpc"),
    ("run worker", "execute_run"),
    ("step worker", "execute_step"),
    ("step worker", "multiprocessing"),
    ("app", "uvicorn"),
)


def processes(mark: str) -> dict[int, tuple[str, float]]:
    """{pid: (role, resident MB)} of every live process carrying this soak's mark."""
    needle = f"{MARK}={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if needle not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if "\nState:\tZ" in status:
            continue
        rss = next((int(x.split()[1]) / 1024 for x in status.splitlines() if x.startswith("VmRSS:")), 0.0)
        role = next((r for r, needle_ in ROLES if needle_ in cmd), "other")
        found[int(entry)] = (role, rss)
    return found


class Service:
    """One long-lived process of the deployment in its own session, its output appended to logs/<name>.log."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path, pass_fds: tuple[int, ...] = ()):
        self.name, self.log = name, logs / f"{name}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds)  # fmt: skip
        self.offset = self.log.stat().st_size

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.log.read_text(errors="replace")[self.offset :]:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no {text!r} within {timeout_s:g} s: {self.tail()}")
            time.sleep(0.5)

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def kill(self) -> None:
        """SIGKILL to the process alone, as the out-of-memory killer or a crash ends it: its children are left to
        notice by themselves."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout_s: float = 60) -> bool:
        """SIGTERM to the process; True when it exited by itself within timeout_s (else its group is SIGKILLed)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return False


def listening_socket() -> socket.socket:
    """A socket the app's successive processes share (as systemd's socket activation does): a new deploy starts
    accepting before the old one stops, so no request meets a closed port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    s.set_inheritable(True)
    return s


def start_app(
    version: int, embedder: str, sock: socket.socket, corpus: Path, env: dict[str, str], logs: Path
) -> Service:
    app_env = {**env, "APP_EMBEDDER": embedder, "APP_VERSION": str(version), "APP_CORPUS": str(corpus)}
    argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "examples" / "app"), "rag_app:http_app",
            "--fd", str(sock.fileno()), "--no-access-log"]  # fmt: skip
    app = Service(f"app-{version}", argv, app_env, logs, pass_fds=(sock.fileno(),))
    app.wait_for("Application startup complete", timeout_s=180)
    return app


@dataclass
class Corpus:
    """The corpus changing as a team's does: documents added, edited, deleted and renamed under soak/, drawn from
    real documents with a seeded generator; each change recorded with the manifest digest it leaves."""

    root: Path
    exclude: tuple[str, ...]
    rng: random.Random
    sources: list[Path]
    changes: list[dict[str, Any]] = field(default_factory=list)
    n: int = 0

    def digest(self) -> str:
        from ragpipe.ingest import scan_corpus

        return scan_corpus(self.root, self.exclude).manifest_digest()[:16]

    def change(self, elapsed_s: float) -> dict[str, Any]:
        mine = sorted((self.root / "soak").glob("*"))
        op = "add" if len(mine) < 3 else self.rng.choice(["add", "edit", "delete", "rename"])
        self.n += 1
        if op == "add":
            src = self.rng.choice(self.sources)
            path = self.root / "soak" / f"doc-{self.n:04d}{src.suffix}"
            path.parent.mkdir(exist_ok=True)
            path.write_text(src.read_text(encoding="utf-8", errors="replace"), encoding="utf-8")
        else:
            path = self.rng.choice(mine)
            if op == "edit":
                paragraph = self.rng.choice(self.rng.choice(self.sources).read_text(errors="replace").split("\n\n"))
                with path.open("a", encoding="utf-8") as f:
                    f.write(f"\n\nRevision {self.n}. {paragraph.strip()}\n")
            elif op == "delete":
                path.unlink()
            else:
                path.rename(path.with_name(f"renamed-{self.n:04d}{path.suffix}"))
        rec = {"t": round(elapsed_s, 1), "op": op, "path": path.name, "digest": self.digest()}
        self.changes.append(rec)
        return rec


def real_sources(docs: Path, n: int, rng: random.Random) -> list[Path]:
    """Plain-text and Markdown documents of 1-30 KB: a team's notes and pages."""
    fits = [p for p in sorted(docs.rglob("*")) if p.suffix in (".md", ".txt") and 1_000 < p.stat().st_size < 30_000]
    return rng.sample(fits, min(n, len(fits)))


class Traces:
    """Production traces as an app logs them: one line a second, a new file every ten minutes, now and then a line
    that is not a trace. Counts what it wrote."""

    def __init__(self, folder: Path, recorded: list[dict[str, Any]]):
        self.folder, self.recorded = folder, recorded
        self.good = self.bad = 0
        folder.mkdir(parents=True, exist_ok=True)

    def write(self, elapsed_s: float) -> None:
        import datetime as dt

        path = self.folder / f"app-{int(elapsed_s // 600):03d}.jsonl"
        if self.good and self.good % 600 == 0 and self.bad < self.good // 600:
            line, self.bad = '{"question": "cut off mid-line\n', self.bad + 1
        else:
            t = dict(self.recorded[self.good % len(self.recorded)])
            t["id"] = f"soak-{self.good}"
            t["time"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            line, self.good = json.dumps(t) + "\n", self.good + 1
        with path.open("a", encoding="utf-8") as f:
            f.write(line)


class Dagster:
    """The instance as the UI sees it, over the webserver's GraphQL."""

    RUNS = (
        """{ runsOrError { ... on Runs { results { runId status jobName startTime endTime tags { key value } } } } }"""
    )
    ERRORS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { eventConnection(limit: 2000) { events {
      __typename ... on MessageEvent { message level } ... on ExecutionStepFailureEvent { stepKey error { message } }
      } } } } }"""

    def __init__(self, port: int):
        self.url = f"http://127.0.0.1:{port}"

    def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        req = urllib.request.Request(self.url + "/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            doc = json.loads(resp.read())
        if doc.get("errors"):
            raise RuntimeError(doc["errors"])
        return doc["data"]

    def runs(self) -> list[dict[str, Any]]:
        out = self.gql(self.RUNS)["runsOrError"]["results"]
        for r in out:
            r["tags"] = {t["key"]: t["value"] for t in r["tags"]}
        return out

    def errors(self, run_id: str) -> list[str]:
        events = self.gql(self.ERRORS, id=run_id)["runOrError"]["eventConnection"]["events"]
        return [f"step {e['stepKey']}: {e['error']['message'][:300]}" if e["__typename"] == "ExecutionStepFailureEvent"
                else e["message"][:300] for e in events
                if e["__typename"] == "ExecutionStepFailureEvent" or e.get("level") == "ERROR"]  # fmt: skip

    def ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(self.url + "/server_info", timeout=10).status == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the webserver did not answer within {timeout_s:g} s")
            time.sleep(1)


def slope_mb_per_h(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB an hour."""
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mm = sum(m for _, m in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 3600 * sum((t - mt) * (m - mm) for t, m in samples) / var if var else 0.0
