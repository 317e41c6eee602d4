-- Branches share their parent's prefix by reference (SPEC §10, "What is stored"): a branch
-- records where it left its parent (`parent_id`) as the parent's tip then (`fork_revision`,
-- `fork_last`: the view as it stood at that tip, see `crate::tip`) and how many messages of that
-- view it inherits (`fork_count`); its own rows are numbered from `fork_count` on. NULL in all
-- three: no inherited prefix (every session before this step, and every branch since
-- materialised: its inherited rows copied into it, when it is compacted or its parent deleted).
ALTER TABLE sessions ADD COLUMN fork_revision BIGINT;
ALTER TABLE sessions ADD COLUMN fork_last BIGINT;
ALTER TABLE sessions ADD COLUMN fork_count BIGINT;
CREATE INDEX sessions_parent ON sessions (parent_id);
