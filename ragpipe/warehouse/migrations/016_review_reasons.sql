-- Which rule a reviewer keeps overruling: a decision keeps the reason the rule (or the judge) gave, and
-- `corrections_by_reason` counts decisions per kind of reason (the reason with its quoted parts and numbers
-- blanked, so "states '4 bytes', beside 'x' ..." and "states '2 s', beside 'y' ..." are one kind).
ALTER TABLE reviews ADD COLUMN rule_reason VARCHAR;

CREATE OR REPLACE VIEW corrections_by_reason AS
WITH kinds AS (
    SELECT
        regexp_replace(
            regexp_replace(coalesce(rule_reason, '(reason not kept: decided before it was)'),
                           '''[^'']*''|"[^"]*"', '…', 'g'),
            '[0-9]+(\.[0-9]+)?', 'N', 'g')                                              AS reason_kind,
        rule_verdict, decision
    FROM reviews
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
