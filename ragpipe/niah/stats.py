"""Uncertainty for the NIAH report: a Wilson interval on every cell, and flags raised only when the intervals
support them ("not enough trials" otherwise).

Scores are proportions: exact, refusal, hallucination and reasoning are 0/1 per trial; field_score and
retrieval_score are shares of fields or needle parts. For a share the interval is Wilson's with the sum of the scores
as the successes: a mean of values in [0, 1] varies no more than a 0/1 mean with the same average, so the interval is
conservative for them.

Definitions (docs/niah.md, "Uncertainty"):
- effective length: the longest length L such that L and every shorter length have a lower bound at or above the
  threshold; a length that overflowed the window ends it; a length whose interval straddles the threshold also ends
  it and is named as undecided ("not enough trials").
- positional bias at a length: a depth whose interval lies wholly below the interval of the other depths pooled
  (one depth below the rest), or the middle depths pooled wholly below the two edges pooled (lost in the middle).
  A gap between point estimates above `bias_threshold` whose intervals overlap is reported as "not enough trials".
- decline with length: the interval of the longest length within the window wholly below the shortest's. A length
  where most trials overflowed is left out: the few that fitted had the shortest prompts, not a sample of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Collection, Iterable

Z95 = 1.959963984540054
NOT_ENOUGH = "not enough trials"


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there are no trials."""
    if n <= 0:
        return (0.0, 1.0)
    p = min(max(successes / n, 0.0), 1.0)
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Estimate:
    """A proportion with its n and 95 % Wilson interval."""

    n: int
    total: float  # the sum of the scores (successes)

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def ci(self) -> tuple[float, float]:
        return wilson(self.total, self.n)

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.n + other.n, self.total + other.total)

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.ci
        m = self.mean
        return {"n": self.n, "mean": None if m is None else round(m, 4), "lo": round(lo, 4), "hi": round(hi, 4)}


def estimate(values: Iterable[float | None]) -> Estimate:
    vals = [float(v) for v in values if v is not None]
    return Estimate(len(vals), sum(vals))


def pooled(items: Iterable[Estimate]) -> Estimate:
    out = Estimate(0, 0.0)
    for e in items:
        out = out + e
    return out


# --------------------------------------------------------------------------------------------------- flags
def effective_length(by_length: dict[int, Estimate], overflow: dict[int, float], threshold: float) -> dict[str, Any]:
    """The longest length whose lower bound (and every shorter length's) clears the threshold.

    Returns {"value": L or None, "status": ..., "undecided": length or None, "stopped_by": ...} where status is
    "supported" (a value, and the next length is clearly below or overflowed or there is none),
    "not enough trials" (the first length that is not clearly above straddles the threshold), or
    "below threshold" (the shortest length's upper bound is under it)."""
    best, undecided, stopped_by = None, None, "longest length tested"
    for n in sorted(by_length):
        e = by_length[n]
        if overflow.get(n, 0.0) >= 0.5:
            stopped_by = f"overflow at {n}"
            break
        lo, hi = e.ci
        if e.n and lo >= threshold:
            best = n
            continue
        if e.n and hi < threshold:
            stopped_by = f"below threshold at {n}"
        else:
            undecided, stopped_by = n, f"{NOT_ENOUGH} at {n}"
        break
    if undecided is not None:
        status = NOT_ENOUGH
    elif best is None:
        status = "below threshold"
    else:
        status = "supported"
    return {"value": best, "status": status, "undecided": undecided, "stopped_by": stopped_by}


def _below(a: Estimate, b: Estimate) -> bool:
    return bool(a.n and b.n and a.ci[1] < b.ci[0])


def bias_flags(
    grid: dict[tuple[int, float], Estimate], threshold: float, overflow_lengths: Collection[int] = ()
) -> dict[str, Any]:
    """Positional bias per length, and a decline with length, each raised only when the intervals support it.
    `overflow_lengths` (most trials beyond the window) take no part in the decline."""
    lengths = sorted({n for n, _ in grid})
    depths = sorted({d for _, d in grid})
    biased: list[dict[str, Any]] = []
    undecided: list[dict[str, Any]] = []
    per_length: dict[int, Estimate] = {}
    for n in lengths:
        cells = {d: grid[(n, d)] for d in depths if (n, d) in grid and grid[(n, d)].n}
        per_length[n] = pooled(cells.values())
        if len(cells) < 2:
            continue
        for d, e in cells.items():
            rest = pooled(v for k, v in cells.items() if k != d)
            gap = (rest.mean or 0.0) - (e.mean or 0.0)
            item = {"length": n, "depth": d, "kind": "depth", "depth_ci": e.as_dict(), "rest_ci": rest.as_dict()}
            if _below(e, rest):
                biased.append({**item, "gap": round(gap, 3)})
            elif gap > threshold:
                undecided.append({**item, "gap": round(gap, 3), "reason": NOT_ENOUGH})
        if len(depths) >= 3:
            edges = pooled(cells[d] for d in (depths[0], depths[-1]) if d in cells)
            middle = pooled(v for d, v in cells.items() if d not in (depths[0], depths[-1]))
            if edges.n and middle.n:
                gap = (edges.mean or 0.0) - (middle.mean or 0.0)
                item = {"length": n, "kind": "middle", "middle_ci": middle.as_dict(), "edges_ci": edges.as_dict()}
                if _below(middle, edges):
                    biased.append({**item, "gap": round(gap, 3)})
                elif gap > threshold:
                    undecided.append({**item, "gap": round(gap, 3), "reason": NOT_ENOUGH})
    scored = [n for n in lengths if per_length[n].n and n not in overflow_lengths]
    decline: dict[str, Any] = {"supported": False, "drop": 0.0}
    if len(scored) >= 2:
        first, last = per_length[scored[0]], per_length[scored[-1]]
        drop = (first.mean or 0.0) - (last.mean or 0.0)
        decline = {"supported": _below(last, first), "drop": round(drop, 3), "from": scored[0], "to": scored[-1]}
        if not decline["supported"] and drop > threshold:
            decline["reason"] = NOT_ENOUGH
    if biased:
        pattern = "positional_bias+length_decline" if decline["supported"] else "positional_bias"
    elif decline["supported"]:
        pattern = "length_decline"
    elif undecided or decline.get("reason"):
        pattern = NOT_ENOUGH
    else:
        pattern = "flat"
    return {
        "pattern": pattern,
        "positional_bias": biased,
        "undecided": undecided,
        "length_decline": decline,
        "per_length": {str(n): e.as_dict() for n, e in per_length.items()},
    }
