-- The gateway (SPEC §10): sessions belong to a tenant (a gateway key's owner) and, when the
-- client names one, a partition of it; CLI sessions have neither (NULL). Each message carries
-- the key the gateway finds its session by (`hermes_core::normal::match_key`: `calls:` + the
-- digest of an assistant message's tool-call ids, else `form:` + its normal form's digest; NULL
-- for other roles). It is computed in Rust on every insert, so rows stored before this step keep
-- NULL there: they are never found by the gateway, which only ever continues its own sessions.
ALTER TABLE sessions ADD COLUMN tenant TEXT;
ALTER TABLE sessions ADD COLUMN partition_key TEXT;
ALTER TABLE messages ADD COLUMN match_key TEXT;
CREATE INDEX messages_match_key ON messages (match_key);
CREATE INDEX sessions_tenant ON sessions (tenant, partition_key, updated_at);

-- Gateway keys: the key's id (shown in `hermes serve keys list`), its tenant, and the SHA-256 of
-- its secret (lowercase hex). The secret itself is never stored.
CREATE TABLE gateway_keys (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    digest     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX gateway_keys_tenant ON gateway_keys (tenant);
