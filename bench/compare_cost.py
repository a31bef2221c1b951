"""What `ragpipe compare` costs beside a full run: the bundled example in a fresh project, `ragpipe demo` (parse,
chunk, embed, evaluate: the whole graph) then `ragpipe compare --set embedder.name=minilm-static` (an embedder swap),
each as a whole process, in the same run. Prints wall seconds, peak RSS and the ratio.

    .venv/bin/python bench/compare_cost.py
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RAGPIPE = str(Path(sys.executable).parent / "ragpipe")


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MiB) of one child process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return secs, max(peak, before) / 1024, out.stdout


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ragpipe-compare-bench-") as tmp:
        proj = Path(tmp) / "proj"
        shutil.copytree(ROOT / "examples", proj / "examples")
        # the models both runs use, built once beforehand (a fresh machine builds minilm-static on first use; that
        # is the embedder's cost, not the comparison's)
        models = ROOT / "warehouse" / "models"
        from ragpipe.embed import prepare
        from ragpipe.settings import EmbedderSettings

        prepare(EmbedderSettings(name="minilm-static"), models)
        text = (ROOT / "ragpipe.toml").read_text(encoding="utf-8")
        text = text.replace("[warehouse]\n", f'[warehouse]\nmodels_dir = "{models}"\n', 1)
        (proj / "ragpipe.toml").write_text(text, encoding="utf-8")
        shutil.copy(ROOT / "dagster.yaml", proj / "dagster.yaml")
        env = {**os.environ, "DAGSTER_HOME": str(proj), "RAGPIPE_SETTINGS": str(proj / "ragpipe.toml")}
        demo_s, demo_rss, _ = timed([RAGPIPE, "demo"], proj, env)
        cmp_s, cmp_rss, out = timed([RAGPIPE, "compare", "--set", "embedder.name=minilm-static"], proj, env)
        reused = next((line.strip() for line in out.splitlines() if line.strip().startswith("reused:")), "?")
        print(f"make demo's graph (ragpipe demo, fresh project): {demo_s:6.1f} s")
        print(f"ragpipe compare --set embedder.name=minilm-static: {cmp_s:6.1f} s   ({reused})")
        print(
            f"ratio compare / demo: {cmp_s / demo_s:.2f}   (peak RSS of the larger child so far: {max(demo_rss, cmp_rss):.0f} MiB)"
        )


if __name__ == "__main__":
    main()
