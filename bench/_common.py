"""Helpers shared by the benchmarks: throwaway projects, stage timing, memory, machine description.

Nothing here changes the library: finer timings come from wrapping library functions in this process only.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import platform
import resource
import shutil
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401  (offline environment first)

DEFAULT_DOCS = (ROOT / ".." / "shared" / "data" / "realdocs" / "docs").resolve()
RESULTS = ROOT / "bench" / "results"

SETTINGS_TOML = """
[warehouse]
dir = {warehouse}

[corpus]
dir = {corpus}
exclude = {exclude}

[parser]
pdf_strategy = "fast"
{parser_limits}

[chunker]
strategy = "by_title"
max_characters = {max_characters}
new_after_n_chars = {new_after}
overlap = 0
combine_text_under_n_chars = 200

[embedder]
name = "minilm"
batch_size = {batch_size}
device = "cpu"
"""


def toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def write_settings(
    path: Path,
    corpus: Path,
    warehouse: Path,
    exclude: list[str],
    max_characters: int = 800,
    new_after: int = 600,
    batch_size: int = 64,
    parse_timeout_s: float | None = None,
    parse_max_memory_mb: int | None = None,
) -> Any:
    from ragpipe.settings import load_settings

    text = SETTINGS_TOML.format(
        warehouse=toml_str(str(warehouse)),
        corpus=toml_str(str(corpus)),
        exclude="[" + ", ".join(toml_str(e) for e in exclude) + "]",
        max_characters=max_characters,
        new_after=min(new_after, max_characters),
        batch_size=batch_size,
        parser_limits="\n".join(
            ([f"timeout_s = {float(parse_timeout_s)}"] if parse_timeout_s is not None else [])
            + ([f"max_memory_mb = {int(parse_max_memory_mb)}"] if parse_max_memory_mb is not None else [])
        ),
    )
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


def select_files(docs: Path, limit: int | None, larger_than_mb: float | None) -> tuple[list[str], list[dict[str, Any]]]:
    """(included relative paths, excluded [{path, bytes, why}]) in the corpus scan's own (sorted) order."""
    from ragpipe.ingest import scan_corpus

    scan = scan_corpus(docs, ("**/.*",))
    included, excluded = [], []
    for f in scan.files:
        if larger_than_mb is not None and f.bytes > larger_than_mb * 1e6:
            excluded.append({"path": f.path, "bytes": f.bytes, "why": f"larger than {larger_than_mb:g} MB"})
        else:
            included.append(f.path)
    if limit is not None:
        for p in included[limit:]:
            excluded.append({"path": p, "bytes": (docs / p).stat().st_size, "why": f"--limit {limit}"})
        included = included[:limit]
    return included, excluded


def exclude_patterns(excluded: list[dict[str, Any]]) -> list[str]:
    """Corpus exclude patterns: hidden files (as the default) plus each excluded file, glob-escaped.

    The project default also excludes any README.md; realdocs' own README.md lies outside docs/, so it is not needed.
    """
    return ["**/.*"] + [glob.escape(e["path"]) for e in excluded]


def copy_tree_writable(src: Path, dst: Path) -> None:
    """Copy a (read-only) tree and make the copy writable, so it can be edited and removed."""
    shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copyfile)
    for dirpath, _dirnames, filenames in os.walk(dst):
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)


def rmtree_writable(path: Path) -> None:
    def onerror(func: Callable[..., Any], p: str, exc: Any) -> None:
        os.chmod(os.path.dirname(p), stat.S_IRWXU)
        func(p)

    shutil.rmtree(path, onerror=onerror)


# ---------------------------------------------------------------------------------------------- memory


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 4096 / 2**20


def rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_MB
    except (OSError, ValueError, IndexError):
        kb = _status_kb("VmRSS")
        return kb / 1024 if kb is not None else None


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


class StagePeak:
    """Peak RSS of the process while a block runs, sampled every 10 ms from /proc/self/statm by a thread.

    Sampling (rather than resetting the kernel's high-water mark through /proc/self/clear_refs) leaves
    getrusage's ru_maxrss a true whole-process peak; a spike shorter than the interval can be missed.
    """

    interval_s = 0.01

    def __init__(self) -> None:
        self.before_mb: float | None = None
        self.peak_mb: float | None = None
        self.method = f"RSS sampled every {self.interval_s * 1000:g} ms from /proc/self/statm"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            r = rss_mb()
            if r is not None and (self.peak_mb is None or r > self.peak_mb):
                self.peak_mb = r

    def __enter__(self) -> "StagePeak":
        self.before_mb = rss_mb()
        self.peak_mb = self.before_mb
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        r = rss_mb()
        if r is not None and (self.peak_mb is None or r > self.peak_mb):
            self.peak_mb = r

    @property
    def growth_mb(self) -> float | None:
        if self.before_mb is None or self.peak_mb is None:
            return None
        return self.peak_mb - self.before_mb


# ---------------------------------------------------------------------------------------------- timing


class Timers:
    """Cumulative wall time of wrapped callables (wrapping happens in this process only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t
                self.calls[name] = self.calls.get(name, 0) + 1

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, original))

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def snapshot(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}

    def unwrap(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


# ---------------------------------------------------------------------------------------------- machine


def machine() -> dict[str, Any]:
    mem_kb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib import metadata

    versions = {}
    for dist in (
        "torch",
        "sentence-transformers",
        "transformers",
        "unstructured",
        "lancedb",
        "duckdb",
        "pdfminer.six",
        "onnxruntime",
    ):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    try:
        import torch

        torch_threads = torch.get_num_threads()
    except Exception:  # noqa: BLE001
        torch_threads = None
    return {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model,
        "ram_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch_threads": torch_threads,
        "load_average_at_start": list(os.getloadavg()),
        "versions": versions,
    }


def library_state() -> dict[str, Any]:
    """Which library code was measured: the commit, whether ragpipe/ differs from it, and a hash of its sources.

    Other people edit the library while benchmarks run; the hash tells two runs' code apart.
    """
    import hashlib
    import subprocess

    h = hashlib.sha256()
    for p in sorted((ROOT / "ragpipe").rglob("*.py")) + sorted((ROOT / "ragpipe").rglob("*.sql")):
        h.update(p.relative_to(ROOT).as_posix().encode())
        h.update(p.read_bytes())

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    return {
        "commit": git("rev-parse", "HEAD"),
        "ragpipe_modified_vs_commit": git("status", "--porcelain", "--", "ragpipe", "assets"),
        "ragpipe_sources_sha256": h.hexdigest()[:16],
    }


def child_peak_rss_mb() -> dict[int, float]:
    """VmHWM (peak RSS) of each live child process, e.g. the parser workers."""
    out: dict[int, float] = {}
    try:
        import psutil

        children = psutil.Process().children(recursive=True)
    except Exception:  # noqa: BLE001
        return out
    for c in children:
        try:
            for line in Path(f"/proc/{c.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out[c.pid] = int(line.split()[1]) / 1024
        except OSError:
            continue
    return out


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f} s" if x < 100 else f"{x:.0f} s"
