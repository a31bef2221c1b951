-- Near-miss tests proposed by `ragpipe golden suggest` (or the golden_suggestions asset), each with the evidence that
-- its answer is absent and the rank of its trap, and what a person decided. One row per proposal; a later suggestion
-- run replaces the undecided rows, decided ones stay.

CREATE TABLE IF NOT EXISTS golden_suggestions (
    suggestion_id  VARCHAR PRIMARY KEY,   -- sug_ + a hash of the question and the quote: the same proposal, the same id
    kind           VARCHAR NOT NULL,      -- negative | positive
    qualifier_kind VARCHAR NOT NULL,      -- periods | versions | names
    question       VARCHAR NOT NULL,
    quote          VARCHAR NOT NULL,      -- the trap sentence (negative) or the evidence sentence (positive)
    source         VARCHAR NOT NULL,      -- its document
    value          VARCHAR NOT NULL,      -- the trap's value, or the expected answer
    chunk_id       VARCHAR NOT NULL,      -- the chunk holding the quote, under chunker_tag
    qualifier      VARCHAR NOT NULL,      -- as the quote says it
    asked_for      VARCHAR NOT NULL,      -- as the question says it (the same, for a positive)
    evidence       VARCHAR NOT NULL,      -- JSON: the searches run, the closest passages and why none answers
    rank           INTEGER,               -- the quote's chunk in the question's retrieval (NULL: not in the top k)
    k              INTEGER NOT NULL,
    chunker_tag    VARCHAR NOT NULL,
    embedder_tag   VARCHAR NOT NULL,
    proposed_at    TIMESTAMP NOT NULL,
    decision       VARCHAR,               -- NULL (undecided) | accepted | rejected
    question_id    VARCHAR,               -- accepted: the test's id in the golden file
    decided_at     TIMESTAMP
);
