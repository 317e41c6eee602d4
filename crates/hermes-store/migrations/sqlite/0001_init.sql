-- Sessions and their messages. Carriers and other message fields are stored as the exact JSON
-- text received (TEXT, never a re-encoding JSON type), so they replay byte for byte.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT,
    parent_id     TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    provider      TEXT,
    model         TEXT,
    base_url      TEXT,
    model_config  TEXT NOT NULL DEFAULT '{}',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    message_count BIGINT NOT NULL DEFAULT 0,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0
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
    PRIMARY KEY (session_id, position)
);

CREATE INDEX sessions_updated ON sessions (updated_at);
