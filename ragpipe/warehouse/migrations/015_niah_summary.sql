-- The NIAH summary path (docs/niah.md): what a trial spent on summaries of its haystack (tokens in and out, seconds),
-- none for the pieces another trial of the same haystack had summarized already. NULL on the other subjects.
ALTER TABLE niah_trials ADD COLUMN summary_tokens INTEGER;
ALTER TABLE niah_trials ADD COLUMN summary_latency_s DOUBLE;
