-- Compare-and-append (SPEC §10, "What is stored"), as SQLite's step 8: `revision` counts the
-- changes to a session's messages (appends and compactions), `archived_rev` is the revision of
-- the compaction that archived a row (NULL: archived before revisions existed), so the active
-- view as it stood at an earlier revision can be rebuilt.
ALTER TABLE sessions ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN archived_rev BIGINT;
