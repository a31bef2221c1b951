-- Ingestion: the corpus as last observed, parsed documents, chunks per chunker, embedding index per embedder.
-- Every row carries the Dagster run id (run_id) that wrote it; chunk rows carry the chunker tag and
-- embedding rows the embedder tag in force.

CREATE TABLE corpus_files (
    path        VARCHAR PRIMARY KEY,   -- relative to the corpus directory, POSIX separators
    sha256      VARCHAR NOT NULL,
    bytes       BIGINT  NOT NULL,
    format      VARCHAR,
    run_id      VARCHAR NOT NULL,
    observed_at TIMESTAMP NOT NULL
);

CREATE TABLE documents (
    doc_id        VARCHAR PRIMARY KEY, -- the file's path relative to the corpus directory
    path          VARCHAR NOT NULL,
    sha256        VARCHAR NOT NULL,
    format        VARCHAR NOT NULL,
    n_elements    INTEGER NOT NULL,
    n_chars       INTEGER NOT NULL,
    text          VARCHAR NOT NULL,    -- elements joined by a blank line; chunk spans index into it
    elements_json VARCHAR NOT NULL,    -- unstructured elements (types, titles, page numbers)
    parse_seconds DOUBLE,
    parsed_at     TIMESTAMP NOT NULL,
    run_id        VARCHAR NOT NULL
);

CREATE TABLE ingest_errors (
    path        VARCHAR NOT NULL,
    stage       VARCHAR NOT NULL,      -- corpus | parse | chunk | embed
    sha256      VARCHAR,               -- the file version that failed (a changed file is retried)
    error_class VARCHAR NOT NULL,
    message     VARCHAR NOT NULL,
    run_id      VARCHAR NOT NULL,
    failed_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (path, stage)
);

CREATE TABLE chunks (
    chunker_tag  VARCHAR NOT NULL,
    chunk_id     VARCHAR NOT NULL,
    doc_id       VARCHAR NOT NULL,
    seq          INTEGER NOT NULL,
    text         VARCHAR NOT NULL,
    start_char   INTEGER NOT NULL,
    end_char     INTEGER NOT NULL,
    section      VARCHAR,
    page         INTEGER,
    content_hash VARCHAR NOT NULL,
    doc_sha256   VARCHAR NOT NULL,     -- the document version this chunk came from
    run_id       VARCHAR NOT NULL,
    PRIMARY KEY (chunker_tag, chunk_id)
);

-- Mirror of the LanceDB table of each embedder, for SQL: which chunk has a vector under which embedder.
CREATE TABLE embeddings (
    embedder_tag VARCHAR NOT NULL,
    chunker_tag  VARCHAR NOT NULL,
    chunk_id     VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    n_tokens     INTEGER NOT NULL,     -- under this embedder's tokenizer
    run_id       VARCHAR NOT NULL,
    PRIMARY KEY (embedder_tag, chunk_id)
);

CREATE TABLE stage_runs (
    run_id      VARCHAR NOT NULL,
    stage       VARCHAR NOT NULL,
    tag         VARCHAR,               -- chunker or embedder tag where it applies
    started_at  TIMESTAMP NOT NULL,
    seconds     DOUBLE NOT NULL,
    stats_json  VARCHAR NOT NULL
);
