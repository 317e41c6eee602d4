-- A session whose first messages are too large for one short write transaction (a gateway's
-- first contact with a 32 MiB history, issue 47) is written in pieces, each its own
-- transaction, so other writers take turns with it (SQLite has one writer at a time). Until
-- the last piece commits with the turn's step, `staged` is 1 and no lookup, listing or match
-- sees the session; a process that dies in between leaves a staged session that the sweep
-- removes (found through the partial index, which holds only staged sessions).
ALTER TABLE sessions ADD COLUMN staged SMALLINT NOT NULL DEFAULT 0;
CREATE INDEX sessions_staged ON sessions (created_at) WHERE staged = 1;
