-- Views for querying results over time and across embedders and chunkers (documented in docs/warehouse.md).
-- Views only: no data is moved, and the views read the tables of 001 and 002 as they are.

-- One row per (eval run, test): the verdict with the time, chunker, embedder and answerer of the run that judged it.
CREATE VIEW verdict_history AS
SELECT
    v.eval_run_id,
    r.started_at,
    v.judged_at,
    r.chunker_tag,
    r.embedder_tag,
    r.answerer_label,
    r.trigger,
    v.question_id,
    v.kind,
    v.verdict,
    v.reason,
    v.anchor_ids,
    v.anchor_retrieved,
    v.refused,
    v.took_trap,
    v.matched_by,
    v.unverified,
    v.test_embedder_tag,
    r.verdict_run_id
FROM verdicts v
JOIN eval_runs r USING (eval_run_id);

-- One row per judged eval run: verdict counts beside the run's retrieval metrics and tags.
CREATE VIEW eval_run_summary AS
SELECT
    r.eval_run_id,
    r.started_at,
    r.trigger,
    r.chunker_tag,
    r.embedder_tag,
    r.answerer_label,
    r.n_tests,
    count(v.question_id)                                  AS n_verdicts,
    count(v.question_id) FILTER (WHERE v.verdict = 'pass')        AS n_pass,
    count(v.question_id) FILTER (WHERE v.verdict = 'fail')        AS n_fail,
    count(v.question_id) FILTER (WHERE v.verdict = 'did_not_run') AS n_did_not_run,
    count(v.question_id) FILTER (WHERE v.verdict = 'error')       AS n_error,
    count(v.question_id) FILTER (WHERE v.unverified)              AS n_unverified,
    r.k,
    r.hit_at_k,
    r.mrr,
    r.recall_at_k,
    r.answered_run_id,
    r.verdict_run_id
FROM eval_runs r
LEFT JOIN verdicts v USING (eval_run_id)
WHERE r.verdict_run_id IS NOT NULL
GROUP BY ALL;
