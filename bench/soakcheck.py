"""What bench/soak.py checks once the daemon has caught up: runs, corpus states, deploys, traces, the warehouse
against the corpus on disk, every table read in full, memory slopes, processes left."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

LONG_LIVED = ("webserver", "daemon", "code server", "app")
WARM_UP_S = 180  # of each process's own life: imports, models, caches


def runs_summary(runs: list[dict[str, Any]], failed: dict[str, list[str]]) -> dict[str, Any]:
    by = Counter(f"{r['jobName']} {r['status']}" for r in runs)
    triggers = Counter(r["tags"].get("ragpipe/trigger", "(none)") for r in runs)
    return {"runs": len(runs), "by_job_and_status": dict(sorted(by.items())), "by_trigger": dict(triggers),
            "not_successful": failed}  # fmt: skip


def corpus_states(changes: list[dict[str, Any]], versions: list[str | None]) -> dict[str, Any]:
    """Each corpus state the soak left, against the states the `corpus` asset read (its data versions, in order): a
    state is read, or superseded (a later change came before any run read it); a run that read the state the run
    before it had read did a whole evaluation for nothing."""
    read = set(versions)
    superseded = [c for c in changes if c["digest"][:16] not in read]
    repeats = sum(a == b for a, b in zip(versions, versions[1:]))
    return {"changes": len(changes), "ops": dict(Counter(c["op"] for c in changes)),
            "states_read": len(changes) - len(superseded), "superseded": superseded,
            "corpus_runs_that_read_nothing_new": repeats, "corpus_materializations": len(versions),
            "last_state_read": bool(changes) and versions[-1:] == [changes[-1]["digest"][:16]]}  # fmt: skip


def warehouse(p: Any, con: Any) -> dict[str, Any]:
    """The warehouse against the corpus on disk: documents (path, sha256), chunks of the current chunker, vectors in
    DuckDB and in LanceDB; and every base table read in full (DuckDB checks each block's checksum as it reads)."""
    from killkit import lance

    from ragpipe.ingest import scan_corpus

    s = p.settings()
    on_disk = {f.path: f.sha256 for f in scan_corpus(s.corpus.dir, s.corpus.exclude).files}
    docs = dict(con.execute("SELECT doc_id, sha256 FROM documents").fetchall())
    chunks = {
        r[0] for r in con.execute("SELECT chunk_id FROM chunks WHERE chunker_tag = ?", [s.chunker_tag]).fetchall()
    }
    chunk_docs = {
        r[0]
        for r in con.execute("SELECT DISTINCT doc_id FROM chunks WHERE chunker_tag = ?", [s.chunker_tag]).fetchall()
    }
    vectors = {
        r[0] for r in con.execute("SELECT chunk_id FROM embeddings WHERE chunker_tag = ?", [s.chunker_tag]).fetchall()
    }
    in_lance = set(lance(p))
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
    rows = {t: con.execute(f'SELECT count(*), sum(hash(x)) FROM "{t}" AS x').fetchone()[0] for t in tables}  # noqa: S608
    return {
        "documents_equal_corpus": docs == on_disk,
        "documents_missing": sorted(set(on_disk) - set(docs)),
        "documents_extra": sorted(set(docs) - set(on_disk)),
        "documents_stale": sorted(k for k in set(docs) & set(on_disk) if docs[k] != on_disk[k]),
        "chunks_of_unknown_documents": len(chunk_docs - set(docs)),
        "chunks": len(chunks),
        "vectors_equal_chunks": vectors == chunks,
        "lancedb_equal_chunks": in_lance == chunks,
        "tables_read_in_full": len(rows),
        "rows": rows,
    }


def deploys(deployed: list[dict[str, Any]], con: Any) -> dict[str, Any]:
    """Each deploy against the evaluations that ran on it (the app's version is in eval_runs.retriever), and the
    evaluations an observation of the app started although its version was the one already evaluated."""
    evals = con.execute(
        "SELECT trigger, retriever FROM eval_runs WHERE subject IS NOT NULL ORDER BY started_at"
    ).fetchall()
    order: list[tuple[str, str]] = []
    for trigger, retriever in evals:
        try:
            order.append((trigger or "", str(json.loads(retriever).get("version"))))
        except (TypeError, ValueError, AttributeError):
            order.append((trigger or "", "?"))
    by_version: dict[str, list[str]] = defaultdict(list)
    for trigger, version in order:
        by_version[version].append(trigger)
    again = [{"version": v, "trigger": t} for (_, pv), (t, v) in zip(order, order[1:]) if "subject" in t and v == pv]
    rows = [{"version": d["version"], "embedder": d["embedder"], "evaluations": len(by_version[d["version"]]),
             "by_trigger": dict(Counter(by_version[d["version"]]))} for d in deployed]  # fmt: skip
    return {"deploys": len(deployed), "evaluated": sum(r["evaluations"] > 0 for r in rows),
            "evaluations": len(order), "app_unchanged_but_evaluated_for_it": again, "per_deploy": rows}  # fmt: skip


def traces(good: int, bad: int, con: Any) -> dict[str, Any]:
    n, distinct = con.execute("SELECT count(*), count(DISTINCT trace_id) FROM production_traces").fetchone()
    problems = con.execute("SELECT count(*) FROM trace_problems").fetchone()[0]
    return {"written": good, "stored": n, "distinct": distinct, "cut_off_lines_written": bad,
            "problems_recorded": problems}  # fmt: skip


def memory(samples: list[tuple[float, int, str, float]]) -> dict[str, Any]:
    """Per role: processes seen, peak resident MB, and the slope (MB an hour) of each long-lived process over its
    life after warm-up (only processes watched for at least five minutes after it)."""
    per_pid: dict[int, list[tuple[float, float]]] = defaultdict(list)
    role_of: dict[int, str] = {}
    for t, pid, role, mb in samples:
        per_pid[pid].append((t, mb))
        role_of[pid] = role
    from bench.soakkit import slope_mb_per_h

    out: dict[str, Any] = {}
    for role in sorted(set(role_of.values())):
        pids = [p for p, r in role_of.items() if r == role]
        slopes = []
        for pid in pids:
            born = per_pid[pid][0][0]
            warm = [(t, mb) for t, mb in per_pid[pid] if t - born >= WARM_UP_S]
            if role in LONG_LIVED and len(warm) >= 2 and warm[-1][0] - warm[0][0] >= 300:
                slopes.append({"pid": pid, "minutes": round((warm[-1][0] - warm[0][0]) / 60, 1),
                               "start_mb": round(warm[0][1]), "end_mb": round(warm[-1][1]),
                               "slope_mb_per_h": round(slope_mb_per_h(warm), 1)})  # fmt: skip
        out[role] = {"processes": len(pids), "peak_mb": round(max(mb for p in pids for _, mb in per_pid[p])),
                     "slopes": slopes}  # fmt: skip
    return out


def report(work: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """The soak's outcome from its work directory (the project, the instance home) and what it recorded there."""
    import dagster as dg
    from conftest import Project

    from ragpipe.warehouse import connect

    p = Project(work / "proj", dg.DagsterInstance.ephemeral())
    with dg.DagsterInstance.from_config(str(work / "home")) as instance:
        records = instance.fetch_materializations(dg.AssetKey("corpus"), limit=10_000).records
        versions = [(r.asset_materialization.tags or {}).get("dagster/data_version") for r in
                    sorted(records, key=lambda r: r.storage_id) if r.asset_materialization]  # fmt: skip
    with connect(p.settings().duckdb_path, read_only=True) as con:
        wh = warehouse(p, con)
        dep = deploys(raw["deploys"], con)
        tr = traces(*raw["traces"], con)
    runs, stopped = raw["runs"], raw["stopped"]
    result = {
        "runs": runs_summary(runs, raw["failed"]),
        "corpus": corpus_states(raw["changes"], versions),
        "deploys": dep,
        "traces": tr,
        "warehouse": wh,
        "memory": memory([tuple(x) for x in raw["samples"]]),
        "daemon_kills_at_s": raw["kills"],
        "stopped": stopped,
        "settle_s": round(raw["settle_s"]),
        "changes": raw["changes"],
    }
    mem, corpus = result["memory"], result["corpus"]
    no_change = [r for r in runs if r["jobName"] == "__ASSET_JOB" and r["tags"].get("ragpipe/trigger") == "settings"]
    result["summary"] = {
        "minutes": raw["minutes"],
        "runs": result["runs"]["by_job_and_status"],
        "runs_not_successful": len(raw["failed"]),
        "automation_runs_with_no_changed_input": len(no_change),
        "corpus_changes": corpus["changes"],
        "corpus_states_read": corpus["states_read"],
        "corpus_states_superseded_before_a_run_read_them": len(corpus["superseded"]),
        "corpus_runs_that_read_nothing_new": corpus["corpus_runs_that_read_nothing_new"],
        "last_corpus_state_read": corpus["last_state_read"],
        "deploys": dep["deploys"],
        "deploys_evaluated": dep["evaluated"],
        "evaluations_against_the_app": dep["evaluations"],
        "evaluations_for_an_unchanged_app": len(dep["app_unchanged_but_evaluated_for_it"]),
        "traces_written_stored_distinct": [tr["written"], tr["stored"], tr["distinct"]],
        "cut_off_lines_written_recorded": [tr["cut_off_lines_written"], tr["problems_recorded"]],
        "warehouse_equal_corpus": wh["documents_equal_corpus"]
        and wh["vectors_equal_chunks"]
        and wh["lancedb_equal_chunks"],
        "tables_read_in_full": wh["tables_read_in_full"],
        "daemon_kills": len(raw["kills"]),
        "max_slope_mb_per_h": {
            r: max((s["slope_mb_per_h"] for s in v["slopes"]), default=None) for r, v in mem.items()
        },
        "peak_mb": {r: v["peak_mb"] for r, v in mem.items()},
        "processes_left": stopped["left_90s_after"],
        "exited_on_sigterm": stopped["exited_on_sigterm"],
        "settle_s": round(raw["settle_s"]),
    }
    return result


if __name__ == "__main__":  # the report again from a soak's work directory: python bench/soakcheck.py WORK_DIR
    import sys

    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("", "tests")]
    import conftest  # noqa: F401  (the offline environment, as the suite has it)

    from bench._common import RESULTS, write_json

    work = Path(sys.argv[1])
    result = report(work, json.loads((work / "raw.json").read_text()))
    write_json(RESULTS / "soak.json", result)
    print(json.dumps(result["summary"], indent=2))
