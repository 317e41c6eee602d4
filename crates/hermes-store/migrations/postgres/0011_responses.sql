-- The Responses door's responses kept by id (issue 49), for `previous_response_id`: a response
-- made with `store` on names, per tenant, the session it went to and how many of that
-- session's messages stood once it was stored (the conversation as of that response), until
-- `expires_at`.
CREATE TABLE responses (
    tenant     TEXT NOT NULL,
    id         TEXT NOT NULL,
    session    TEXT NOT NULL,
    upto       BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX responses_expiry ON responses (expires_at);
