-- A session's base URL is trusted with an API key only once the user named it (on the command
-- line or in config.toml): imported sessions start unconfirmed (0), and so do sessions stored
-- before this column existed.
ALTER TABLE sessions ADD COLUMN base_url_confirmed BIGINT NOT NULL DEFAULT 0;

-- Mark the file as hermes' own in the SQLite header (bytes 68..72 = "HRMS"), so ownership is
-- read from the header without opening another program's database.
PRAGMA application_id = 1213353299;
