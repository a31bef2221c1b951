"""Evaluation assets: golden_set -> stamps -> retrievals -> answers -> verdicts, with asset checks on stamps and
verdicts. Each is one row of EVAL_STAGES; assets/stages.py builds them all with one policy."""

import hashlib
from typing import Any

import dagster as dg

from ragpipe.assets.stages import Stage, StageRun, stage_asset
from ragpipe.assets.tables import named, table_of_tests
from ragpipe.core import REWRITES_FILE, VERDICTS
from ragpipe.reports import changes_table, load_summary, render_markdown
from ragpipe.settings import Settings

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


def _golden_set_result(step: StageRun) -> dg.MaterializeResult:
    stats = dict(step.stats)
    drifted = stats.pop("drifted")
    return dg.MaterializeResult(
        metadata={
            **stats,
            "dagster/row_count": stats["tests"],
            "path": dg.MetadataValue.path(stats["path"]),
            "corpus_drift": len(drifted),
            "drifted_tests": dg.MetadataValue.md("\n".join(f"- {d}" for d in drifted) or "(none)"),
            **step.recorded(),
        },
        data_version=dg.DataVersion(stats["sha256"][:16]),
    )


def _stamps_result(step: StageRun) -> dg.MaterializeResult:
    stats = dict(step.stats)
    changes = stats.pop("changes")
    missing = [(c["question_id"], c["reason"]) for c in changes if c["status"] == "missing"]
    return dg.MaterializeResult(
        check_results=[
            dg.AssetCheckResult(
                check_name="anchors_found",
                passed=not missing,
                severity=step.severity,
                description=named("anchor not found", [f"{q} ({r})" for q, r in missing], limit=5),
                metadata={"missing": len(missing), "tests": table_of_tests(missing, ("test", "why"))},
            )
        ],
        metadata={
            **stats,
            **step.recorded(),
            "stamp_changes": table_of_tests(
                [(c["question_id"], c["anchor"], c["status"], c["reason"]) for c in changes],
                ("test", "anchor", "status", "detail"),
            ),
        },
    )


def _stats_result(step: StageRun) -> dg.MaterializeResult:
    """The library's stats and the recorded inputs: what retrievals and answers record."""
    return dg.MaterializeResult(metadata={**step.stats, **step.recorded()})


def _gate(blocking: list[Any], block: tuple[str, ...]) -> dict[str, str]:
    """The gate as the Runs list shows it: `ragpipe/gate` OK or BLOCKED, and `ragpipe/blocking` with the count of
    each blocking verdict in short words (and of unverified tests when [gate].block has it): the list cuts long
    tags."""
    if not blocking:
        return {"ragpipe/gate": "OK", "ragpipe/blocking": "none"}
    short = {"fail": "fail", "needs_review": "review", "error": "error", "did_not_run": "not run"}
    counts = [(word, sum(r.verdict == k for r in blocking)) for k, word in short.items()]
    if "unverified" in block:
        counts.append(("unverified", sum(r.unverified for r in blocking)))
    return {"ragpipe/gate": "BLOCKED", "ragpipe/blocking": ", ".join(f"{n} {k}" for k, n in counts if n)}


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


