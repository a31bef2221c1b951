-- The team's app as the subject under test ([subject].kind = http | python): what it returned for each test.
-- `retrievals` holds the returned contexts' ids by rank (the app's own ids, else ctx<rank>), so hit@k, MRR and the
-- did-not-run rule read the same table for the app as for ragpipe's own pipeline.

CREATE TABLE IF NOT EXISTS subject_contexts (
    eval_run_id  VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    rank         INTEGER NOT NULL,   -- 1-based, in the order the app returned them
    context_id   VARCHAR NOT NULL,   -- the app's id, else ctx<rank>
    text         VARCHAR NOT NULL,
    source       VARCHAR,
    PRIMARY KEY (eval_run_id, question_id, rank)
);

CREATE TABLE IF NOT EXISTS subject_replies (
    eval_run_id  VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    answer       VARCHAR,            -- NULL: the app only retrieves, and [answerer] answers from its contexts
    error        VARCHAR,            -- the call failed after its retries: the test's verdict is error
    latency_s    DOUBLE,
    anchor_how   VARCHAR,            -- how the anchor was found in the contexts: id | quote | quote across two | none
    metadata     VARCHAR,            -- JSON: the embedder, model and version the app reported
    PRIMARY KEY (eval_run_id, question_id)
);

ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS subject VARCHAR;  -- NULL: ragpipe's own pipeline; else 'http <url>'
