-- A gateway finds the conversation a client continues by the chain key of its last assistant
-- message (hermes_core::normal::chain_keys: the user and assistant turns before it, in order),
-- one probe of this index however many conversations hold the same reply. Rows written
-- before this step, and rows of paths that do not chain (the CLI's sessions, imports,
-- compactions), keep NULL and are found by their match keys as before.
ALTER TABLE messages ADD COLUMN chain_key TEXT;
CREATE INDEX messages_chain_key ON messages (chain_key) WHERE chain_key IS NOT NULL;