def _verdicts_result(step: StageRun) -> dg.MaterializeResult:
    summary = load_summary(step.con)
    stale = [
        q
        for (q,) in step.con.execute(
            "SELECT DISTINCT question_id FROM latest_stamps WHERE chunker_tag = ? AND list_contains(?, status) "
            "ORDER BY question_id",
            [step.settings.chunker_tag, list(REWRITES_FILE)],
        ).fetchall()
    ]
    assert summary is not None
    tags = _gate(summary.blocking(step.settings.gate.block), step.settings.gate.block)
    # The gate in the Runs list: a run that succeeded can still have blocked the gate.
    step.context.instance.add_run_tags(step.context.run.run_id, tags)
    gate = tags["ragpipe/gate"] + (f" ({tags['ragpipe/blocking']})" if tags["ragpipe/gate"] == "BLOCKED" else "")
    failing = [(r.question_id, r.verdict, r.reason) for r in summary.rows if r.verdict in ("fail", "error")]
    dnr = [(r.question_id, r.reason) for r in summary.rows if r.verdict == "did_not_run"]
    review = [
        (r.question_id, r.reason, " ".join(r.answer.split())[:200]) for r in summary.rows if r.verdict == "needs_review"
    ]
    unv = [(r.question_id, r.test_embedder_tag or "-") for r in summary.rows if r.unverified]
    by = {k: [r.question_id for r in summary.rows if r.verdict == k] for k in VERDICTS}
    by["unverified"] = [r.question_id for r in summary.rows if r.unverified]
    checks = _verdict_checks(step.stats, stale, step.severity, by)
    return dg.MaterializeResult(
        metadata={
            **step.stats,
            "gate": gate,
            "failing_tests": table_of_tests(failing, ("test", "verdict", "reason")),
            "did_not_run_tests": table_of_tests(dnr, ("test", "reason")),
            "needs_review_tests": table_of_tests(review, ("test", "why unsure", "answer")),
            "unverified_tests": table_of_tests(unv, ("test", "validated under")),
            "summary": dg.MetadataValue.md(render_markdown(summary, step.settings.gate.block)),
            "changed_since_last_run": dg.MetadataValue.md(
                "\n".join(changes_table(summary.changes)) if summary.changes else "(none)"
            ),
            "changed": len(summary.changes),
            "chunker_tag": summary.chunker_tag,
            "embedder_tag": summary.embedder_tag,
            **step.recorded(),
        },
        check_results=checks,
    )


GOLDEN_SET = Stage(
    name="golden_set",
    upstream=lambda s: ["documents"],
    version="golden",
    run="load_golden_stage",
    result=_golden_set_result,
    kinds=("duckdb", "json"),
    records_tests=True,
    version_suffix=_golden_file_hash,
    description=lambda s: (
        "The golden set file, validated: every problem is listed with file, line and field, and a "
        "broken file fails this asset."
    ),
)
STAMPS = Stage(
    name="stamps",
    upstream=lambda s: ["chunks", "golden_set"],
    version="golden",
    run="stamp_stage",
    result=_stamps_result,
    checks={"anchors_found": STAMP_CHECK},
    description=lambda s: (
        "Each test's trap/evidence located in the current chunking from its quote: unchanged, moved, split or missing."
    ),
)
RETRIEVALS = Stage(
    name="retrievals",
    upstream=lambda s: ["stamps", "embeddings", *(["subject"] if s.subject.kind != "pipeline" else [])],
    version="retriever",
    run="retrieve_stage",
    result=_stats_result,
    kinds=("lancedb", "duckdb"),
    takes_trigger=True,
    description=lambda s: (
        f"Top-{s.retriever.k} {s.retriever.mode} retrieval for every question, with hit@k, "
        "MRR and recall@k over the anchors."
    ),
)
ANSWERS = Stage(
    name="answers",
    upstream=lambda s: ["retrievals"],
    version="answerer",
    run="answer_stage",
    result=_stats_result,
    takes_trigger=True,
    description=lambda s: f"Answers from the '{s.answerer.kind}' answerer with latency and token counts.",
)
VERDICTS_STAGE = Stage(
    name="verdicts",
    upstream=lambda s: ["answers"],
    version="verdict",
    run="verdict_stage",
    result=_verdicts_result,
    checks=CHECKS,
    takes_trigger=True,
    description=lambda s: (
        "pass / fail / needs review / test did not run / error per test, and unverified under the current embedder."
        + (
            " The configured answerer is the extractive baseline (no language model): its fails are expected and "
            "show what the gate catches; set [answerer] to a model to evaluate it."
            if s.answerer.kind == "extractive"
            else ""
        )
    ),
)
EVAL_STAGES = (GOLDEN_SET, STAMPS, RETRIEVALS, ANSWERS, VERDICTS_STAGE)  # in pipeline order


def build_eval_assets(settings: Settings, stages: tuple[Stage, ...] = EVAL_STAGES) -> list[dg.AssetsDefinition]:
    """One asset per row, in order (a test adds a stage by passing one more row)."""
    severity = dg.AssetCheckSeverity.ERROR if settings.gate.check_severity == "ERROR" else dg.AssetCheckSeverity.WARN
    return [stage_asset(stage, settings, severity) for stage in stages]
