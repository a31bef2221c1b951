-- The optional LLM judge ([judge] in the settings): its raw reply is kept beside the verdict it decided.
ALTER TABLE verdicts ADD COLUMN judge_reply VARCHAR;  -- NULL unless the rules could not settle the answer and a judge was asked

-- verdict_history (migration 003) with the judge's reply beside each verdict.
CREATE OR REPLACE VIEW verdict_history AS
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
    r.verdict_run_id,
    v.judge_reply
FROM verdicts v
JOIN eval_runs r USING (eval_run_id);
