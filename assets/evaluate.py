"""Evaluation assets: golden_set -> stamps -> retrievals -> answers -> verdicts, with asset checks on verdicts."""

import hashlib
from typing import Any

import dagster as dg

from ragpipe import evaluate
from ragpipe.report import load_summary, render_markdown
from ragpipe.settings import Settings

from assets.automation import RAGPIPE_CONDITION
from assets.resources import RagpipeResource

GROUP = "evaluate"
CHECKS = {
    "no_failures": "No test failed (a fail is the model answering wrongly with its anchor in context).",
    "every_test_ran": "Every test's anchor (trap or evidence) chunk was retrieved, so the verdict means something.",
    "verified_under_current_embedder": "Every test was last validated under the current embedder.",
    "golden_stamps_current": "The chunk ids written in the golden set file match the current chunking "
    "(fix with `ragpipe golden restamp --write`).",
}


def _golden_file_hash(settings: Settings) -> str:
    """Part of golden_set's code version: editing the file (e.g. restamp --write) marks it stale on reload."""
    path = settings.golden.path
    if path is None or not path.is_file():
        return "none"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


def _trigger(context: dg.AssetExecutionContext) -> str:
    tags = context.run.tags
    if "dagster/schedule_name" in tags:
        return "scheduled"
    if "dagster/sensor_name" in tags or "dagster/auto_materialize" in tags:
        return "automation"
    return tags.get("ragpipe/trigger", "manual")


def _table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    if not rows:
        return "(none)"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def build_eval_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @dg.asset(
        name="golden_set",
        deps=["documents"],
        group_name=GROUP,
        kinds={"duckdb", "json"},
        code_version=f"{settings.code_version('golden')}-{_golden_file_hash(settings)}",
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="The golden set file, validated: every problem is listed with file, line and field, and a "
        "broken file fails this asset.",
    )
    def golden_set(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = evaluate.load_golden_stage(s, con, context.run.run_id, log=context.log.info)
        return dg.MaterializeResult(
            metadata={**stats, "dagster/row_count": stats["tests"], "path": dg.MetadataValue.path(stats["path"])},
            data_version=dg.DataVersion(stats["sha256"][:16]),
        )

    @dg.asset(
        name="stamps",
        deps=["chunks", golden_set],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=settings.code_version("golden"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="Each test's trap/evidence located in the current chunking from its quote: unchanged, moved, "
        "split or missing.",
    )
    def stamps(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = evaluate.stamp_stage(s, con, context.run.run_id, log=context.log.info)
        changes = stats.pop("changes")
        return dg.MaterializeResult(
            metadata={
                **stats,
                "stamp_changes": dg.MetadataValue.md(
                    _table([(c["question_id"], c["anchor"], c["status"], c["reason"]) for c in changes],
                           ("test", "anchor", "status", "detail"))
                ),
            }
        )

    @dg.asset(
        name="retrievals",
        deps=[stamps, "embeddings"],
        group_name=GROUP,
        kinds={"lancedb", "duckdb"},
        code_version=settings.code_version("retriever"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description=f"Top-{settings.retriever.k} {settings.retriever.mode} retrieval for every question, with hit@k, "
        "MRR and recall@k over the anchors.",
    )
    def retrievals(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = evaluate.retrieve_stage(s, con, context.run.run_id, trigger=_trigger(context), log=context.log.info)
        return dg.MaterializeResult(metadata=stats)

    @dg.asset(
        name="answers",
        deps=[retrievals],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=settings.code_version("answerer"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description=f"Answers from the '{settings.answerer.kind}' answerer with latency and token counts.",
    )
    def answers(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = evaluate.answer_stage(s, con, context.run.run_id, log=context.log.info)
        return dg.MaterializeResult(metadata=stats)

    severity = dg.AssetCheckSeverity.ERROR if settings.gate.check_severity == "ERROR" else dg.AssetCheckSeverity.WARN

    @dg.asset(
        name="verdicts",
        deps=[answers],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=settings.code_version("verdict"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        description="pass / fail / test did not run / error per test, and unverified under the current embedder.",
        check_specs=[dg.AssetCheckSpec(name, asset="verdicts", description=d) for name, d in CHECKS.items()],
    )
    def verdicts(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            stats = evaluate.verdict_stage(s, con, context.run.run_id, log=context.log.info)
            summary = load_summary(con)
            stale_stamps = con.execute(
                "SELECT count(*) FROM latest_stamps WHERE chunker_tag = ? AND status IN ('moved', 'split', 'new')",
                [s.chunker_tag],
            ).fetchone()[0]
        assert summary is not None
        dnr = [(r.question_id, r.reason) for r in summary.rows if r.verdict == "did_not_run"]
        unv = [(r.question_id, r.test_embedder_tag or "-") for r in summary.rows if r.unverified]
        checks = [
            dg.AssetCheckResult(check_name="no_failures", passed=stats["fail"] + stats["error"] == 0, severity=severity,
                                metadata={"fail": stats["fail"], "error": stats["error"]}),
            dg.AssetCheckResult(check_name="every_test_ran", passed=stats["did_not_run"] == 0, severity=severity,
                                metadata={"did_not_run": stats["did_not_run"]}),
            dg.AssetCheckResult(check_name="verified_under_current_embedder", passed=stats["unverified"] == 0,
                                severity=severity, metadata={"unverified": stats["unverified"]}),
            dg.AssetCheckResult(check_name="golden_stamps_current", passed=stale_stamps == 0, severity=severity,
                                metadata={"stale_stamps": stale_stamps}),
        ]
        return dg.MaterializeResult(
            metadata={
                **stats,
                "summary": dg.MetadataValue.md(render_markdown(summary, s.gate.block)),
                "did_not_run_tests": dg.MetadataValue.md(_table(dnr, ("test", "reason"))),
                "unverified_tests": dg.MetadataValue.md(_table(unv, ("test", "validated under"))),
                "chunker_tag": summary.chunker_tag,
                "embedder_tag": summary.embedder_tag,
            },
            check_results=checks,
        )

    return [golden_set, stamps, retrievals, answers, verdicts]
