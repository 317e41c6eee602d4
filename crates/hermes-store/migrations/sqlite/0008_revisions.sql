-- Compare-and-append (SPEC §10, "What is stored"): `revision` counts the changes to a session's
-- messages (appends and compactions; verdicts, usage and the like leave it alone), so a writer
-- can tell whether the session still ends where it read it. `archived_rev` is the revision of
-- the compaction that archived a row, so the active view as it stood at an earlier revision can
-- be rebuilt (a stale append becomes a branch of exactly that view). Rows archived before this
-- column existed keep NULL there: archived before any revision a writer can hold.
ALTER TABLE sessions ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN archived_rev BIGINT;
