"""Kills at random points, many of them: `ragpipe ci` (and `ragpipe ci --multiprocess`) after a chunker change,
SIGKILLed with its process group at points drawn from its own output (tests/killkit.py, seeded: the seed is printed,
and `--seed` replays a run), then run again; each point must end with the documents, chunks, vectors (DuckDB and
LanceDB) and verdicts of the same change never killed, and no temporary file or process left. And `ragpipe monitor`
reading 60,000 traces in two worker processes, killed while it reads (its process group, or the process alone as the
out-of-memory killer kills): the same traces, problems and file states as a run never killed, no worker left running.

    .venv/bin/python bench/kills.py --points 50 --seed 7
    .venv/bin/python bench/kills.py --points 50 --seed 7 --modes monitor
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench._common import RESULTS, machine, write_json  # noqa: E402


def monitor_kills(tmp: Path, seed: int, n: int, traces: int) -> dict:
    """`ragpipe monitor` over `traces` traces read by two worker processes, SIGKILLed at points drawn from its
    reading progress, its process group and the process alone in turn, then run again."""
    from killkit import monitor_base, monitor_kill_and_complete, monitor_points, monitor_reference, monitor_state

    base = monitor_base(tmp / "monitor-base", traces)
    progress, expected = monitor_reference(base, tmp / "monitor-reference")
    rows = []
    for i, point in enumerate(monitor_points(seed, n, progress)):
        t0, dest, group = time.perf_counter(), tmp / "monitor-kill", i % 2 == 0
        landed, orphans = monitor_kill_and_complete(base, dest, point, group)
        differ = [k for k, v in monitor_state(dest).items() if v != expected[k]]
        rows.append({"point": str(point), "group": group, "landed": landed, "differ": differ, "orphans": orphans,
                     "seconds": round(time.perf_counter() - t0, 1)})  # fmt: skip
        ok = "ok" if not differ and not orphans else f"DIFFER {differ} ORPHANS {orphans}"
        print(f"monitor {i + 1:>3}/{n} {point!s:<22} {'group' if group else 'alone':<6} {ok}", flush=True)
        shutil.rmtree(dest)
    bad = [r for r in rows if r["differ"] or r["orphans"]]
    print(f"monitor: {len(rows)} kill points over {len(progress)} progress lines, {len(bad)} ended differently from the "
          f"run never killed or left a worker running", flush=True)  # fmt: skip
    return {"traces": traces, "progress_lines": len(progress), "landed": sum(r["landed"] for r in rows),
            "bad": len(bad), "rows": rows}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=50, help="kill points per mode (default 50)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--modes", default="ci,ci --multiprocess,monitor")
    ap.add_argument("--traces", type=int, default=60000, help="traces the monitor mode reads (default 60,000)")
    ap.add_argument("--out", default="kills.json", help="results file under bench/results (default kills.json)")
    args = ap.parse_args()
    import conftest  # noqa: F401  (the offline environment, as the suite has it)
    from killkit import kill_and_complete, lance, leftovers, points, rechunk, reference_run, state

    print(f"seed {args.seed}", flush=True)
    report: dict = {"machine": machine(), "seed": args.seed, "points": args.points, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="ragpipe-kills-") as tmp:
        from faultkit import evaluated_base

        class Factory:  # what evaluated_base asks of pytest's tmp_path_factory
            @staticmethod
            def mktemp(name: str) -> Path:
                path = Path(tmp) / name
                path.mkdir()
                return path

        modes = args.modes.split(",")
        base = evaluated_base(Factory()) if any(m != "monitor" for m in modes) else Path(tmp)
        for mode in modes:
            if mode == "monitor":
                report["modes"][mode] = monitor_kills(Path(tmp), args.seed, args.points, args.traces)
                continue
            argv = tuple(mode.split())
            ref, lines, expected = reference_run(base, Path(tmp) / f"ref-{len(report['modes'])}", rechunk, argv)
            rows = []
            for i, point in enumerate(points(args.seed, args.points, lines)):
                t0 = time.perf_counter()
                p, landed = kill_and_complete(base, Path(tmp) / "kill", rechunk, point, argv)
                got = state(p)
                differ = [k for k in expected if got[k] != expected[k]]
                if lance(p) != [r[0] for r in expected["vectors"]]:
                    differ.append("lancedb")
                left = leftovers(p.root)
                rows.append({"point": str(point), "landed": landed, "differ": differ, "left": left,
                             "seconds": round(time.perf_counter() - t0, 1)})  # fmt: skip
                ok = "ok" if not differ and not left else f"DIFFER {differ} LEFT {left}"
                print(f"{mode:<20} {i + 1:>3}/{args.points} {point!s:<22} {'landed' if landed else 'late':<7} {ok}",
                      flush=True)  # fmt: skip
                shutil.rmtree(p.root)
            bad = [r for r in rows if r["differ"] or r["left"]]
            report["modes"][mode] = {"lines": lines, "landed": sum(r["landed"] for r in rows), "bad": len(bad),
                                     "rows": rows}  # fmt: skip
            print(f"{mode}: {len(rows)} kill points ({sum(r['landed'] for r in rows)} landed in the run), {len(bad)} "
                  f"ended differently from the run never killed", flush=True)  # fmt: skip
    write_json(RESULTS / args.out, report)
    print(json.dumps({m: {k: v for k, v in r.items() if k != "rows"} for m, r in report["modes"].items()}))


if __name__ == "__main__":
    main()
