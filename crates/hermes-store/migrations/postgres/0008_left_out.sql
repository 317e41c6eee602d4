-- Once dropped, stay dropped (SPEC §5a 3), as SQLite's step 13: the stored turns whose carriers
-- a request of a conversation left out, so no later request puts them back, on any replica. A
-- turn is known by `carrier`, a digest of its first carrier item as stored
-- (`hermes_core::left_out::carrier_id`): the same in every request, and in every branch that
-- shares the turn by reference, so a branch keeps its parent's marks and adds its own.
-- `session_id` is the session whose request left it out first (NULL when that request's
-- session was not stored yet), kept for the record only.
CREATE TABLE left_out_carriers (
    carrier    TEXT PRIMARY KEY NOT NULL,
    session_id TEXT,
    marked_at  BIGINT NOT NULL
);
CREATE INDEX left_out_carriers_session ON left_out_carriers (session_id);
