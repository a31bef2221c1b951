"""The NIAH figure: one per subject, its metrics side by side as depth x length heatmaps, every cell with its mean,
95 % Wilson interval and n, overflow cells grey and labelled (beyond the window: not scored, never a miss)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# metric -> (title, higher is better)
FIGURE_METRICS = {
    "exact": ("exact", True),
    "field_score": ("field score", True),
    "retrieval_score": ("retrieval score (evidence found)", True),
    "reasoning_score": ("reasoning score (given the evidence)", True),
    "refusal_rate": ("refusal rate", False),
    "hallucination_rate": ("hallucination rate", False),
}


def _length_label(n: int) -> str:
    return f"{n / 1000:g}K" if n >= 1000 else str(n)


def _overflowed(cell: dict[str, Any]) -> bool:
    """At least half the cell's trials beyond the window (the report's overflow lengths use the same rule)."""
    return bool(cell["n_overflow"]) and cell["n_overflow"] * 2 >= cell["n"]


def subject_figure(subject: str, cells: list[dict[str, Any]], title: str, path: Path) -> Path | None:
    """`cells`: the report's cells of one subject ({length, depth, n, n_overflow, metrics: {m: {n, mean, lo, hi}}})."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metrics = [m for m in FIGURE_METRICS if any(c["metrics"].get(m, {}).get("n") for c in cells)]
    if not metrics and not cells:
        return None
    metrics = metrics or ["exact"]
    lengths = sorted({c["length"] for c in cells})
    depths = sorted({c["depth"] for c in cells})
    by = {(c["length"], c["depth"]): c for c in cells}
    cols = 2 if len(metrics) == 4 else min(3, len(metrics))
    rows = -(-len(metrics) // cols)
    w, h = max(3.4, 1.0 * len(lengths) + 1.2), 1.0 + 0.62 * len(depths)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows + 0.7), dpi=100, squeeze=False)
    for ax in axes.flat[len(metrics) :]:
        ax.set_visible(False)
    for ax, m in zip(axes.flat, metrics):
        label, higher = FIGURE_METRICS[m]
        data = np.full((len(depths), len(lengths)), np.nan)
        for (n, d), c in by.items():
            e = c["metrics"].get(m) or {}
            if e.get("n") and not _overflowed(c):  # a mostly-overflowed cell is grey: its few trials are no sample
                data[depths.index(d), lengths.index(n)] = e["mean"]
        cmap = matplotlib.colormaps["RdYlGn" if higher else "RdYlGn_r"].with_extremes(bad="#c8c8c8")
        ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=0, vmax=1, aspect="auto")
        for yi, d in enumerate(depths):
            for xi, n in enumerate(lengths):
                cell = by.get((n, d))
                if cell is None:
                    continue
                e = cell["metrics"].get(m) or {}
                if _overflowed(cell):
                    text = f"overflow\n{cell['n_overflow']}/{cell['n']}"
                elif e.get("n"):
                    text = f"{e['mean']:.2f}\n[{e['lo']:.2f}, {e['hi']:.2f}]\nn={e['n']}"
                else:
                    text = f"-\nn=0/{cell['n']}"
                ax.text(xi, yi, text, ha="center", va="center", fontsize=7, linespacing=1.1)
        ax.set_xticks(range(len(lengths)), [_length_label(n) for n in lengths])
        ax.set_yticks(range(len(depths)), [f"{d:g}%" for d in depths])
        ax.set_xlabel("haystack length (tokens)")
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("needle depth")
    fig.suptitle(
        f"{title}\ncell: mean, [95% Wilson interval], n scored trials; grey 'overflow k/n': beyond the window, "
        "not scored (never a miss)",
        fontsize=8.5,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def paths_figure(subjects: dict[str, Any], threshold: float, title: str, path: Path) -> Path | None:
    """The paths side by side: exact per length for each subject, with its 95 % interval and the threshold the tier
    choice asks; lengths beyond a subject's window are left out of its line. None with fewer than two subjects."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = {s: info["by_length"].get("exact", {}) for s, info in subjects.items()}
    lines = {s: per for s, per in lines.items() if any(e["n"] for e in per.values())}
    if len(lines) < 2:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (subject, per) in enumerate(sorted(lines.items())):
        over = set(subjects[subject].get("overflow_lengths", []))
        pts = sorted((int(n), e) for n, e in per.items() if e["n"] and int(n) not in over)
        if not pts:
            continue
        xs = [n * (1 + 0.03 * (k - 1)) for n, _ in pts]  # a small offset keeps the intervals apart
        ys = [e["mean"] for _, e in pts]
        err = [[y - e["lo"] for y, (_, e) in zip(ys, pts)], [e["hi"] - y for y, (_, e) in zip(ys, pts)]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=subject.replace("_", " "))
    ax.axhline(threshold, color="grey", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xscale("log")
    lengths = sorted({int(n) for per in lines.values() for n in per})
    ax.set_xticks(lengths, [_length_label(n) for n in lengths])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("haystack length (tokens)")
    ax.set_ylabel("exact (95 % interval)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
