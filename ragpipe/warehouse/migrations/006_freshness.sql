-- No stale green: what failed since the latest evaluation, and whether each of its verdicts still describes the
-- current golden set and corpus. Written by ragpipe/evaluate.py (record_failure); documented in docs/warehouse.md.

CREATE TABLE eval_failures (
    run_id     VARCHAR NOT NULL,
    asset      VARCHAR NOT NULL,    -- the evaluation asset that failed (golden_set, stamps, retrievals, answers, verdicts)
    error      VARCHAR NOT NULL,    -- the error's type and message
    failed_at  TIMESTAMP NOT NULL
);

-- latest_verdicts (migration 002) with `stale_reason`: NULL while the verdict describes the current golden set and
-- corpus; else why not (the test left the golden set, its anchor is gone, or the latest evaluation failed).
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT v.*, r.chunker_tag, r.embedder_tag, r.started_at,
    CASE
        WHEN g.question_id IS NULL THEN 'the test is no longer in the golden set'
        WHEN s.status = 'missing' AND v.verdict <> 'did_not_run' THEN 'its anchor is gone since: ' || s.reason
        WHEN f.asset IS NOT NULL THEN 'the latest evaluation failed at ' || f.asset || ' (' || strftime(f.failed_at, '%Y-%m-%d %H:%M') || ')'
    END AS stale_reason
FROM verdicts v
JOIN latest_eval_run r USING (eval_run_id)
LEFT JOIN golden_tests g USING (question_id)
LEFT JOIN latest_stamps s ON s.question_id = v.question_id AND s.chunker_tag = r.chunker_tag
LEFT JOIN (SELECT asset, failed_at FROM eval_failures ORDER BY failed_at DESC LIMIT 1) f ON f.failed_at > r.started_at;

-- One row: is the latest evaluation current? `banner` says it in words.
CREATE VIEW evaluation_status AS
WITH run AS (SELECT eval_run_id, started_at, golden_sha256 FROM latest_eval_run),
failure AS (
    SELECT asset, error, failed_at, run_id FROM eval_failures
    WHERE failed_at > coalesce((SELECT started_at FROM run), TIMESTAMP '1970-01-01')
    ORDER BY failed_at DESC LIMIT 1
),
golden AS (SELECT any_value(golden_sha256) AS sha FROM golden_tests)
SELECT
    (SELECT eval_run_id FROM run)                                         AS eval_run_id,
    (SELECT started_at FROM run)                                          AS evaluated_at,
    (SELECT asset FROM failure)                                           AS failed_asset,
    (SELECT error FROM failure)                                           AS failure,
    (SELECT failed_at FROM failure)                                       AS failed_at,
    coalesce((SELECT sha FROM golden) <> (SELECT golden_sha256 FROM run), false) AS golden_changed,
    (SELECT count(*) FROM latest_verdicts WHERE stale_reason IS NOT NULL) AS stale_tests,
    CASE
        WHEN (SELECT eval_run_id FROM run) IS NULL THEN 'no evaluation yet'
        WHEN (SELECT asset FROM failure) IS NOT NULL THEN
            'as of run ' || (SELECT eval_run_id FROM run)[:8] || ' (' || strftime((SELECT started_at FROM run), '%Y-%m-%d %H:%M')
            || '); the latest evaluation failed at ' || (SELECT asset FROM failure) || ': '
            || split_part((SELECT error FROM failure), chr(10), 1)
        WHEN coalesce((SELECT sha FROM golden) <> (SELECT golden_sha256 FROM run), false) THEN
            'as of run ' || (SELECT eval_run_id FROM run)[:8] || ', before the golden set changed'
        ELSE 'current'
    END                                                                   AS banner;
