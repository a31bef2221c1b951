"""The NIAH report: cells, effective length, positional bias and decline, heatmaps, and the text summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ragpipe.niah.settings import niah_settings
from ragpipe.niah.trials import Log, noop
from ragpipe.settings import Settings
from ragpipe.warehouse import transaction

# --------------------------------------------------------------------------------------------------- report
METRICS = {  # metric -> (column in niah_cells, higher is better)
    "exact": ("exact", True),
    "field_score": ("field_score", True),
    "refusal_rate": ("refusal_rate", False),
    "hallucination_rate": ("hallucination_rate", False),
    "retrieval_score": ("retrieval_score", True),
    "reasoning_score": ("reasoning_score", True),
}
EFFECTIVE_METRICS = ("exact", "field_score", "retrieval_score")


def latest_run_id(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT run_id FROM latest_niah_run").fetchone()
    return row[0] if row else None


def cells(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    cur = con.execute(
        "SELECT * FROM niah_cells WHERE run_id = ? ORDER BY subject, length_target, depth_target", [run_id]
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def effective_length(by_length: dict[int, float | None], overflow: dict[int, float], threshold: float) -> int | None:
    """The longest length such that it and every shorter length score at least `threshold` (RULER's definition,
    made monotone); a length that overflowed the window ends the run. None when the shortest already fails."""
    best = None
    for n in sorted(by_length):
        v = by_length[n]
        if overflow.get(n, 0.0) >= 0.5 or v is None or v < threshold:
            break
        best = n
    return best


def bias_flags(grid: dict[tuple[int, float], float | None], threshold: float) -> dict[str, Any]:
    """Positional bias (middle depths below both edges by more than `threshold`, per length) told apart from a smooth
    decline with length (the per-length means fall by more than `threshold` from the shortest to the longest)."""
    lengths = sorted({n for n, _ in grid})
    depths = sorted({d for _, d in grid})
    per_length = {}
    biased = []
    for n in lengths:
        vals = {d: grid.get((n, d)) for d in depths}
        known = {d: v for d, v in vals.items() if v is not None}
        if known:
            per_length[n] = sum(known.values()) / len(known)
        if len(depths) < 3:
            continue
        edges = [known.get(depths[0]), known.get(depths[-1])]
        middle = [known[d] for d in depths[1:-1] if d in known]
        if None in edges or not middle:
            continue
        gap = sum(edges) / 2 - sum(middle) / len(middle)  # type: ignore[arg-type]
        if gap > threshold:
            biased.append(
                {
                    "length": n,
                    "edges": round(sum(edges) / 2, 3),
                    "middle": round(sum(middle) / len(middle), 3),  # type: ignore[arg-type]
                    "gap": round(gap, 3),
                }
            )
    ls = sorted(per_length)
    drop = per_length[ls[0]] - per_length[ls[-1]] if len(ls) >= 2 else 0.0
    steps = [per_length[a] - per_length[b] for a, b in zip(ls, ls[1:])]
    smooth = drop > threshold and all(s >= -threshold / 2 for s in steps)
    pattern = (
        "positional_bias+length_decline"
        if biased and drop > threshold
        else "positional_bias"
        if biased
        else ("length_decline" if smooth else "irregular_decline")
        if drop > threshold
        else "flat"
    )
    return {
        "pattern": pattern,
        "positional_bias": biased,
        "length_decline": round(drop, 3),
        "smooth_decline": smooth,
        "per_length": {str(k): round(v, 3) for k, v in per_length.items()},
    }


def heatmap(
    grid: dict[tuple[int, float], float | None],
    overflow: dict[tuple[int, float], float],
    title: str,
    path: Path,
    higher_is_better: bool = True,
) -> Path:
    """Depth (rows) x length (columns), like the original NIAH figure; overflowed cells are grey and say so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    lengths = sorted({n for n, _ in grid} | {n for n, _ in overflow})
    depths = sorted({d for _, d in grid} | {d for _, d in overflow})
    data = np.full((len(depths), len(lengths)), np.nan)
    for (n, d), v in grid.items():
        if v is not None:
            data[depths.index(d), lengths.index(n)] = v
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 + 1.1 * len(lengths)), 1.4 + 0.55 * len(depths)), dpi=110)
    cmap = matplotlib.colormaps["RdYlGn" if higher_is_better else "RdYlGn_r"].with_extremes(bad="#bbbbbb")
    im = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    for yi, d in enumerate(depths):
        for xi, n in enumerate(lengths):
            v = data[yi, xi]
            if overflow.get((n, d), 0.0) >= 0.5:
                label = "overflow"
            else:
                label = "-" if np.isnan(v) else f"{v:.2f}"
            ax.text(xi, yi, label, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(lengths)), [f"{n // 1000}K" if n >= 1000 else str(n) for n in lengths])
    ax.set_yticks(range(len(depths)), [f"{d:g}%" for d in depths])
    ax.set_xlabel("haystack length (tokens)")
    ax.set_ylabel("needle depth")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def report(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    out_dir: Path | None = None,
    log: Log = noop,
) -> dict[str, Any]:
    """Effective length per subject and metric, positional-bias flags, and one heatmap PNG per subject and metric."""
    ns = niah_settings(settings)
    run_id = run_id or latest_run_id(con)
    if run_id is None:
        raise RuntimeError("no finished NIAH run in the warehouse; run `ragpipe niah run` first")
    rows = cells(con, run_id)
    out_dir = out_dir or settings.warehouse_dir / "niah" / run_id
    result: dict[str, Any] = {"run_id": run_id, "subjects": {}, "heatmaps": []}
    for subject in sorted({r["subject"] for r in rows}):
        srows = [r for r in rows if r["subject"] == subject]
        over = {(r["length_target"], r["depth_target"]): r["overflow_rate"] or 0.0 for r in srows}
        over_len: dict[int, float] = {}
        for n in {r["length_target"] for r in srows}:
            vals = [r["overflow_rate"] or 0.0 for r in srows if r["length_target"] == n]
            over_len[n] = sum(vals) / len(vals)
        info: dict[str, Any] = {
            "effective_length": {},
            "bias": {},
            "overflow_lengths": sorted(n for n, v in over_len.items() if v >= 0.5),
        }
        for metric, (col, higher) in METRICS.items():
            grid = {(r["length_target"], r["depth_target"]): (None if r[col] is None else float(r[col])) for r in srows}
            if all(v is None for v in grid.values()):
                continue
            png = heatmap(grid, over, f"{subject}: {metric}\nrun {run_id}", out_dir / f"{subject}_{metric}.png", higher)
            result["heatmaps"].append(str(png))
            if metric in EFFECTIVE_METRICS:
                by_len: dict[int, float | None] = {}
                for n in sorted({k[0] for k in grid}):
                    vals = [v for (m, _), v in grid.items() if m == n and v is not None]
                    by_len[n] = sum(vals) / len(vals) if vals else None
                info["effective_length"][metric] = effective_length(by_len, over_len, ns.effective_threshold)
                info["bias"][metric] = bias_flags(grid, ns.bias_threshold)
        result["subjects"][subject] = info
    with transaction(con):
        con.execute(
            "UPDATE niah_runs SET report_json = ? WHERE run_id = ?", [json.dumps(result, sort_keys=True), run_id]
        )
    log(f"niah report for {run_id}: {len(result['heatmaps'])} heatmaps under {out_dir}")
    return result


