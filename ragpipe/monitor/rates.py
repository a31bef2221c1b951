"""The rates per day, and each rate's latest day judged against the days before it.

A day is out of its recent interval when both hold: its 95 % Wilson interval and the pooled interval of the window's
days do not overlap (not sampling noise), and its rate lies outside the range of the window's daily rates (not the
day-to-day swing the app already had). A day, or a window, with fewer than `min_traces` counted traces is not judged.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ragpipe.niah import wilson

# rate -> (the column of monitor_days counting its successes, the column counting what it is over)
RATES = {
    "refusal_rate": ("refusals", "traces"),
    "citation_hit_rate": ("hits", "answered"),
    "correction_rate": ("corrections", "correction_reported"),
}
DAYS_SQL = """
SELECT day, count(*) AS traces, count(*) FILTER (WHERE refused) AS refusals, count(*) FILTER (WHERE cites) AS answered,
       count(*) FILTER (WHERE citation_hit) AS hits, count(corrected) AS correction_reported,
       count(*) FILTER (WHERE corrected) AS corrections, count(*) FILTER (WHERE len(trap_tests) > 0) AS trap_hits,
       quantile_cont(latency_ms, 0.5) AS latency_p50_ms, quantile_cont(latency_ms, 0.95) AS latency_p95_ms
FROM production_traces GROUP BY day ORDER BY day
"""


def days(con: Any) -> list[dict[str, Any]]:
    """One dict per day (every app version together), oldest first, with each rate beside its counts."""
    cur = con.execute(DAYS_SQL)
    names = [d[0] for d in cur.description]
    out = [dict(zip(names, row)) for row in cur.fetchall()]
    for d in out:
        for rate, (k, n) in RATES.items():
            d[rate] = d[k] / d[n] if d[n] else None
    return out


@dataclass(frozen=True)
class Judged:
    rate: str
    day: dt.date | None  # the day judged: the latest with enough traces for this rate
    value: float | None
    n: int
    interval: tuple[float, float]
    baseline: float | None  # the window's days pooled
    baseline_n: int
    baseline_interval: tuple[float, float]
    daily_range: tuple[float, float] | None  # the window's lowest and highest daily rate
    status: str  # "ok" | "out" | "not enough traces"
    min_traces: int = 0  # the [monitor].min_traces it was judged under

    def line(self) -> str:
        if self.value is None or self.baseline is None:
            return (
                f"{self.rate}: not enough traces to judge ({self.n} on the latest day, {self.baseline_n} in the days "
                f"before; [monitor].min_traces asks for {self.min_traces} on the day and {self.min_traces} before)"
            )
        lo, hi = self.interval
        blo, bhi = self.baseline_interval
        word = "OUT of its recent interval" if self.status == "out" else "within its recent interval"
        return (
            f"{self.rate} on {self.day}: {self.value:.1%} [{lo:.1%}, {hi:.1%}] over {self.n}; the {self.baseline_n} "
            f"before: {self.baseline:.1%} [{blo:.1%}, {bhi:.1%}]: {word}"
        )


def judge(series: list[dict[str, Any]], window_days: int, min_traces: int) -> list[Judged]:
    """Each rate's latest day (with at least min_traces counted) against the window_days days before it."""
    return [_judge_rate(series, rate, k, n, window_days, min_traces) for rate, (k, n) in RATES.items()]


def _window(series: list[dict[str, Any]], day: dt.date, window: int) -> list[dict[str, Any]]:
    """The days of the window before `day`."""
    return [d for d in series if day - dt.timedelta(days=window) <= d["day"] < day]


def _judge_rate(series: list[dict[str, Any]], rate: str, k: str, n: str, window: int, min_traces: int) -> Judged:
    counted = [d for d in series if d[n] >= min_traces]
    if not counted:  # the counts as they are, so the line says how far they fall short
        latest = series[-1] if series else None
        seen = sum(d[n] for d in _window(series, latest["day"], window)) if latest else 0
        day = latest["day"] if latest else None
        return Judged(
            rate, day, None, latest[n] if latest else 0, (0.0, 1.0), None, seen, (0.0, 1.0), None,
            "not enough traces", min_traces,
        )  # fmt: skip
    last = counted[-1]
    before = [d for d in _window(series, last["day"], window) if d[n]]
    base_k, base_n = sum(d[k] for d in before), sum(d[n] for d in before)
    interval = wilson(last[k], last[n])
    if base_n < min_traces:
        return Judged(
            rate, last["day"], last[rate], last[n], interval, None, base_n, (0.0, 1.0), None, "not enough traces",
            min_traces,
        )  # fmt: skip
    base_interval = wilson(base_k, base_n)
    rates = [d[k] / d[n] for d in before]
    swing = (min(rates), max(rates))
    apart = interval[0] > base_interval[1] or interval[1] < base_interval[0]
    outside = not swing[0] <= last[rate] <= swing[1]
    status = "out" if apart and outside else "ok"
    return Judged(
        rate, last["day"], last[rate], last[n], interval, base_k / base_n, base_n, base_interval, swing, status,
        min_traces,
    )  # fmt: skip


DAILY_COLUMNS = ["day", "traces", "refusal_rate", "citation_hit_rate", "correction_rate", "trap_hits", "latency_p95_ms"]


def daily_rows(series: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The days as table rows (DAILY_COLUMNS): rates in percent, latency in whole milliseconds, blanks for none."""

    def cell(column: str, v: Any) -> Any:
        if v is None or not isinstance(v, float):
            return "" if v is None else v
        return f"{v:.1%}" if column.endswith("_rate") else f"{v:.0f}"

    return [tuple(cell(c, d[c]) for c in DAILY_COLUMNS) for d in series]
