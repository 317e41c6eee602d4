-- Normalised usage (hermes_core::Usage): besides input and output, the tokens spent thinking
-- (part of output) and the prompt-cache reads (part of input) and writes. Sessions stored before
-- these columns existed start at 0.
ALTER TABLE sessions ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
