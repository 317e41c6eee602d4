-- One process drives a session at a time: the holder ("host:pid:nonce") and until when its lease
-- runs. A process that finds a live lease held by another waits a bounded time, then fails and
-- stores nothing.
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
