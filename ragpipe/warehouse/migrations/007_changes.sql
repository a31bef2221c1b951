-- What changed since the previous run on the same golden set, and which change did it (docs/warehouse.md).
-- The inputs of each run and of each test's verdict are recorded, so a flip can be attributed to its cause.

ALTER TABLE eval_runs ADD COLUMN golden_path VARCHAR;    -- the golden set file the run evaluated
ALTER TABLE eval_runs ADD COLUMN corpus_digest VARCHAR;  -- hash of every (document, content hash) at retrieval time
ALTER TABLE verdicts ADD COLUMN test_sha VARCHAR;        -- hash of the test's own line: question, answers, quote, source
ALTER TABLE verdicts ADD COLUMN source_sha VARCHAR;      -- content hash of the anchor's document (NULL: not in the corpus)
ALTER TABLE verdicts ADD COLUMN anchor_rank INTEGER;     -- rank of the first anchor chunk retrieved (NULL: not retrieved)

-- 'k 5 -> 8, mode hybrid -> fts': the keys of two JSON objects whose values differ.
CREATE MACRO json_diff(old, new) AS array_to_string(list_transform(
    list_filter(list_distinct(list_concat(json_keys(old), json_keys(new))),
                lambda k: json_extract(old, '$."' || k || '"') IS DISTINCT FROM json_extract(new, '$."' || k || '"')),
    lambda k: k || ' ' || coalesce(json_extract(old, '$."' || k || '"')::VARCHAR, 'none') || ' -> '
              || coalesce(json_extract(new, '$."' || k || '"')::VARCHAR, 'none')), ', ');

-- Every verdict beside the same test's verdict in the previous judged run on the same golden set file, with what
-- differs between the two runs' inputs (`cause`).
CREATE VIEW verdict_timeline AS
WITH runs AS (
    SELECT *, lag(eval_run_id) OVER (PARTITION BY golden_path ORDER BY started_at) AS prev_eval_run_id
    FROM eval_runs WHERE verdict_run_id IS NOT NULL
)
SELECT
    r.eval_run_id,
    r.started_at,
    r.trigger,
    v.question_id,
    v.kind,
    r.prev_eval_run_id,
    pv.verdict      AS old_verdict,
    v.verdict       AS new_verdict,
    pv.anchor_rank  AS old_anchor_rank,
    v.anchor_rank   AS new_anchor_rank,
    pv.unverified   AS old_unverified,
    v.unverified    AS new_unverified,
    v.reason,
    CASE
        WHEN r.prev_eval_run_id IS NULL THEN 'first run'
        WHEN pv.question_id IS NULL THEN 'new test'
        ELSE coalesce(nullif(concat_ws('; ',
            CASE WHEN v.test_sha IS DISTINCT FROM pv.test_sha THEN 'golden line edited' END,
            CASE WHEN v.test_embedder_tag IS DISTINCT FROM pv.test_embedder_tag THEN
                'golden line embedder_tag ' || coalesce(pv.test_embedder_tag, 'none') || ' -> '
                || coalesce(v.test_embedder_tag, 'none') END,
            CASE WHEN v.source_sha IS DISTINCT FROM pv.source_sha THEN
                CASE WHEN v.source_sha IS NULL THEN 'anchor document deleted'
                     WHEN pv.source_sha IS NULL THEN 'anchor document back'
                     ELSE 'anchor document edited' END END,
            CASE WHEN r.corpus_digest IS DISTINCT FROM p.corpus_digest
                  AND v.source_sha IS NOT DISTINCT FROM pv.source_sha THEN 'other documents changed' END,
            CASE WHEN r.chunker_tag <> p.chunker_tag THEN 'chunker ' || p.chunker_tag || ' -> ' || r.chunker_tag END,
            CASE WHEN r.embedder_tag <> p.embedder_tag THEN 'embedder ' || p.embedder_tag || ' -> ' || r.embedder_tag END,
            CASE WHEN r.retriever <> p.retriever THEN 'retriever ' || json_diff(p.retriever, r.retriever) END,
            CASE WHEN r.answerer IS DISTINCT FROM p.answerer THEN
                CASE WHEN r.answerer_label IS DISTINCT FROM p.answerer_label
                     THEN 'answerer ' || coalesce(p.answerer_label, 'none') || ' -> ' || coalesce(r.answerer_label, 'none')
                     ELSE 'answerer ' || json_diff(p.answerer, r.answerer) END END
        ), ''), 'nothing upstream changed: the answerer drifted')
    END AS cause
FROM runs r
JOIN verdicts v USING (eval_run_id)
LEFT JOIN eval_runs p ON p.eval_run_id = r.prev_eval_run_id
LEFT JOIN verdicts pv ON pv.eval_run_id = r.prev_eval_run_id AND pv.question_id = v.question_id;

-- The rows of verdict_timeline whose verdict, unverified flag or anchor rank changed since the previous run.
CREATE VIEW verdict_changes AS
SELECT * FROM verdict_timeline
WHERE prev_eval_run_id IS NOT NULL
  AND (old_verdict IS DISTINCT FROM new_verdict
       OR old_unverified IS DISTINCT FROM new_unverified
       OR old_anchor_rank IS DISTINCT FROM new_anchor_rank);
