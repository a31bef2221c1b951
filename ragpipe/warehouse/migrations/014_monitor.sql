-- The app's production traces (docs/monitoring.md): one row per answered question, read from the JSON Lines files in
-- [monitor].traces_dir, with what the rates need read from it; how far each file has been read; the lines that were
-- not traces. Fields in [monitor].drop_fields are never stored.

CREATE TABLE IF NOT EXISTS production_traces (
    trace_id     VARCHAR PRIMARY KEY,  -- the app's id, else a hash of the line: a line seen twice is one trace
    asked_at     TIMESTAMP NOT NULL,   -- UTC
    day          DATE NOT NULL,
    app_version  VARCHAR,
    question     VARCHAR,              -- NULL when dropped
    answer       VARCHAR,              -- NULL when dropped
    contexts     JSON,                 -- [{"text", "source"}]; NULL when dropped
    n_contexts   INTEGER NOT NULL,
    refused      BOOLEAN NOT NULL,
    cites        BOOLEAN NOT NULL,     -- states or cites something (not a refusal): counted in the citation hit rate
    citation_hit BOOLEAN,              -- NULL for a refusal
    corrected    BOOLEAN,              -- NULL when the app does not report corrections
    trap_tests   VARCHAR[] NOT NULL,   -- golden negatives whose trap passage the question retrieved
    latency_ms   DOUBLE,
    tokens       BIGINT,
    extra        JSON,                 -- the trace's other fields, less the dropped ones
    file         VARCHAR NOT NULL,     -- where it was read (relative to traces_dir), and its line
    line         INTEGER NOT NULL,
    ingested_at  TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS trace_files (
    file        VARCHAR PRIMARY KEY,  -- relative to traces_dir
    bytes_read  BIGINT NOT NULL,      -- complete lines read so far; a line still being written waits for the next run
    lines_read  BIGINT NOT NULL,
    head_sha    VARCHAR NOT NULL,     -- of the bytes read: a file rewritten from the start is read again
    updated_at  TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS trace_problems (
    file     VARCHAR NOT NULL,
    line     INTEGER NOT NULL,
    problem  VARCHAR NOT NULL,
    seen_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (file, line)
);

-- Per day and app version: the rates, each over the traces it applies to, and latency percentiles.
CREATE OR REPLACE VIEW monitor_daily AS
SELECT
    day,
    app_version,
    count(*) AS traces,
    avg(refused::INTEGER) AS refusal_rate,
    count(*) FILTER (WHERE cites) AS answered,
    avg(citation_hit::INTEGER) AS citation_hit_rate,
    count(corrected) AS correction_reported,
    avg(corrected::INTEGER) AS correction_rate,
    count(*) FILTER (WHERE len(trap_tests) > 0) AS trap_hits,
    quantile_cont(latency_ms, 0.5) AS latency_p50_ms,
    quantile_cont(latency_ms, 0.95) AS latency_p95_ms,
    sum(tokens) AS tokens
FROM production_traces
GROUP BY day, app_version;

-- Which golden negatives' trap passages real questions reach, per day: the traps users actually walk into.
CREATE OR REPLACE VIEW monitor_trap_hits AS
SELECT day, test AS question_id, count(*) AS traces, any_value(question) AS example_question
FROM (SELECT day, question, unnest(trap_tests) AS test FROM production_traces)
GROUP BY day, test;
