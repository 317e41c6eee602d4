-- Sessions and their messages on PostgreSQL: the same tables and columns as the SQLite schema
-- after all its steps. Carriers and other message fields are stored as the exact JSON text
-- received (text, never jsonb: jsonb reorders keys and rewrites whitespace, which breaks signed
-- blocks), so they replay byte for byte.
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    title              TEXT,
    parent_id          TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    provider           TEXT,
    model              TEXT,
    base_url           TEXT,
    model_config       TEXT NOT NULL DEFAULT '{}',
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    message_count      BIGINT NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    base_url_confirmed BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens   BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE messages (
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position          BIGINT NOT NULL,
    role              TEXT NOT NULL,
    content           TEXT,
    tool_calls        TEXT,
    tool_call_id      TEXT,
    name              TEXT,
    reasoning_content TEXT,
    reasoning         TEXT,
    reasoning_details TEXT,
    origin_provider   TEXT,
    origin_host       TEXT,
    origin_model      TEXT,
    extra             TEXT,
    created_at        BIGINT NOT NULL,
    -- Compaction keeps every original row: summarised rows are archived (archived_at set) and
    -- the checkpoint that replaces them sorts where they stood (sort_key).
    sort_key          BIGINT,
    archived_at       BIGINT,
    kind              TEXT NOT NULL DEFAULT 'message',
    -- The order a message's keys were stored in, when it is not the canonical one.
    key_order         TEXT,
    PRIMARY KEY (session_id, position)
);

CREATE INDEX sessions_updated ON sessions (updated_at);

-- One process drives a session at a time, on any machine: the holder ("host:pid:nonce") and
-- until when its lease runs.
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
