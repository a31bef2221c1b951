"""`ragpipe compare` as a job of its own: a comparison shows in the Runs list and never touches the main assets."""

from typing import Any

import dagster as dg

from ragpipe.assets.errors import door
from ragpipe.assets.resources import RagpipeResource
from ragpipe.reports import Comparison, candidate_settings, render_comparison_markdown, run_comparison


class CompareConfig(dg.Config):
    overrides: list[str] = []  # SECTION.KEY=VALUE, as `ragpipe compare --set`
    candidate: str = ""  # a candidate settings file (default: the current one, with the overrides)


@dg.op(
    description="Evaluate a candidate configuration in a scratch warehouse and compare it with the latest "
    "judged run; only the comparisons tables of the warehouse are written."
)
@door
def compare(context: dg.OpExecutionContext, config: CompareConfig, ragpipe: RagpipeResource) -> Any:
    from pathlib import Path

    current = ragpipe.settings()
    cand = candidate_settings(current, config.overrides, Path(config.candidate) if config.candidate else None)
    result: Comparison = run_comparison(current, cand, log=context.log.info)
    context.add_output_metadata(
        {
            "comparison_id": result.comparison_id,
            "flips": len(result.flips),
            "blocking": len(result.blocking),
            "summary": dg.MetadataValue.md(render_comparison_markdown(result)),
        }
    )
    context.instance.add_run_tags(
        context.run.run_id,
        {"ragpipe/compare": "BLOCKED" if result.blocking else "OK", "ragpipe/comparison_id": result.comparison_id},
    )
    return result


@dg.job(
    name="ragpipe_compare",
    tags={"ragpipe/trigger": "compare"},
    description="A candidate configuration (chunker, embedder, retriever, answerer) evaluated beside the current "
    "one without changing it. Config: overrides (e.g. ['embedder.name=minilm-static']) and/or candidate (a file).",
)
def compare_job() -> None:
    compare()
