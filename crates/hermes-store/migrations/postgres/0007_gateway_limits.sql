-- Operating the gateway (issue 32): when each gateway key was last used (recorded coarsely, at
-- most once a minute per key and replica; NULL: never), and the two shared limits every replica
-- counts in.
ALTER TABLE gateway_keys ADD COLUMN last_used_at BIGINT;

-- Requests per minute: one window's count of a tenant, sharded across several rows (`shard`,
-- each with its own share of the limit) so concurrent requests do not all update one hot row.
-- Rows of past windows are swept.
CREATE TABLE rate_counts (
    tenant       TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    shard        BIGINT NOT NULL,
    used         BIGINT NOT NULL,
    PRIMARY KEY (tenant, window_start, shard)
);
CREATE INDEX rate_counts_window ON rate_counts (window_start);

-- Concurrent requests: slot `slot` of a tenant is held by one request (`holder`, of replica
-- `replica`) until `expires_at` (Unix ms), which the replica renews while the request runs; a
-- dead replica's slots free themselves when that passes.
CREATE TABLE concurrency_slots (
    tenant     TEXT NOT NULL,
    slot       BIGINT NOT NULL,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, slot)
);
CREATE INDEX concurrency_slots_holder ON concurrency_slots (holder);
