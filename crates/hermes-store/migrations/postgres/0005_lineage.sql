-- Branches share their parent's prefix by reference (SPEC §10, "What is stored"), as SQLite's
-- step 10: a branch records its parent's tip where it left it (`fork_revision`, `fork_last`)
-- and how many messages of the view at that tip it inherits (`fork_count`); its own rows are
-- numbered from `fork_count` on. NULL in all three: no inherited prefix (every session before
-- this step, and every branch since materialised).
ALTER TABLE sessions ADD COLUMN fork_revision BIGINT;
ALTER TABLE sessions ADD COLUMN fork_last BIGINT;
ALTER TABLE sessions ADD COLUMN fork_count BIGINT;
CREATE INDEX sessions_parent ON sessions (parent_id);
