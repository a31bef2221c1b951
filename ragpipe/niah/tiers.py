"""The tier choice: per length (and per needle type), the cheapest path whose exact-answer interval clears the
threshold, from the same trials as the report.

A path is good enough at a length when the lower bound of its 95 % Wilson interval of `exact` (over its scored trials)
is at or above the threshold: `[niah].effective_threshold`, or `[niah].risk[needle_type]` where a type asks for more
(a contract clause) than another (a product name); a row of all types together takes the highest threshold among its
types. A path whose trials mostly overflowed its window cannot run at that length. Among the good-enough paths the
cheapest wins: fewest tokens per question (input and output, as the answerer reported them), then the lowest measured
latency. With none, the row says so, with the best lower bound reached.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import duckdb

from ragpipe.niah.stats import wilson
from ragpipe.settings import NiahSettings

ALL_TYPES = "all types"
NONE_GOOD = "no path is good enough at this length"
TRIALS_SQL = """
SELECT subject, length_target, needle_type, count(*) AS n, count(exact) AS scored, coalesce(sum(exact), 0) AS hits,
       count(*) FILTER (WHERE status IN ('overflow', 'truncated')) AS overflowed,
       avg(coalesce(input_tokens, 0) + coalesce(output_tokens, 0) + coalesce(summary_tokens, 0))
           FILTER (WHERE exact IS NOT NULL) AS tokens,
       avg(latency_s) FILTER (WHERE exact IS NOT NULL) AS latency_s
FROM niah_trials WHERE run_id = ? GROUP BY ALL
"""


@dataclass(frozen=True)
class PathAt:
    subject: str
    scored: int
    exact: float | None
    lower: float  # 95 % Wilson lower bound of exact (0 without scored trials)
    tokens: float | None  # per question
    latency_s: float | None
    overflowed: bool  # most trials beyond the window: the path cannot run here


@dataclass(frozen=True)
class Tier:
    length: int
    needle_type: str  # a type, or ALL_TYPES
    threshold: float
    choice: str | None  # the chosen subject, or None
    paths: tuple[PathAt, ...]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def tier_line(t: dict[str, Any]) -> str:
    """One row of the tier table (a Tier as stored in the report's JSON)."""
    where = f"{t['length']:>6} {t['needle_type']:<15}"
    if t["choice"] is None:
        best = max((p["lower"] for p in t["paths"] if not p["overflowed"]), default=0.0)
        return f"{where} {NONE_GOOD} (best lower bound {best:.2f} < {t['threshold']:g})"
    p = next(p for p in t["paths"] if p["subject"] == t["choice"])
    cost = f"{p['tokens']:,.0f} tokens" if p["tokens"] is not None else "tokens not reported"
    lat = f", {p['latency_s']:.2f} s" if p["latency_s"] is not None else ""
    return f"{where} {t['choice']} (lower bound {p['lower']:.2f} >= {t['threshold']:g}; {cost}{lat})"


def _path(subject: str, rows: list[dict[str, Any]]) -> PathAt:
    n, scored, hits = (sum(r[k] for r in rows) for k in ("n", "scored", "hits"))
    overflowed = sum(r["overflowed"] for r in rows)
    weights = [(r["tokens"], r["latency_s"], r["scored"]) for r in rows if r["scored"]]

    def mean(i: int) -> float | None:
        got = [(w[i], w[2]) for w in weights if w[i] is not None]
        return sum(v * k for v, k in got) / sum(k for _, k in got) if got else None

    return PathAt(
        subject=subject,
        scored=scored,
        exact=hits / scored if scored else None,
        lower=wilson(hits, scored)[0] if scored else 0.0,
        tokens=mean(0),
        latency_s=mean(1),
        overflowed=overflowed * 2 >= n,
    )


def _choose(length: int, kind: str, threshold: float, by_subject: dict[str, list[dict[str, Any]]]) -> Tier:
    paths = tuple(_path(s, rows) for s, rows in sorted(by_subject.items()))
    good = [p for p in paths if not p.overflowed and p.scored and p.lower >= threshold]
    good.sort(key=lambda p: (p.tokens if p.tokens is not None else float("inf"), p.latency_s or 0.0))
    return Tier(length, kind, threshold, good[0].subject if good else None, paths)


def choose_tiers(con: duckdb.DuckDBPyConnection, run_id: str, ns: NiahSettings) -> list[Tier]:
    """One Tier per length for all types together, then per length and needle type."""
    cur = con.execute(TRIALS_SQL, [run_id])
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    out: list[Tier] = []
    for length in sorted({r["length_target"] for r in rows}):
        at = [r for r in rows if r["length_target"] == length]
        types = sorted({r["needle_type"] for r in at})
        strictest = max(ns.threshold(t) for t in types)
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in at:
            groups.setdefault(r["subject"], []).append(r)
        out.append(_choose(length, ALL_TYPES, strictest, groups))
        for t in types:
            typed = {s: [r for r in rs if r["needle_type"] == t] for s, rs in groups.items()}
            out.append(_choose(length, t, ns.threshold(t), {s: v for s, v in typed.items() if v}))
    return out


def tier_text(rows: list[dict[str, Any]]) -> str:
    head = "TIER CHOICE (per length: the cheapest path whose exact lower bound clears the threshold)"
    return "\n".join([head, f"{'length':>6} {'needle type':<15} choice", *(tier_line(t) for t in rows)])
