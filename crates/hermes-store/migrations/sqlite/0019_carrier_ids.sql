-- A turn's carrier id (hermes_core::left_out::carrier_id: a digest of its first carrier item
-- as stored), written with the row, so the read of a session's view says of each turn whether
-- an earlier request left its carriers out for good (left_out_carriers), in the same statement,
-- instead of a lookup of its own after it. Rows written before this step keep NULL: their ids
-- are computed and looked up as before.
ALTER TABLE messages ADD COLUMN carrier_id TEXT;
