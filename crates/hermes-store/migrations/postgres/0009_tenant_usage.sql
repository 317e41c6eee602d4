-- A gateway tenant's spend in time (issue 47), as SQLite's step 14: one row per upstream request of a conversation
-- that has a tenant — when (Unix ms) and its tokens (input + output, as `hermes_core::Usage`
-- counts them: cached input and reasoning included) — written with the session's counters by
-- `Store::add_usage`. A tenant's tokens per minute and per day are sums over these rows, the same
-- on every replica. The session counters keep no time, so they cannot answer "today". Rows older
-- than two days are swept by the gateway.
CREATE TABLE tenant_usage (
    tenant TEXT NOT NULL,
    at     BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);
CREATE INDEX tenant_usage_tenant_at ON tenant_usage (tenant, at, tokens);
CREATE INDEX tenant_usage_at ON tenant_usage (at);
