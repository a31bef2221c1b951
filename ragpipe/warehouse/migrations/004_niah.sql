-- Needle in a haystack (long-context evaluation): haystacks, runs, one row per trial, and length x depth aggregates.
-- Written by ragpipe/niah_run.py; documented in docs/niah.md.

CREATE TABLE niah_haystacks (
    haystack_key   VARCHAR NOT NULL,   -- hash of what a haystack depends on (seed, source files, tokenizer, off-theme mix)
    length_target  INTEGER NOT NULL,   -- tokens asked for (before needles go in)
    rep            INTEGER NOT NULL,
    seed           BIGINT  NOT NULL,
    tokenizer      VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    n_tokens       INTEGER NOT NULL,   -- tokens of the filler as built (<= length_target, within one sentence)
    n_chars        INTEGER NOT NULL,
    n_paragraphs   INTEGER NOT NULL,
    n_off_theme    INTEGER NOT NULL,
    repeats        INTEGER NOT NULL,   -- how many passes over the source documents it took
    sha256         VARCHAR NOT NULL,
    text           VARCHAR NOT NULL,
    build_seconds  DOUBLE  NOT NULL,
    run_id         VARCHAR NOT NULL,
    built_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (haystack_key, length_target, rep)
);

CREATE TABLE niah_runs (
    run_id         VARCHAR PRIMARY KEY,
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP,
    trigger        VARCHAR,
    seed           BIGINT NOT NULL,
    niah_settings  VARCHAR NOT NULL,   -- JSON of the [niah] settings in force
    haystack_key   VARCHAR NOT NULL,
    haystack_source VARCHAR NOT NULL,
    subjects       VARCHAR[] NOT NULL,
    tokenizer      VARCHAR NOT NULL,
    answerer_label VARCHAR,
    embedder_tag   VARCHAR,
    chunker_tag    VARCHAR,
    retriever      VARCHAR,            -- JSON of the retriever settings (retrieval subject)
    n_trials       INTEGER,
    seconds        DOUBLE,
    trials_per_s   DOUBLE,
    report_json    VARCHAR             -- effective lengths and bias flags, written by the report
);

CREATE TABLE niah_trials (
    run_id           VARCHAR NOT NULL,
    trial_id         VARCHAR NOT NULL, -- deterministic: seed, length, depth, repetition, needle type, method
    subject          VARCHAR NOT NULL, -- retrieval | full_context
    answerer         VARCHAR,
    tokenizer        VARCHAR NOT NULL, -- the tokenizer that counted lengths and offsets
    seed             BIGINT  NOT NULL, -- the trial's own seed (needle, distractors, their placement)
    length_target    INTEGER NOT NULL,
    filler_tokens    INTEGER NOT NULL,
    haystack_tokens  INTEGER NOT NULL, -- with needle and distractors
    depth_target     DOUBLE  NOT NULL,
    depth_actual     DOUBLE  NOT NULL,
    offset_requested INTEGER NOT NULL,
    offset_actual    INTEGER NOT NULL, -- token offset where the needle starts (snapped to a sentence boundary)
    offset2_actual   INTEGER,          -- cross-sentence: where the second sentence starts
    rep              INTEGER NOT NULL,
    needle_type      VARCHAR NOT NULL,
    surface          INTEGER NOT NULL, -- which surface expression of the fact
    method           VARCHAR NOT NULL, -- direct | rewritten | cite | locate
    needle_key       VARCHAR NOT NULL,
    needle_text      VARCHAR NOT NULL,
    question         VARCHAR NOT NULL,
    expected_json    VARCHAR NOT NULL,
    distractors_json VARCHAR NOT NULL, -- [{key, fields}] of the near-miss distractor needles
    n_distractors    INTEGER NOT NULL,
    off_theme_ratio  DOUBLE  NOT NULL,
    haystack_sha256  VARCHAR NOT NULL,
    window_tokens    INTEGER,          -- the subject's window (full context); NULL = no limit
    input_tokens_est INTEGER,          -- prompt tokens counted with `tokenizer` before sending
    status           VARCHAR NOT NULL, -- scored | overflow | truncated | error
    answer           VARCHAR,
    answer_format    VARCHAR,          -- json | text
    schema_ok        BOOLEAN,
    exact            DOUBLE,           -- NULL when not scored (overflow, truncated away, error)
    field_score      DOUBLE,
    refused          BOOLEAN,
    hallucinated     BOOLEAN,
    distractor_hit   VARCHAR,          -- the near-miss value the answer gave, named
    output_chars     INTEGER,
    input_tokens     INTEGER,          -- as the answerer reported them
    output_tokens    INTEGER,
    latency_s        DOUBLE,
    retrieval_score  DOUBLE,           -- the needle was retrieved / the cited text contains it (share of its parts)
    reasoning_task   VARCHAR,          -- compare | order | negate
    reasoning_answer VARCHAR,
    reasoning_score  DOUBLE,           -- NULL when the evidence did not hold the needle
    retrieved_ranks  INTEGER[],        -- retrieval: ranks of the chunks holding a needle part
    error            VARCHAR,
    PRIMARY KEY (run_id, trial_id, subject)
);

