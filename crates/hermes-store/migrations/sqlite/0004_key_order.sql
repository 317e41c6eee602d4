-- The order a message's keys were stored in, when it is not the canonical one
-- (`role,tool_call_id,content`; `*` for each unknown key): export and every wire keep it.
ALTER TABLE messages ADD COLUMN key_order TEXT;
