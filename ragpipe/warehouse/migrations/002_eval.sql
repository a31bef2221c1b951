-- Evaluation: golden-set stamps, eval runs, retrievals, answers, verdicts and retrieval metrics.
-- History is kept: every eval run adds rows; views pick the latest.

CREATE TABLE golden_tests (
    question_id     VARCHAR PRIMARY KEY,
    kind            VARCHAR NOT NULL,
    question        VARCHAR NOT NULL,
    expected_answer VARCHAR NOT NULL,
    trap_value      VARCHAR,
    quote           VARCHAR,
    source          VARCHAR,
    file_anchor_ids VARCHAR[],          -- the chunk id(s) written in the golden set file
    embedder_tag    VARCHAR,
    last_validated  DATE,
    line            INTEGER NOT NULL,
    golden_path     VARCHAR NOT NULL,
    golden_sha256   VARCHAR NOT NULL,
    run_id          VARCHAR NOT NULL
);

CREATE TABLE stamps (
    chunker_tag  VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    anchor       VARCHAR NOT NULL,      -- trap | evidence
    status       VARCHAR NOT NULL,      -- unchanged | moved | split | missing | new | no_quote
    old_ids      VARCHAR[],
    new_ids      VARCHAR[],
    doc_id       VARCHAR,
    reason       VARCHAR,
    run_id       VARCHAR NOT NULL,
    stamped_at   TIMESTAMP NOT NULL
);

CREATE TABLE eval_runs (
    eval_run_id    VARCHAR PRIMARY KEY, -- the Dagster run id that retrieved
    started_at     TIMESTAMP NOT NULL,
    chunker_tag    VARCHAR NOT NULL,
    embedder_tag   VARCHAR NOT NULL,
    retriever      VARCHAR NOT NULL,    -- JSON of the retriever settings
    answerer       VARCHAR,             -- JSON of the answerer settings (secrets never stored)
    answerer_label VARCHAR,
    golden_sha256  VARCHAR NOT NULL,
    n_tests        INTEGER NOT NULL,
    trigger        VARCHAR,             -- manual | scheduled | automation | ci | demo
    answered_run_id VARCHAR,            -- Dagster run that answered
    verdict_run_id  VARCHAR,            -- Dagster run that judged
    hit_at_k       DOUBLE,
    mrr            DOUBLE,
    recall_at_k    DOUBLE,
    k              INTEGER
);

CREATE TABLE retrievals (
    eval_run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    rank        INTEGER NOT NULL,
    chunk_id    VARCHAR NOT NULL,
    score       DOUBLE NOT NULL,
    PRIMARY KEY (eval_run_id, question_id, rank)
);

CREATE TABLE answers (
    eval_run_id   VARCHAR NOT NULL,
    question_id   VARCHAR NOT NULL,
    answer        VARCHAR NOT NULL,
    error         VARCHAR,
    latency_s     DOUBLE NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    support       DOUBLE,
    PRIMARY KEY (eval_run_id, question_id)
);

CREATE TABLE verdicts (
    eval_run_id      VARCHAR NOT NULL,
    question_id      VARCHAR NOT NULL,
    kind             VARCHAR NOT NULL,
    verdict          VARCHAR NOT NULL,  -- pass | fail | did_not_run | error
    reason           VARCHAR NOT NULL,
    anchor_ids       VARCHAR[],
    anchor_retrieved BOOLEAN NOT NULL,
    refused          BOOLEAN NOT NULL,
    took_trap        BOOLEAN NOT NULL,
    matched_by       VARCHAR,
    unverified       BOOLEAN NOT NULL,  -- the test's embedder_tag differs from the current embedder
    test_embedder_tag VARCHAR,
    judged_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (eval_run_id, question_id)
);

CREATE VIEW latest_eval_run AS
SELECT * FROM eval_runs WHERE verdict_run_id IS NOT NULL ORDER BY started_at DESC LIMIT 1;

CREATE VIEW latest_verdicts AS
SELECT v.*, r.chunker_tag, r.embedder_tag, r.started_at
FROM verdicts v JOIN latest_eval_run r USING (eval_run_id);

CREATE VIEW did_not_run AS
SELECT question_id, kind, reason, anchor_ids FROM latest_verdicts WHERE verdict = 'did_not_run';

CREATE VIEW unverified AS
SELECT question_id, kind, test_embedder_tag, embedder_tag AS current_embedder_tag, verdict
FROM latest_verdicts WHERE unverified;

CREATE VIEW latest_stamps AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY chunker_tag, question_id, anchor ORDER BY stamped_at DESC) AS rn FROM stamps
) WHERE rn = 1;

CREATE VIEW stamp_changes AS
SELECT chunker_tag, question_id, anchor, status, old_ids, new_ids, doc_id, reason, stamped_at
FROM latest_stamps WHERE status NOT IN ('unchanged');
