"""The NIAH report: cells with n and 95 % Wilson intervals, effective length and positional bias raised only when the
intervals support them ("not enough trials" otherwise; ragpipe.niah.stats), one figure per subject, the text summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ragpipe.niah.figures import paths_figure, subject_figure
from ragpipe.niah.stats import NOT_ENOUGH, Estimate, bias_flags, effective_length, estimate, pooled
from ragpipe.niah.tiers import choose_tiers, tier_text
from ragpipe.niah.trials import Log, noop
from ragpipe.settings import Settings
from ragpipe.warehouse import transaction

# metric -> (the per-trial value over scored trials, higher is better)
METRICS = {
    "exact": ("exact", True),
    "field_score": ("field_score", True),
    "refusal_rate": ("refused::INT", False),
    "hallucination_rate": ("hallucinated::INT", False),
    "retrieval_score": ("retrieval_score", True),
    "reasoning_score": ("reasoning_score", True),
}
EFFECTIVE_METRICS = ("exact", "field_score", "retrieval_score")
OVERFLOW = ("overflow", "truncated")


def latest_run_id(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT run_id FROM latest_niah_run").fetchone()
    return row[0] if row else None


def cells(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """The niah_cells view's rows of a run (point estimates; the report adds n and intervals)."""
    cur = con.execute(
        "SELECT * FROM niah_cells WHERE run_id = ? ORDER BY subject, length_target, depth_target", [run_id]
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def cell_estimates(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, dict[tuple[int, float], dict[str, Any]]]:
    """subject -> (length, depth) -> {n, n_overflow, n_error, metrics: {metric: Estimate}} from the trial rows."""
    exprs = ", ".join(f"CASE WHEN status = 'scored' THEN {expr} END" for expr, _ in METRICS.values())
    rows = con.execute(
        f"SELECT subject, length_target, depth_target, status, {exprs} FROM niah_trials WHERE run_id = ?", [run_id]
    ).fetchall()
    out: dict[str, dict[tuple[int, float], dict[str, Any]]] = {}
    groups: dict[tuple[str, int, float], list[tuple[Any, ...]]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1], float(r[2])), []).append(r)
    for (subject, n, d), rs in sorted(groups.items()):
        out.setdefault(subject, {})[(n, d)] = {
            "n": len(rs),
            "n_overflow": sum(r[3] in OVERFLOW for r in rs),
            "n_error": sum(r[3] == "error" for r in rs),
            "metrics": {m: estimate(r[4 + i] for r in rs) for i, m in enumerate(METRICS)},
        }
    return out


def report(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    out_dir: Path | None = None,
    log: Log = noop,
) -> dict[str, Any]:
    """Per subject: every cell with n and intervals, effective length and bias flags per metric (supported by the
    intervals or "not enough trials"), reasoning apart from retrieval, and one combined figure."""
    ns = settings.niah
    run_id = run_id or latest_run_id(con)
    if run_id is None:
        raise RuntimeError("no finished NIAH run in the warehouse; run `ragpipe niah run` first")
    label = con.execute("SELECT answerer_label FROM niah_runs WHERE run_id = ?", [run_id]).fetchone()
    out_dir = out_dir or settings.warehouse_dir / "niah" / run_id
    result: dict[str, Any] = {
        "run_id": run_id,
        "threshold": ns.effective_threshold,
        "bias_threshold": ns.bias_threshold,
        "interval": "95% Wilson",
        "subjects": {},
        "figures": [],
    }
    for subject, grid in cell_estimates(con, run_id).items():
        lengths = sorted({n for n, _ in grid})
        over_len = {
            n: sum(c["n_overflow"] for (m, _), c in grid.items() if m == n)
            / max(1, sum(c["n"] for (m, _), c in grid.items() if m == n))
            for n in lengths
        }
        info: dict[str, Any] = {
            "cells": [
                {
                    "length": n,
                    "depth": d,
                    "n": c["n"],
                    "n_overflow": c["n_overflow"],
                    "n_error": c["n_error"],
                    "metrics": {m: e.as_dict() for m, e in c["metrics"].items()},
                }
                for (n, d), c in sorted(grid.items())
            ],
            "by_length": {},
            "effective_length": {},
            "bias": {},
            "overflow_lengths": [n for n in lengths if over_len[n] >= 0.5],
        }
        for metric in METRICS:
            by_len: dict[int, Estimate] = {
                n: pooled(c["metrics"][metric] for (m, _), c in grid.items() if m == n) for n in lengths
            }
            if not any(e.n for e in by_len.values()):
                continue
            info["by_length"][metric] = {str(n): e.as_dict() for n, e in by_len.items()}
            if metric in EFFECTIVE_METRICS:
                info["effective_length"][metric] = effective_length(by_len, over_len, ns.effective_threshold)
                info["bias"][metric] = bias_flags(
                    {k: c["metrics"][metric] for k, c in grid.items()}, ns.bias_threshold, info["overflow_lengths"]
                )
        png = subject_figure(
            subject,
            info["cells"],
            f"{subject}: {label[0] if label else '-'}; run {run_id}",
            out_dir / f"{subject}.png",
        )
        if png is not None:
            result["figures"].append(str(png))
        result["subjects"][subject] = info
    result["tiers"] = [t.as_dict() for t in choose_tiers(con, run_id, ns)]
    png = paths_figure(
        result["subjects"], ns.effective_threshold, f"paths side by side; run {run_id}", out_dir / "paths.png"
    )
    if png is not None:
        result["figures"].insert(0, str(png))
    with transaction(con):
        con.execute(
            "UPDATE niah_runs SET report_json = ? WHERE run_id = ?", [json.dumps(result, sort_keys=True), run_id]
        )
    log(f"niah report for {run_id}: {len(result['figures'])} figures under {out_dir}")
    return result


