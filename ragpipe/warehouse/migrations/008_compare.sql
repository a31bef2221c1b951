-- `ragpipe compare`: a candidate configuration evaluated beside the current one (docs/warehouse.md).
-- Only these two tables are written by a comparison; the candidate's own stages ran in a scratch warehouse.

CREATE TABLE comparisons (
    comparison_id    VARCHAR PRIMARY KEY,
    compared_at      TIMESTAMP NOT NULL,
    current_run_id   VARCHAR NOT NULL,  -- the judged eval run the candidate was compared with
    candidate_source VARCHAR NOT NULL,  -- the candidate's settings file (before --set overrides)
    changed          VARCHAR NOT NULL,  -- JSON: setting -> "old -> new"
    chunker_tag      VARCHAR NOT NULL,  -- the candidate's
    embedder_tag     VARCHAR NOT NULL,  -- the candidate's
    current_metrics  VARCHAR NOT NULL,  -- JSON: hit_at_k, mrr, recall_at_k, k
    candidate_metrics VARCHAR NOT NULL,
    flips            INTEGER NOT NULL,
    blocking         INTEGER NOT NULL,  -- flips whose transition is in [compare].block
    reused           VARCHAR NOT NULL,  -- JSON: what was copied from the current state instead of recomputed
    seconds          DOUBLE NOT NULL
);

CREATE TABLE comparison_verdicts (
    comparison_id       VARCHAR NOT NULL,
    question_id         VARCHAR NOT NULL,
    kind                VARCHAR NOT NULL,
    current_verdict     VARCHAR,
    candidate_verdict   VARCHAR,
    current_anchor_rank INTEGER,
    candidate_anchor_rank INTEGER,
    current_unverified  BOOLEAN,
    candidate_unverified BOOLEAN,
    blocking            BOOLEAN NOT NULL,
    PRIMARY KEY (comparison_id, question_id)
);
