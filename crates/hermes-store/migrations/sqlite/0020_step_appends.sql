-- A step stored at the tip read in one statement (issue 50), SQLite's counterpart of
-- PostgreSQL's one `WITH` (SQLite has no data-modifying `WITH`): an `INSERT` of the step's rows
-- into this view, the first row carrying the step's header (the revision read, the rows added,
-- the token counts, the tenant's spend and the request's receipt), the others NULL there.
-- The trigger runs per row, in order, inside the one statement: on the header row it aborts the
-- whole statement when the session moved on (nothing written; the caller takes its transaction
-- path, which branches), else moves the session's revision and counters on and writes the
-- spend and the receipt; every row becomes a `messages` row. One statement is atomic, and a
-- writing statement takes SQLite's write lock before it reads, so no other writer interleaves.
CREATE VIEW step_appends AS
SELECT
    session_id, position, role, content, tool_calls, tool_call_id, name, reasoning_content,
    reasoning, reasoning_details, origin_provider, origin_host, origin_model, extra, key_order,
    created_at, match_key, carrier_id, chain_key,
    NULL AS expected_revision, NULL AS added, NULL AS input_tokens, NULL AS output_tokens,
    NULL AS reasoning_tokens, NULL AS cache_read_tokens, NULL AS cache_write_tokens,
    NULL AS spend, NULL AS receipt_tenant, NULL AS receipt_key, NULL AS receipt_digest,
    NULL AS receipt_last, NULL AS receipt_completion, NULL AS receipt_expires_at
FROM messages WHERE 0;

CREATE TRIGGER step_appends_insert INSTEAD OF INSERT ON step_appends
BEGIN
    SELECT RAISE(ABORT, 'hermes: the session moved on since its tip was read')
    WHERE NEW.expected_revision IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM sessions WHERE id = NEW.session_id AND revision = NEW.expected_revision
    );
    UPDATE sessions SET message_count = message_count + NEW.added, updated_at = NEW.created_at,
        revision = revision + 1, input_tokens = input_tokens + NEW.input_tokens,
        output_tokens = output_tokens + NEW.output_tokens,
        reasoning_tokens = reasoning_tokens + NEW.reasoning_tokens,
        cache_read_tokens = cache_read_tokens + NEW.cache_read_tokens,
        cache_write_tokens = cache_write_tokens + NEW.cache_write_tokens
    WHERE NEW.expected_revision IS NOT NULL AND id = NEW.session_id;
    INSERT INTO tenant_usage (tenant, at, tokens)
    SELECT tenant, NEW.created_at, NEW.spend FROM sessions
    WHERE NEW.spend IS NOT NULL AND id = NEW.session_id AND tenant IS NOT NULL;
    INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, tip_last,
        completion, expires_at)
    SELECT NEW.receipt_tenant, NEW.receipt_key, NEW.receipt_digest, NULL, NEW.session_id,
        revision, NEW.receipt_last, NEW.receipt_completion, NEW.receipt_expires_at
    FROM sessions WHERE NEW.receipt_key IS NOT NULL AND id = NEW.session_id
    ON CONFLICT (tenant, key) DO UPDATE SET digest = excluded.digest, holder = NULL,
        session = excluded.session, tip_revision = excluded.tip_revision,
        tip_last = excluded.tip_last, completion = excluded.completion,
        expires_at = excluded.expires_at;
    INSERT INTO messages (session_id, position, role, content, tool_calls, tool_call_id, name,
        reasoning_content, reasoning, reasoning_details, origin_provider, origin_host,
        origin_model, extra, key_order, created_at, match_key, carrier_id, chain_key)
    VALUES (NEW.session_id, NEW.position, NEW.role, NEW.content, NEW.tool_calls,
        NEW.tool_call_id, NEW.name, NEW.reasoning_content, NEW.reasoning,
        NEW.reasoning_details, NEW.origin_provider, NEW.origin_host, NEW.origin_model,
        NEW.extra, NEW.key_order, NEW.created_at, NEW.match_key, NEW.carrier_id,
        NEW.chain_key);
END;
