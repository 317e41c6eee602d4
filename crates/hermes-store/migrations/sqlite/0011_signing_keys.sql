-- The gateway's signing keys (SPEC §10, "Messages-door signatures"): the key a Messages-door
-- thinking block's signature is a MAC with, kept in the store so every replica signs with the
-- same one. `secret` is 256 random bits, lowercase hex. `generation` orders keys (the lowest
-- signs) and, being unique, lets racing first uses insert generation 1 only once.
CREATE TABLE signing_keys (
    id         TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    generation BIGINT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
