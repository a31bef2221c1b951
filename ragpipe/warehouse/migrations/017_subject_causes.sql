-- Causes that name the input that changed, once each, also for the team's app as the subject under test:
-- * a run against the app after one of ragpipe's own pipeline (or back) names the switch, not the corpus digest or
--   the embedder that the two runs do not share;
-- * between two runs against the app, its identity fields are named once, by name ("app embedder minilm ->
--   minilm-128, version 1 -> 2"), not as the embedder and again as the retriever;
-- and the figures of a run say which tests they are over.

ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS metric_tests INTEGER;          -- tests hit@k, MRR and recall@k are over
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS anchors_not_returned INTEGER;  -- of those, against the app: anchors
                                                                              -- in none of its contexts (each a miss)

-- 'version 1 -> 2, embedder minilm -> minilm-128': the fields of two app identities (eval_runs.retriever of a run
-- against the app) whose values differ, plain, in the fields' order, without the subject's own label.
CREATE OR REPLACE MACRO identity_diff(old, new) AS array_to_string(list_transform(
    list_filter(list_sort(list_distinct(list_concat(json_keys(old), json_keys(new)))),
                lambda k: k <> 'subject'
                    AND json_extract(old, '$."' || k || '"') IS DISTINCT FROM json_extract(new, '$."' || k || '"')),
    lambda k: k || ' ' || coalesce(json_extract_string(old, '$."' || k || '"'), 'none') || ' -> '
              || coalesce(json_extract_string(new, '$."' || k || '"'), 'none')), ', ');

CREATE OR REPLACE VIEW verdict_timeline AS
WITH runs AS (
    SELECT *, lag(eval_run_id) OVER (PARTITION BY golden_path ORDER BY started_at) AS prev_eval_run_id
    FROM eval_runs WHERE verdict_run_id IS NOT NULL
),
pairs AS (
    SELECT
        r.eval_run_id, r.started_at, r.trigger, v.question_id, v.kind, r.prev_eval_run_id,
        pv.verdict AS old_verdict, v.verdict AS new_verdict, pv.anchor_rank AS old_anchor_rank,
        v.anchor_rank AS new_anchor_rank, pv.unverified AS old_unverified, v.unverified AS new_unverified, v.reason,
        pv.question_id IS NULL AS new_test,
        r.subject, p.subject AS old_subject,
        concat_ws('; ',
            CASE WHEN v.test_sha IS DISTINCT FROM pv.test_sha THEN 'golden line edited' END,
            CASE WHEN v.test_embedder_tag IS DISTINCT FROM pv.test_embedder_tag THEN
                'golden line embedder_tag ' || coalesce(pv.test_embedder_tag, 'none') || ' -> '
                || coalesce(v.test_embedder_tag, 'none') END
        ) AS golden_change,
        concat_ws('; ',
            CASE WHEN v.source_sha IS DISTINCT FROM pv.source_sha THEN
                CASE WHEN v.source_sha IS NULL THEN 'anchor document deleted'
                     WHEN pv.source_sha IS NULL THEN 'anchor document back'
                     ELSE 'anchor document edited' END END,
            CASE WHEN r.corpus_digest IS DISTINCT FROM p.corpus_digest
                  AND v.source_sha IS NOT DISTINCT FROM pv.source_sha THEN 'other documents changed' END,
            CASE WHEN r.chunker_tag <> p.chunker_tag THEN 'chunker ' || p.chunker_tag || ' -> ' || r.chunker_tag END,
            CASE WHEN r.embedder_tag <> p.embedder_tag THEN 'embedder ' || p.embedder_tag || ' -> ' || r.embedder_tag END,
            CASE WHEN r.retriever <> p.retriever THEN 'retriever ' || json_diff(p.retriever, r.retriever) END
        ) AS pipeline_change,
        'app ' || nullif(concat_ws(', ',
            CASE WHEN r.subject <> p.subject THEN p.subject || ' -> ' || r.subject END,
            nullif(identity_diff(p.retriever, r.retriever), '')
        ), '') AS app_change,
        CASE WHEN r.answerer IS DISTINCT FROM p.answerer THEN
            CASE WHEN r.answerer_label IS DISTINCT FROM p.answerer_label
                 THEN 'answerer ' || coalesce(p.answerer_label, 'none') || ' -> ' || coalesce(r.answerer_label, 'none')
                 ELSE 'answerer ' || json_diff(p.answerer, r.answerer) END END AS answerer_change
    FROM runs r
    JOIN verdicts v USING (eval_run_id)
    LEFT JOIN eval_runs p ON p.eval_run_id = r.prev_eval_run_id
    LEFT JOIN verdicts pv ON pv.eval_run_id = r.prev_eval_run_id AND pv.question_id = v.question_id
)
SELECT
    eval_run_id, started_at, trigger, question_id, kind, prev_eval_run_id, old_verdict, new_verdict,
    old_anchor_rank, new_anchor_rank, old_unverified, new_unverified, reason,
    CASE
        WHEN prev_eval_run_id IS NULL THEN 'first run'
        WHEN new_test THEN 'new test'
        WHEN (subject IS NULL) <> (old_subject IS NULL) THEN concat_ws('; ',
            nullif(golden_change, ''),
            'subject ' || coalesce(old_subject, 'ragpipe''s own pipeline') || ' -> '
            || coalesce(subject, 'ragpipe''s own pipeline'))
        WHEN subject IS NOT NULL THEN coalesce(nullif(concat_ws('; ',
            nullif(golden_change, ''), nullif(app_change, ''), answerer_change
        ), ''), 'nothing recorded changed (the app''s identity, the golden line, the answerer): the app''s replies drifted')
        ELSE coalesce(nullif(concat_ws('; ',
            nullif(golden_change, ''), nullif(pipeline_change, ''), answerer_change
        ), ''), 'nothing upstream changed: the answerer drifted')
    END AS cause
FROM pairs;
