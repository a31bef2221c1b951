"""Evaluation assets: golden_set -> stamps -> retrievals -> answers -> verdicts, with asset checks on verdicts."""

import hashlib
from contextlib import contextmanager
from typing import Any, Iterator

import dagster as dg

from ragpipe import evaluate
from ragpipe.assets.automation import RAGPIPE_CONDITION, RETRY_POLICY
from ragpipe.assets.errors import door
from ragpipe.assets.inputs import recorded_inputs
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.tables import named, table_of_tests
from ragpipe.assets.triggers import trigger_of
from ragpipe.core import REWRITES_FILE, VERDICTS
from ragpipe.reports import changes_table, load_summary, render_markdown
from ragpipe.settings import Settings
from ragpipe.versions import code_version

GROUP = "evaluate"
STAMP_CHECK = (
    "Every test's trap/evidence quote is still in the corpus. A failing check names the tests whose document "
    "was deleted or whose quote was reworded: they read did_not_run; `ragpipe golden restamp` proposes the "
    "closest passage."
)
CHECKS = {
    "no_failures": "No test failed or awaits review (a fail is the model answering wrongly with its anchor in "
    "context; needs_review an answer the rules cannot settle, never a pass).",
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
    return trigger_of(context.run.tags)


@contextmanager
def _recorded(context: dg.AssetExecutionContext, con: Any) -> Iterator[None]:
    """A failing evaluation stage leaves its error in eval_failures before Dagster sees it: `latest_verdicts` and
    `evaluation_status` then say the verdicts are older than this attempt, and why."""
    try:
        yield
    except Exception as exc:
        evaluate.record_failure(con, context.run.run_id, context.asset_key.to_user_string(), exc)
        raise  # an InputError leaves through the door (ragpipe.assets.errors): never retried


def _golden_set(settings: Settings) -> dg.AssetsDefinition:
    """The golden set file, validated and recorded; its code version hashes the file too."""

    @dg.asset(
        name="golden_set",
        deps=["documents"],
        group_name=GROUP,
        kinds={"duckdb", "json"},
        code_version=f"{code_version(settings, 'golden')}-{_golden_file_hash(settings)}",
        metadata=recorded_inputs(settings, "golden", tests=True),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description="The golden set file, validated: every problem is listed with file, line and field, and a "
        "broken file fails this asset.",
    )
    @door
    def golden_set(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            with _recorded(context, con):
                stats = evaluate.load_golden_stage(s, con, context.run.run_id, log=context.log.info)
        drifted = stats.pop("drifted")
        return dg.MaterializeResult(
            metadata={
                **stats,
                "dagster/row_count": stats["tests"],
                "path": dg.MetadataValue.path(stats["path"]),
                "corpus_drift": len(drifted),
                "drifted_tests": dg.MetadataValue.md("\n".join(f"- {d}" for d in drifted) or "(none)"),
                **recorded_inputs(s, "golden", tests=True),
            },
            data_version=dg.DataVersion(stats["sha256"][:16]),
        )

    return golden_set


def _stamps(settings: Settings, golden_set: dg.AssetsDefinition, severity: Any) -> dg.AssetsDefinition:
    """Each test's anchor located in the current chunking, with the anchors_found check."""

    @dg.asset(
        name="stamps",
        deps=["chunks", golden_set],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=code_version(settings, "golden"),
        metadata=recorded_inputs(settings, "golden"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description="Each test's trap/evidence located in the current chunking from its quote: unchanged, moved, "
        "split or missing.",
        check_specs=[dg.AssetCheckSpec("anchors_found", asset="stamps", description=STAMP_CHECK)],
    )
    @door
    def stamps(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            with _recorded(context, con):
                stats = evaluate.stamp_stage(s, con, context.run.run_id, log=context.log.info)
        changes = stats.pop("changes")
        missing = [(c["question_id"], c["reason"]) for c in changes if c["status"] == "missing"]
        return dg.MaterializeResult(
            check_results=[
                dg.AssetCheckResult(
                    check_name="anchors_found",
                    passed=not missing,
                    severity=severity,
                    description=named("anchor not found", [f"{q} ({r})" for q, r in missing], limit=5),
                    metadata={"missing": len(missing), "tests": table_of_tests(missing, ("test", "why"))},
                )
            ],
            metadata={
                **stats,
                **recorded_inputs(s, "golden"),
                "stamp_changes": table_of_tests(
                    [(c["question_id"], c["anchor"], c["status"], c["reason"]) for c in changes],
                    ("test", "anchor", "status", "detail"),
                ),
            },
        )

    return stamps


def _retrievals(settings: Settings, stamps: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """Top-k retrieval for every question: an eval run opens."""

    @dg.asset(
        name="retrievals",
        deps=[stamps, "embeddings", *(["subject"] if settings.subject.kind != "pipeline" else [])],
        group_name=GROUP,
        kinds={"lancedb", "duckdb"},
        code_version=code_version(settings, "retriever"),
        metadata=recorded_inputs(settings, "retriever"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description=f"Top-{settings.retriever.k} {settings.retriever.mode} retrieval for every question, with hit@k, "
        "MRR and recall@k over the anchors.",
    )
    @door
    def retrievals(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            with _recorded(context, con):
                stats = evaluate.retrieve_stage(
                    s, con, context.run.run_id, trigger=_trigger(context), log=context.log.info
                )
        return dg.MaterializeResult(metadata={**stats, **recorded_inputs(s, "retriever")})

    return retrievals


def _answers(settings: Settings, retrievals: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The answerer on every question of the latest eval run."""

    @dg.asset(
        name="answers",
        deps=[retrievals],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=code_version(settings, "answerer"),
        metadata=recorded_inputs(settings, "answerer"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description=f"Answers from the '{settings.answerer.kind}' answerer with latency and token counts.",
    )
    @door
    def answers(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            with _recorded(context, con):
                stats = evaluate.answer_stage(
                    s, con, context.run.run_id, log=context.log.info, trigger=_trigger(context)
                )
        return dg.MaterializeResult(metadata={**stats, **recorded_inputs(s, "answerer")})

    return answers


def _gate(blocking: list[Any]) -> str:
    """OK, or BLOCKED with the count of each blocking verdict: the gate as the Runs list shows it."""
    return (
        "OK"
        if not blocking
        else "BLOCKED ("
        + ", ".join(
            f"{n} {k}"
            for k in ("fail", "needs_review", "error", "did_not_run")
            if (n := sum(r.verdict == k for r in blocking))
        )
        + ")"
    )


def _verdict_checks(
    stats: dict[str, Any], stale: list[str], severity: Any, by: dict[str, list[str]]
) -> list[dg.AssetCheckResult]:
    """The four checks on verdicts (CHECKS), from the verdicts stage's counts; a failing one names its tests."""
    blocking = [named(k, by[k]) for k in ("fail", "needs_review", "error")]
    return [
        dg.AssetCheckResult(
            check_name="no_failures",
            passed=stats["fail"] + stats["error"] + stats["needs_review"] == 0,
            severity=severity,
            description="; ".join(b for b in blocking if b) or None,
            metadata={"fail": stats["fail"], "needs_review": stats["needs_review"], "error": stats["error"]},
        ),
        dg.AssetCheckResult(
            check_name="every_test_ran",
            passed=stats["did_not_run"] == 0,
            severity=severity,
            description=named("did not run", by["did_not_run"]),
            metadata={"did_not_run": stats["did_not_run"]},
        ),
        dg.AssetCheckResult(
            check_name="verified_under_current_embedder",
            passed=stats["unverified"] == 0,
            severity=severity,
            description=named("unverified", by["unverified"]),
            metadata={"unverified": stats["unverified"]},
        ),
        dg.AssetCheckResult(
            check_name="golden_stamps_current",
            passed=not stale,
            severity=severity,
            description=f"{named('stale stamps', stale)}; fix: ragpipe golden restamp --write" if stale else None,
            metadata={"stale_stamps": len(stale)},
        ),
    ]


def _verdicts(settings: Settings, answers: dg.AssetsDefinition, severity: Any) -> dg.AssetsDefinition:
    """The verdicts, the gate as a run tag, and the checks on verdicts."""

    @dg.asset(
        name="verdicts",
        deps=[answers],
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=code_version(settings, "verdict"),
        metadata=recorded_inputs(settings, "verdict"),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description="pass / fail / needs review / test did not run / error per test, and unverified under the current "
        "embedder.",
        check_specs=[dg.AssetCheckSpec(name, asset="verdicts", description=d) for name, d in CHECKS.items()],
    )
    @door
    def verdicts(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            with _recorded(context, con):
                stats = evaluate.verdict_stage(
                    s, con, context.run.run_id, log=context.log.info, trigger=_trigger(context)
                )
            summary = load_summary(con)
            stale = [
                q
                for (q,) in con.execute(
                    "SELECT DISTINCT question_id FROM latest_stamps WHERE chunker_tag = ? AND list_contains(?, status) "
                    "ORDER BY question_id",
                    [s.chunker_tag, list(REWRITES_FILE)],
                ).fetchall()
            ]
        assert summary is not None
        gate = _gate(summary.blocking(s.gate.block))
        # The gate in the Runs list: a run that succeeded can still have blocked the gate.
        context.instance.add_run_tags(context.run.run_id, {"ragpipe/gate": gate})
        failing = [(r.question_id, r.verdict, r.reason) for r in summary.rows if r.verdict in ("fail", "error")]
        dnr = [(r.question_id, r.reason) for r in summary.rows if r.verdict == "did_not_run"]
        review = [
            (r.question_id, r.reason, " ".join(r.answer.split())[:200])
            for r in summary.rows
            if r.verdict == "needs_review"
        ]
        unv = [(r.question_id, r.test_embedder_tag or "-") for r in summary.rows if r.unverified]
        by = {k: [r.question_id for r in summary.rows if r.verdict == k] for k in VERDICTS}
        by["unverified"] = [r.question_id for r in summary.rows if r.unverified]
        checks = _verdict_checks(stats, stale, severity, by)
        return dg.MaterializeResult(
            metadata={
                **stats,
                "gate": gate,
                "failing_tests": table_of_tests(failing, ("test", "verdict", "reason")),
                "did_not_run_tests": table_of_tests(dnr, ("test", "reason")),
                "needs_review_tests": table_of_tests(review, ("test", "why unsure", "answer")),
                "unverified_tests": table_of_tests(unv, ("test", "validated under")),
                "summary": dg.MetadataValue.md(render_markdown(summary, s.gate.block)),
                "changed_since_last_run": dg.MetadataValue.md(
                    "\n".join(changes_table(summary.changes)) if summary.changes else "(none)"
                ),
                "changed": len(summary.changes),
                "chunker_tag": summary.chunker_tag,
                "embedder_tag": summary.embedder_tag,
                **recorded_inputs(s, "verdict"),
            },
            check_results=checks,
        )

    return verdicts


def build_eval_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    severity = dg.AssetCheckSeverity.ERROR if settings.gate.check_severity == "ERROR" else dg.AssetCheckSeverity.WARN
    golden_set = _golden_set(settings)
    stamps = _stamps(settings, golden_set, severity)
    retrievals = _retrievals(settings, stamps)
    answers = _answers(settings, retrievals)
    return [golden_set, stamps, retrievals, answers, _verdicts(settings, answers, severity)]
