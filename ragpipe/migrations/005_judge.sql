-- The optional LLM judge ([judge] in the settings): its raw reply is kept beside the verdict it decided.
ALTER TABLE verdicts ADD COLUMN judge_reply VARCHAR;  -- NULL unless the rules could not settle the answer and a judge was asked