def render_text(result: dict[str, Any], con: duckdb.DuckDBPyConnection, threshold: float) -> str:
    lines = [f"NIAH run {result['run_id']}"]
    run = con.execute(
        "SELECT n_trials, seconds, trials_per_s, tokenizer, answerer_label, embedder_tag FROM niah_runs "
        "WHERE run_id = ?",
        [result["run_id"]],
    ).fetchone()
    if run:
        lines.append(
            f"  {run[0]} trial rows in {run[1]:.1f} s ({run[2]:.2f}/s); tokenizer {run[3]}; answerer {run[4]}; "
            f"embedder {run[5] or '-'}"
        )
    for subject, info in result["subjects"].items():
        lines.append(f"\n{subject.upper()}")
        for col, _ in [
            ("exact", 0),
            ("field_score", 0),
            ("retrieval_score", 0),
            ("refusal_rate", 0),
            ("hallucination_rate", 0),
        ]:
            rows = con.execute(
                f"SELECT length_target, avg({col}) FROM niah_cells WHERE run_id = ? AND subject = ? GROUP BY 1 ORDER BY 1",
                [result["run_id"], subject],
            ).fetchall()
            vals = "  ".join(f"{n}: {'-' if v is None else f'{v:.2f}'}" for n, v in rows)
            lines.append(f"  {col:<19} {vals}")
        for metric, eff in info["effective_length"].items():
            b = info["bias"].get(metric, {})
            lines.append(
                f"  effective length ({metric} >= {threshold:g}): {eff if eff is not None else 'below threshold at the shortest'}"
                f"; pattern: {b.get('pattern', '-')}"
                + (
                    f"; positional bias at {[x['length'] for x in b['positional_bias']]}"
                    if b.get("positional_bias")
                    else ""
                )
            )
        if info["overflow_lengths"]:
            lines.append(f"  overflow (beyond the window, not scored) at lengths {info['overflow_lengths']}")
    lines.append(
        f"\nheatmaps: {len(result['heatmaps'])} PNG files, e.g. {result['heatmaps'][0] if result['heatmaps'] else '-'}"
    )
    return "\n".join(lines)