def _ci(e: dict[str, Any]) -> str:
    return "-" if not e.get("n") else f"{e['mean']:.2f} [{e['lo']:.2f}, {e['hi']:.2f}] n={e['n']}"


def _effective_line(metric: str, eff: dict[str, Any], threshold: float) -> str:
    head = f"  effective length ({metric}, lower bound >= {threshold:g}): "
    if eff["status"] == "supported":
        return head + f"{eff['value']} (ends: {eff['stopped_by']})"
    if eff["status"] == NOT_ENOUGH:
        known = f"at least {eff['value']}; " if eff["value"] else ""
        return head + f"{known}{NOT_ENOUGH} at {eff['undecided']} (its interval straddles the threshold)"
    return head + "below the threshold at the shortest length"


def _bias_line(metric: str, b: dict[str, Any]) -> str:
    parts = [f"  depth pattern ({metric}): {b['pattern']}"]
    for x in b["positional_bias"]:
        where = f"depth {x['depth']:g}%" if x["kind"] == "depth" else "middle depths"
        parts.append(f"positional bias at {x['length']}: {where} below the rest (gap {x['gap']:.2f}, intervals apart)")
    for x in b["undecided"]:
        where = f"depth {x['depth']:g}%" if x["kind"] == "depth" else "middle depths"
        parts.append(
            f"{NOT_ENOUGH} to call a bias at {x['length']} ({where} lower by {x['gap']:.2f}, intervals overlap)"
        )
    d = b["length_decline"]
    if d.get("supported"):
        parts.append(f"decline with length {d['from']} -> {d['to']}: {d['drop']:.2f} (intervals apart)")
    elif d.get("reason"):
        parts.append(f"{NOT_ENOUGH} to call a decline {d['from']} -> {d['to']} ({d['drop']:.2f})")
    return "; ".join(parts)


def render_text(result: dict[str, Any], con: duckdb.DuckDBPyConnection, threshold: float) -> str:
    lines = [f"NIAH run {result['run_id']} (cells: mean [95% Wilson interval] n)"]
    run = con.execute(
        "SELECT n_trials, seconds, trials_per_s, tokenizer, answerer_label, embedder_tag, resumed_trials FROM niah_runs "
        "WHERE run_id = ?",
        [result["run_id"]],
    ).fetchone()
    if run:
        lines.append(
            f"  {run[0]} trial rows in {run[1] or 0:.1f} s ({run[2] or 0:.2f}/s); tokenizer {run[3]}; answerer {run[4]}; "
            f"embedder {run[5] or '-'}" + (f"; resumed with {run[6]} rows already stored" if run[6] else "")
        )
    if any("cells" not in info for info in result["subjects"].values()):
        lines.append("  a report from before intervals were kept: run `ragpipe niah report --run ID` to recompute it")
        return "\n".join(lines)
    for subject, info in result["subjects"].items():
        lines.append(f"\n{subject.upper()}")
        for metric in (
            "exact",
            "field_score",
            "retrieval_score",
            "reasoning_score",
            "refusal_rate",
            "hallucination_rate",
        ):
            per = info["by_length"].get(metric)
            if per:
                lines.append(f"  {metric:<19} " + "  ".join(f"{n}: {_ci(per[n])}" for n in sorted(per, key=int)))
        for metric, eff in info["effective_length"].items():
            lines.append(_effective_line(metric, eff, threshold))
            lines.append(_bias_line(metric, info["bias"][metric]))
        if info["overflow_lengths"]:
            lines.append(f"  overflow (beyond the window, not scored) at lengths {info['overflow_lengths']}")
    if result.get("tiers"):
        lines.append("\n" + tier_text(result["tiers"]))
    figs = result.get("figures", [])
    lines.append(f"\nfigures: {', '.join(figs) if figs else '-'}")
    return "\n".join(lines)
