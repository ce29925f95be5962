-- Which shard of which catalog this database is: one row, written when the shard is registered
-- (or, for a shard registered before this table existed, when a gateway opens it). A database
-- that carries another shard's marker is refused, so one database can never be two shards.
CREATE TABLE shard_identity (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    catalog_id TEXT NOT NULL,
    shard_id TEXT NOT NULL,
    claimed_at BIGINT NOT NULL
);
