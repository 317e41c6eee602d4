-- Verdicts the whole store shares, besides each session's own record (SPEC §6): one row per
-- refused field per (wire, provider, host, model). `learned_at` is when a refusal last confirmed
-- it; one older than the configured age is re-probed once: a session claims it
-- (`probing_since`), sends the field, and the row is dropped when accepted or re-learned when
-- refused.
CREATE TABLE fleet_verdicts (
    wire          TEXT NOT NULL,
    provider      TEXT NOT NULL,
    host          TEXT NOT NULL,
    model         TEXT NOT NULL,
    field         TEXT NOT NULL,
    learned_at    BIGINT NOT NULL,
    probing_since BIGINT,
    PRIMARY KEY (wire, provider, host, model, field)
);
