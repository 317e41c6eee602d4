-- Idempotent turns (issue 47): a gateway request's receipt, per tenant and key. `key` is
-- `key:` + the client's `Idempotency-Key`, or `body:` + a digest of a request that named none.
-- While the turn runs the row is a claim (`holder` set, `session` NULL) that lapses at
-- `expires_at`; the transaction that stores the turn's step turns it into the receipt
-- (`session`, the tip it left, the completion as JSON), kept until `expires_at`.
CREATE TABLE turn_receipts (
    tenant       TEXT NOT NULL,
    key          TEXT NOT NULL,
    digest       TEXT NOT NULL,
    holder       TEXT,
    session      TEXT,
    tip_revision BIGINT,
    tip_last     BIGINT,
    completion   TEXT,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX turn_receipts_expiry ON turn_receipts (expires_at);
