-- A person's decisions on verdicts, and the verdict the rule (or the judge) gave before a decision replaced it.
-- A review is keyed by the test's own content (verdicts.test_sha) and the answer text it judged, so it is reused on
-- every later run that produces the same answer to the same test, and never applied to another answer.

CREATE TABLE IF NOT EXISTS reviews (
    test_sha      VARCHAR NOT NULL,   -- the test's own content (question, expected answer, trap, quote, source)
    answer_sha    VARCHAR NOT NULL,   -- sha256 of the answer text the decision was made on
    question_id   VARCHAR NOT NULL,
    decision      VARCHAR NOT NULL,   -- pass | fail
    note          VARCHAR,
    rule_verdict  VARCHAR NOT NULL,   -- what the rule or the judge said of that answer when the person decided
    answer        VARCHAR,            -- the answer text, for reading the decision later
    decided_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (test_sha, answer_sha)
);

-- The manual correction rate of each judged eval run: verdicts a review decided, and those where the person overruled
-- a verdict the rule or the judge had settled (a decision on a needs_review verdict settles it; it overrules nothing).
CREATE OR REPLACE VIEW manual_corrections AS
WITH judged AS (
    SELECT v.eval_run_id, v.verdict, v.matched_by, rv.rule_verdict
    FROM verdicts v
    LEFT JOIN answers a USING (eval_run_id, question_id)
    LEFT JOIN reviews rv ON rv.test_sha = v.test_sha AND rv.answer_sha = sha256(a.answer)
)
SELECT
    j.eval_run_id,
    any_value(r.started_at)                                                          AS started_at,
    count(*)                                                                         AS tests,
    count(*) FILTER (WHERE j.verdict = 'needs_review')                               AS needs_review,
    count(*) FILTER (WHERE j.matched_by = 'review')                                  AS reviewed,
    count(*) FILTER (WHERE j.matched_by = 'review' AND j.rule_verdict <> 'needs_review'
                     AND j.rule_verdict <> j.verdict)                                 AS overruled,
    round(count(*) FILTER (WHERE j.matched_by = 'review' AND j.rule_verdict <> 'needs_review'
                           AND j.rule_verdict <> j.verdict) / count(*), 4)            AS correction_rate
FROM judged j JOIN eval_runs r USING (eval_run_id)
GROUP BY j.eval_run_id;

CREATE OR REPLACE VIEW needs_review AS
SELECT v.question_id, v.kind, v.reason, a.answer
FROM latest_verdicts v LEFT JOIN answers a USING (eval_run_id, question_id)
WHERE v.verdict = 'needs_review';
