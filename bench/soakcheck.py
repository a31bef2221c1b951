"""What bench/soak.py checks once the daemon has caught up: runs, corpus states, deploys, traces, the warehouse
against the corpus on disk, every table read in full, memory slopes, processes left."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

LONG_LIVED = ("webserver", "daemon", "code server", "app")
WARM_UP_S = 180  # of each process's own life: imports, models, caches


def runs_summary(runs: list[dict[str, Any]], failed: dict[str, list[str]]) -> dict[str, Any]:
    by = Counter(f"{r['jobName']} {r['status']}" for r in runs)
    triggers = Counter(r["tags"].get("ragpipe/trigger", "(none)") for r in runs)
    return {"runs": len(runs), "by_job_and_status": dict(sorted(by.items())), "by_trigger": dict(triggers),
            "not_successful": failed}  # fmt: skip


def corpus_states(changes: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each corpus state the soak left, against the corpus runs the sensor launched for it."""
    launched = Counter(
        r["tags"].get("ragpipe/corpus_manifest") for r in runs if r["tags"].get("ragpipe/trigger") == "corpus"
    )
    per = [launched[c["digest"][:16]] for c in changes]
    never = [c for c, n in zip(changes, per) if n == 0]
    return {"changes": len(changes), "ops": dict(Counter(c["op"] for c in changes)),
            "evaluated_once": per.count(1), "evaluated_twice_or_more": sum(n > 1 for n in per),
            "never_launched": never, "corpus_runs": sum(launched.values())}  # fmt: skip


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


def traces(written: Any, con: Any) -> dict[str, Any]:
    n, distinct = con.execute("SELECT count(*), count(DISTINCT trace_id) FROM production_traces").fetchone()
    problems = con.execute("SELECT count(*) FROM trace_problems").fetchone()[0]
    return {"written": written.good, "stored": n, "distinct": distinct, "cut_off_lines_written": written.bad,
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


def report(soak: Any, runs: list[dict[str, Any]], failed: dict[str, list[str]], stopped: dict[str, Any],
           settle_s: float) -> dict[str, Any]:  # fmt: skip
    from ragpipe.warehouse import connect

    with connect(soak.p.settings().duckdb_path, read_only=True) as con:
        wh = warehouse(soak.p, con)
        dep = deploys(soak.deploys, con)
        tr = traces(soak.traces, con)
    result = {
        "runs": runs_summary(runs, failed),
        "corpus": corpus_states(soak.corpus.changes, runs),
        "deploys": dep,
        "traces": tr,
        "warehouse": wh,
        "memory": memory(soak.samples),
        "daemon_kills_at_s": soak.kills,
        "stopped": stopped,
        "settle_s": round(settle_s),
        "changes": soak.corpus.changes,
    }
    mem = result["memory"]
    result["summary"] = {
        "minutes": soak.args.minutes,
        "runs": result["runs"]["by_job_and_status"],
        "runs_not_successful": len(failed),
        "corpus_changes": result["corpus"]["changes"],
        "corpus_states_evaluated_once": result["corpus"]["evaluated_once"],
        "corpus_states_twice_or_more": result["corpus"]["evaluated_twice_or_more"],
        "corpus_states_never_launched": len(result["corpus"]["never_launched"]),
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
        "daemon_kills": len(soak.kills),
        "max_slope_mb_per_h": {
            r: max((s["slope_mb_per_h"] for s in v["slopes"]), default=None) for r, v in mem.items()
        },
        "peak_mb": {r: v["peak_mb"] for r, v in mem.items()},
        "processes_left": stopped["left_90s_after"],
        "exited_on_sigterm": stopped["exited_on_sigterm"],
        "settle_s": round(settle_s),
    }
    return result
