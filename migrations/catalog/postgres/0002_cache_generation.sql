-- The cache generation is part of every cache key; moving it on makes every cached entry of
-- older generations unreachable (used when an invalidation could not reach Redis).
ALTER TABLE shard_map ADD COLUMN cache_generation BIGINT NOT NULL DEFAULT 0;
