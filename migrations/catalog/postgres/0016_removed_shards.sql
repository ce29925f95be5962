-- Shards removed through the API (`DELETE /v1/admin/shards/{id}`). Start-up does not register a
-- shard of `storage.shards` listed here again; registering it through the API takes it off.
CREATE TABLE removed_shards (
    id TEXT PRIMARY KEY,
    removed_at BIGINT NOT NULL
);
