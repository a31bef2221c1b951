"""golden_suggestions: near-miss tests proposed over the current chunks, for a person to accept. On demand (Materialize
here, or `ragpipe golden suggest`): proposing is authoring, not evaluation, so nothing runs it by itself."""

import hashlib
import json

import dagster as dg

from ragpipe.assets.errors import door
from ragpipe.assets.on_demand import on_demand
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.tables import table_of_tests
from ragpipe.settings import Settings

GROUP = "authoring"
SUGGEST_VERSION = "1"  # bump when proposals are made differently


class SuggestConfig(dg.Config):
    """How many proposals, and which qualifiers to vary (as `ragpipe golden suggest`)."""

    negatives: int = 20
    positives: int = 0
    kinds: str = "periods,versions,names"
    phrase: bool = False  # the configured answerer rewords the questions (openai or smollm2)


def _version(settings: Settings) -> str:
    payload = {s: settings.versioned(s) for s in ("chunker", "embedder", "retriever")}
    return (
        f"v{SUGGEST_VERSION}-"
        + hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:10]
    )


def build_suggestions(settings: Settings) -> dg.AssetsDefinition:
    @dg.asset(
        name="golden_suggestions",
        deps=["embeddings"],
        group_name=GROUP,
        kinds={"duckdb", "markdown"},
        code_version=_version(settings),
        pool="duckdb",
        output_required=False,
        description="Near-miss negative tests (and positives) proposed from the current chunks: each asks for a "
        "value its trap sentence states, under a qualifier the corpus never pairs with it (the search is the "
        "evidence), with the trap's rank under the current retrieval. The review sheet is suggestions.md beside the "
        "warehouse; accept with `ragpipe golden suggest --accept ID`. On demand (Materialize here, or `ragpipe "
        "golden suggest`); never run by the automation, the sensors or the schedule, nor by a Materialize all of the "
        "whole graph.",
    )
    @door
    @on_demand("select golden_suggestions and Materialize it, or run `ragpipe golden suggest`")
    def golden_suggestions(
        context: dg.AssetExecutionContext, config: SuggestConfig, ragpipe: RagpipeResource
    ) -> dg.MaterializeResult:
        from ragpipe.evaluate import suggest
        from ragpipe.golden import load_golden
        from ragpipe.reports import render_sheet

        s = ragpipe.settings()
        path = s.golden.path
        taken = {t.quote for t in load_golden(path).tests if t.quote} if path and path.is_file() else set()
        kinds = [k.strip() for k in config.kinds.split(",") if k.strip()]
        with ragpipe.warehouse() as con:
            result = suggest(
                s, con, config.negatives, config.positives, kinds, taken, log=context.log.info, phrase=config.phrase
            )
        sheet = s.duckdb_path.parent / "suggestions.md"
        sheet.write_text(render_sheet(result, s.chunker_tag), encoding="utf-8")
        rows = [(p.suggestion_id, p.kind, p.rank or f"not in top {p.k}", p.question, p.value) for p in result.proposals]
        return dg.MaterializeResult(
            metadata={
                "proposals": dg.MetadataValue.int(len(result.proposals)),
                "negatives": dg.MetadataValue.int(sum(p.kind == "negative" for p in result.proposals)),
                "quote_in_top_k": dg.MetadataValue.int(sum(1 for p in result.proposals if p.rank)),
                "dropped": dg.MetadataValue.json(result.dropped),
                "seconds": dg.MetadataValue.float(round(result.seconds, 2)),
                "review_sheet": dg.MetadataValue.path(str(sheet)),
                "table": table_of_tests(rows, ["id", "kind", "rank", "question", "value"], where="the review sheet"),
                "accept": dg.MetadataValue.md("`ragpipe golden suggest --accept ID [ID ...]`, then `ragpipe ci`"),
                "config": dg.MetadataValue.json(config.model_dump()),
            }
        )

    return golden_suggestions
