-- A decision reused for another answer to the same test that makes the same claims (courtesy, talk about the
-- sources, markup and citation marks aside): recorded as a row of its own for that answer, with the rule's verdict
-- on it, naming the answer a person decided on. `corrections_by_reason` counts a person's decisions only.
ALTER TABLE reviews ADD COLUMN same_claims_as VARCHAR;

CREATE OR REPLACE VIEW corrections_by_reason AS
WITH kinds AS (
    SELECT
        regexp_replace(
            regexp_replace(coalesce(rule_reason, '(reason not kept: decided before it was)'),
                           '''[^'']*''|"[^"]*"', '…', 'g'),
            '[0-9]+(\.[0-9]+)?', 'N', 'g')                                              AS reason_kind,
        rule_verdict, decision
    FROM reviews
    WHERE same_claims_as IS NULL
)
SELECT
    reason_kind,
    count(*)                                                                          AS decided,
    count(*) FILTER (WHERE rule_verdict = 'needs_review')                             AS settled,
    count(*) FILTER (WHERE rule_verdict = 'needs_review' AND decision = 'pass')       AS settled_pass,
    count(*) FILTER (WHERE rule_verdict <> 'needs_review' AND rule_verdict <> decision) AS overruled,
    round(count(*) FILTER (WHERE rule_verdict <> 'needs_review' AND rule_verdict <> decision)
          / count(*), 4)                                                              AS correction_rate
FROM kinds
GROUP BY reason_kind
ORDER BY overruled DESC, decided DESC;