-- Length x depth aggregates per run and subject (all needle types and methods together).
CREATE VIEW niah_cells AS
SELECT
    run_id, subject, length_target, depth_target,
    count(*)                                                    AS n,
    count(*) FILTER (WHERE status = 'scored')                   AS n_scored,
    avg(exact)                                                  AS exact,
    avg(field_score)                                            AS field_score,
    avg(CASE WHEN status = 'scored' THEN refused::INT END)      AS refusal_rate,
    avg(CASE WHEN status = 'scored' THEN hallucinated::INT END) AS hallucination_rate,
    avg(CASE WHEN status = 'scored' THEN (distractor_hit IS NOT NULL)::INT END) AS distractor_rate,
    avg((status IN ('overflow', 'truncated'))::INT)             AS overflow_rate,
    avg((status = 'error')::INT)                                AS error_rate,
    avg(output_chars)                                           AS avg_output_chars,
    avg(input_tokens)                                           AS avg_input_tokens,
    avg(output_tokens)                                          AS avg_output_tokens,
    avg(latency_s)                                              AS avg_latency_s,
    avg(retrieval_score)                                        AS retrieval_score,
    avg(reasoning_score)                                        AS reasoning_score,
    avg(depth_actual)                                           AS avg_depth_actual
FROM niah_trials
GROUP BY ALL;

-- The same per needle type and question method.
CREATE VIEW niah_cells_by_type AS
SELECT
    run_id, subject, needle_type, method, length_target, depth_target,
    count(*)                                                    AS n,
    count(*) FILTER (WHERE status = 'scored')                   AS n_scored,
    avg(exact)                                                  AS exact,
    avg(field_score)                                            AS field_score,
    avg(CASE WHEN status = 'scored' THEN refused::INT END)      AS refusal_rate,
    avg(CASE WHEN status = 'scored' THEN hallucinated::INT END) AS hallucination_rate,
    avg((status IN ('overflow', 'truncated'))::INT)             AS overflow_rate,
    avg(output_chars)                                           AS avg_output_chars,
    avg(input_tokens)                                           AS avg_input_tokens,
    avg(output_tokens)                                          AS avg_output_tokens,
    avg(latency_s)                                              AS avg_latency_s,
    avg(retrieval_score)                                        AS retrieval_score,
    avg(reasoning_score)                                        AS reasoning_score
FROM niah_trials
GROUP BY ALL;

CREATE VIEW latest_niah_run AS
SELECT * FROM niah_runs WHERE finished_at IS NOT NULL ORDER BY started_at DESC LIMIT 1;

CREATE VIEW latest_niah_cells AS
SELECT c.* FROM niah_cells c JOIN latest_niah_run r USING (run_id);
