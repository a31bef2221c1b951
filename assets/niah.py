"""Needle-in-a-haystack assets: niah_haystacks -> niah_trials -> niah_report, in their own group, run on demand.

One unpartitioned asset per stage, not a length x depth MultiPartitionsDefinition, because:
- a cell is small (tens of trials, seconds) while each partition is its own run that reloads the embedder and the
  tokenizer (~20 s here) and opens DuckDB; a 5 x 5 grid would spend most of its time starting runs;
- the report's results (effective length, positional bias against a decline with length) need every cell of one run,
  from the same seed, haystacks and settings; partitions materialized at different times would mix versions;
- partitioned assets show staleness per partition only, never in the asset graph (dagster.md), so a settings change
  would not show on the graph.
The grid lives in niah_trials rows instead (one per trial, with every variable), and the length x depth aggregates in
the niah_cells view. None of these assets carries the automation condition: they run when asked
(`ragpipe niah run`, or Materialize in the UI), and `ragpipe ci` skips the "niah" group.
"""

import base64
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg

from ragpipe.assets.errors import door
from ragpipe.assets.on_demand import on_demand
from ragpipe.assets.resources import RagpipeResource
from ragpipe.settings import Settings

GROUP = "niah"
# Grey in the graph until someone runs them: the UI should say that is expected.
ON_DEMAND = (
    " On demand (`ragpipe niah run`, or Materialize here); never run by the automation, the sensors or the schedule, "
    "nor by a Materialize all of the whole graph."
)
HOW = "select the niah group and Materialize it, or run `ragpipe niah run`"


def _version(settings: Settings, *sections: str, risk: bool = False) -> str:
    """[niah] and the named sections; [niah].risk only where asked (it changes the report's tier choice, no trial)."""
    from ragpipe.niah import NIAH_VERSION

    niah = dataclasses.asdict(settings.niah)
    niah.pop("risk")
    payload: dict[str, Any] = {"niah": niah}
    if risk and settings.niah.risk:
        payload["risk"] = settings.niah.risk
    for s in sections:
        payload[s] = settings.versioned(s)
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"v{NIAH_VERSION}-{digest}"


def markdown_image(path: str) -> str:
    """A PNG inlined in Markdown metadata: the UI shows it on the materialization."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{Path(path).stem}](data:image/png;base64,{data})"


def _tier_table(rows: list[dict[str, Any]]) -> str:
    """The tier choice as a Markdown table: per length and needle type, the chosen path and every path's figures."""
    from ragpipe.niah import NONE_GOOD

    subjects = sorted({p["subject"] for t in rows for p in t["paths"]})
    head = "| length | needle type | threshold | choice | " + " | ".join(f"{s}: lower bound, tokens" for s in subjects)
    out = [head + " |", "|---:|---|---:|---|" + "---|" * len(subjects)]
    for t in rows:
        cells = []
        for s in subjects:
            p = next((p for p in t["paths"] if p["subject"] == s), None)
            if p is None or p["overflowed"]:
                cells.append("-" if p is None else "beyond the window")
            else:
                tokens = "-" if p["tokens"] is None else f"{p['tokens']:,.0f}"
                cells.append(f"{p['lower']:.2f}, {tokens}")
        choice = t["choice"] or NONE_GOOD
        out.append(
            f"| {t['length']} | {t['needle_type']} | {t['threshold']:g} | {choice} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out)


def _report_metadata(result: dict[str, Any], text: str) -> dict[str, Any]:
    """The niah_report materialization: the figures first (they head it in the UI), the summary, the tier choice."""
    metadata: dict[str, Any] = {
        "figures": dg.MetadataValue.md(
            "\n\n".join(f"**{Path(p).stem}**\n\n{markdown_image(p)}" for p in result["figures"])
        )
    }
    metadata["run_id"] = result["run_id"]
    metadata["summary"] = dg.MetadataValue.md(f"```\n{text}\n```")
    if result.get("tiers"):
        metadata["tier_choice"] = dg.MetadataValue.md(_tier_table(result["tiers"]))
    for subject, info in result["subjects"].items():
        metadata[f"{subject}_effective_length"] = dg.MetadataValue.json(info["effective_length"])
        metadata[f"{subject}_bias"] = dg.MetadataValue.json(info["bias"])
    for png in result["figures"]:
        metadata[f"figure_{Path(png).stem}_path"] = dg.MetadataValue.path(png)
    return metadata


def build_niah_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The three NIAH assets. Nothing is opened here: settings are only read for code versions."""

    @dg.asset(
        name="niah_haystacks",
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=_version(settings),
        pool="duckdb",
        output_required=False,
        description="Filler haystacks per (length, repetition) from the configured corpus or [niah].haystack_dir, "
        "counted with the named local tokenizer; the same seed gives the same haystacks." + ON_DEMAND,
    )
    @door
    @on_demand(HOW)
    def niah_haystacks(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        from ragpipe.niah import build_haystacks

        with ragpipe.warehouse() as con:
            stats = build_haystacks(ragpipe.settings(), con, context.run.run_id, log=context.log.info)
        return dg.MaterializeResult(metadata=stats, data_version=dg.DataVersion(stats["haystack_key"]))

    @dg.asset(
        name="niah_trials",
        deps=[niah_haystacks],
        group_name=GROUP,
        kinds={"duckdb", "lancedb"},
        code_version=_version(settings, "chunker", "embedder", "retriever", "answerer"),
        pool="duckdb",
        output_required=False,
        description="Every length x depth x repetition x needle type x question method, on the retrieval and the "
        "full-context subjects: one niah_trials row per trial and subject." + ON_DEMAND,
    )
    @door
    @on_demand(HOW)
    def niah_trials(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        from ragpipe.niah import run_trials

        last = {"stage": "", "pct": -1}

        def progress(stage: str, done: int, total: int) -> None:
            pct = int(100 * done / max(total, 1)) // 10 * 10
            if stage != last["stage"] or pct != last["pct"]:
                last.update(stage=stage, pct=pct)
                context.log.info(f"{stage}: {done}/{total}")

        with ragpipe.warehouse() as con:
            stats = run_trials(
                ragpipe.settings(), con, context.run.run_id, trigger="dagster", log=context.log.info, progress=progress
            )
        return dg.MaterializeResult(metadata={k: v for k, v in stats.items() if v is not None})

    @dg.asset(
        name="niah_report",
        deps=[niah_trials],
        group_name=GROUP,
        kinds={"duckdb", "matplotlib"},
        code_version=_version(settings, risk=True),
        pool="duckdb",
        output_required=False,
        description="One figure per subject (metrics side by side, length x depth, n and 95% intervals, overflow marked), "
        "effective context length and positional bias raised only when the intervals support them." + ON_DEMAND,
    )
    @door
    @on_demand(HOW)
    def niah_report(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        from ragpipe.niah import render_text, report

        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            result = report(s, con, log=context.log.info)
            text = render_text(result, con, s.niah.effective_threshold)
        return dg.MaterializeResult(metadata=_report_metadata(result, text))

    return [niah_haystacks, niah_trials, niah_report]
