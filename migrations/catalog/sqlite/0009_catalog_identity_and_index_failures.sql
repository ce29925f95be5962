-- The catalog's identity: a random id written once, which every shard database of this catalog
-- carries in its `shard_identity` marker next to its shard id.
ALTER TABLE shard_map ADD COLUMN catalog_id TEXT NOT NULL DEFAULT '';
UPDATE shard_map SET catalog_id = lower(hex(randomblob(16))) WHERE catalog_id = '';

-- Why an index's build failed (state `failed`): JSON `{"reason": ..., "offending_keys": [...]}`.
ALTER TABLE index_defs ADD COLUMN failure TEXT;
