-- Quotas set through the admin API (shard-router `catalog::quotas`, carried in the map).
-- A tier's quotas, replacing its configured ones (`quotas.tiers`) fleet-wide: a JSON object of
-- the quotas (`records`, `record_bytes`, `blobs`, `blob_bytes`, `index_entries`), each a number
-- or absent/null (unlimited). No row: the configured quotas apply.
CREATE TABLE tier_quotas (
    tier TEXT PRIMARY KEY,
    quotas TEXT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
-- A tenant's own quotas over its tier's: a JSON object whose keys each override the tier's quota
-- (a number, or null: unlimited); a key absent keeps the tier's. NULL: no override.
ALTER TABLE tenants ADD COLUMN quotas TEXT;
