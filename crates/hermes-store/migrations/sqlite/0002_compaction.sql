-- Compaction keeps every original row: summarised rows are archived (archived_at set) and the
-- checkpoint that replaces them sorts where they stood (sort_key = their first position).
ALTER TABLE messages ADD COLUMN sort_key BIGINT;
ALTER TABLE messages ADD COLUMN archived_at BIGINT;
ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'message';
