"""The monitoring figure: each rate per day with its 95 % interval, the days a check judged out of their recent
interval marked, and the traces per day beneath."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragpipe.monitor.rates import RATES, Judged

TITLES = {
    "refusal_rate": "refusal rate",
    "citation_hit_rate": "citation hit rate",
    "correction_rate": "correction rate",
}


def rates_figure(series: list[dict[str, Any]], judged: list[Judged], path: Path) -> Path | None:
    """One panel per rate that has data, plus traces per day; None without any day."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ragpipe.niah import wilson

    if not series:
        return None
    shown = [r for r, (_, n) in RATES.items() if any(d[n] for d in series)]
    fig, axes = plt.subplots(len(shown) + 1, 1, figsize=(8, 2.2 * (len(shown) + 1)), sharex=True, squeeze=False)
    days = [d["day"] for d in series]
    out = {j.rate: j.day for j in judged if j.status == "out"}
    for ax, rate in zip(axes[:, 0], shown):
        k, n = RATES[rate]
        pts = [(d["day"], d[k] / d[n], *wilson(d[k], d[n])) for d in series if d[n]]
        xs, ys, los, his = zip(*pts)
        ax.fill_between(xs, los, his, alpha=0.25, step=None)
        ax.plot(xs, ys, marker="o")
        if rate in out:
            flagged = next(p for p in pts if p[0] == out[rate])
            ax.plot([flagged[0]], [flagged[1]], marker="o", markersize=12, fillstyle="none", color="red")
            ax.annotate("out of its recent interval", (flagged[0], flagged[1]), textcoords="offset points",
                        xytext=(-10, 8), ha="right", color="red", fontsize=8)  # fmt: skip
        ax.set_ylim(0, 1)
        ax.set_ylabel(TITLES[rate])
        ax.grid(alpha=0.3)
    counts = axes[-1, 0]
    counts.bar(days, [d["traces"] for d in series], color="grey")
    counts.set_ylabel("traces")
    fig.suptitle("Production traces per day (95 % intervals)")
    fig.autofmt_xdate()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
