"""Shared fixtures: throwaway ragpipe projects over the bundled example corpus, run through the real graph."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Several workers on a few cores (make test: two on two): each worker's torch, and every process it starts, uses its
# share of the cores, not all of them; OpenMP threads of two workers oversubscribing the cores spin against each other
# (on two cores the smollm2 and corpus-drift test files ran 13 % faster in wall time, 20 % less CPU, with this).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import dagster as dg  # noqa: E402
import pytest  # noqa: E402

import ragpipe  # noqa: E402, F401  (offline environment first)

ROOT = Path(__file__).resolve().parents[1]
# Servers tests share, as fixtures any test may ask for: `s3` (moto) and `pg` (PostgreSQL).
pytest_plugins = ["s3kit", "pgkit"]
EXAMPLES = ROOT / "examples"
# Locally built models (minilm-static, ONNX exports) are shared by every test project of a session.
MODELS_DIR = str(Path(tempfile.gettempdir()) / f"ragpipe-test-models-{os.getuid()}")
os.environ.setdefault("RAGPIPE_MODELS_DIR", MODELS_DIR)  # the entailment reader's int8 build, once per session


def write_settings(path: Path, sections: dict[str, Any]) -> Path:
    """The one way tests write a settings file: nested dicts, as TOML."""
    import tomli_w

    path.write_text(tomli_w.dumps(sections), encoding="utf-8")
    return path


def project_settings(
    models_dir: str = MODELS_DIR,
    strategy: str = "by_title",
    max_characters: int = 800,
    new_after: int = 600,
    embedder: str = "minilm",
    mode: str = "hybrid",
    k: int = 5,
    answerer: str = "extractive",
    base_url: str = "http://127.0.0.1:9/v1",
) -> dict[str, Any]:
    """A test project's settings: the bundled corpus layout, a models cache shared by the session's projects."""
    return {
        "warehouse": {"dir": "warehouse", "models_dir": models_dir},
        "corpus": {"dir": "corpus"},
        "chunker": {
            "strategy": strategy,
            "max_characters": max_characters,
            "new_after_n_chars": new_after,
            "overlap": 0,
            "combine_text_under_n_chars": 200,
        },
        "embedder": {"name": embedder},
        "golden": {"path": "golden.jsonl"},
        "retriever": {"mode": mode, "k": k},
        "answerer": answerer_section(answerer, base_url),
    }


def answerer_section(kind: str, base_url: str, timeout_s: float = 2.0, max_retries: int = 2) -> dict[str, Any]:
    """[answerer] for tests: the kind, and an OpenAI-compatible endpoint (the test server's, or a dead port)."""
    openai = {
        "base_url": base_url,
        "model": "test-model",
        "api_key_env": "RAGPIPE_TEST_KEY",
        "timeout_s": timeout_s,
        "max_retries": max_retries,
        "concurrency": 2,
    }
    return {"kind": kind, "openai": openai}


@dataclass
class Project:
    root: Path
    instance: dg.DagsterInstance

    @property
    def settings_file(self) -> Path:
        return self.root / "ragpipe.toml"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def golden(self) -> Path:
        return self.root / "golden.jsonl"

    def configure(self, **overrides: Any) -> None:
        write_settings(self.settings_file, project_settings(**overrides))

    def settings(self) -> Any:
        from ragpipe.settings import load_settings

        return load_settings(self.settings_file)

    def materialize(self, selection: list[str] | None = None) -> dg.ExecuteInProcessResult:
        from ragpipe.assets.runner import materialize

        result = materialize(str(self.settings_file), selection, self.instance)
        assert result.success, [str(e) for e in result.all_events if e.is_failure]
        return result

    def metadata(self, result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
        for ev in result.get_asset_materialization_events():
            if ev.asset_key.to_user_string() == asset:
                return {k: v.value for k, v in ev.materialization.metadata.items()}
        raise KeyError(asset)

    def sql(self, query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        from ragpipe.warehouse import connect

        with connect(self.settings().duckdb_path, read_only=True) as con:
            return con.execute(query, params or []).fetchall()


def make_project(root: Path, with_golden: bool = True, **overrides: Any) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLES / "corpus", root / "corpus")
    if with_golden:
        shutil.copy(EXAMPLES / "golden.jsonl", root / "golden.jsonl")
    p = Project(root, dg.DagsterInstance.ephemeral())
    p.configure(**overrides)
    return p


def run_in_project(p: Project, *args: str) -> int:
    """`ragpipe --settings <project> ARGS` in-process, with the project as its DAGSTER_HOME (restored after)."""
    from ragpipe.cli import main

    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(p.root))
    try:
        return main(["--settings", str(p.settings_file), *args])
    finally:
        mp.undo()


def copied_project(base: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A copy of a project a module prepared once, as its own DAGSTER_HOME for the test."""
    shutil.copytree(base, root)
    monkeypatch.setenv("DAGSTER_HOME", str(root))
    return Project(root, dg.DagsterInstance.ephemeral())


@pytest.fixture(autouse=True)
def _stop_signals_delivered() -> Any:
    """Each test starts with SIGTERM at its default and SIGTERM and SIGINT unblocked in this process, as in a user's
    shell. Under `make test` started in the background, SIGINT is ignored here, and Dagster, after any run in this
    process, maps SIGTERM onto SIGINT's handler: ignored too. A child inherits an ignored signal, so a server or `make
    ui` that a later test started would not stop on SIGTERM (as one full run showed)."""
    import signal

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    yield


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Any:
    """Bounded teardown: child processes a test started through faultkit.Proc (CLI runs, servers) are killed, with
    their process groups, when the test ends, whether it passed or not."""
    from faultkit import LIVE, kill_survivors

    before = len(LIVE)
    yield
    kill_survivors(before)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "proj")
