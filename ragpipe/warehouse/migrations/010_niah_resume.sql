-- NIAH runs that can be stopped and resumed, and which tokenizer measured the window check.
-- run_key: what a run's rows depend on (ragpipe.niah.run.run_key); a run with the same key and no finished_at is
-- continued by the next `ragpipe niah run`, which evaluates only the trials it lacks.

ALTER TABLE niah_runs ADD COLUMN run_key VARCHAR;
ALTER TABLE niah_runs ADD COLUMN resumed_trials INTEGER DEFAULT 0;  -- trial rows found stored when it was last resumed
ALTER TABLE niah_trials ADD COLUMN window_counter VARCHAR;          -- what counted input_tokens_est: the model's own tokenizer or the named one + allowance
