-- Admin keys (`hermes serve keys create --admin`): gateway keys that reach the gateway's admin
-- API and web inspector (`/admin/v1/…`, `/ui`) and no door. Stored like every gateway key (the
-- SHA-256 of the secret only), under the tenant '' that no tenant key can have.
ALTER TABLE gateway_keys ADD COLUMN admin BIGINT NOT NULL DEFAULT 0;
