-- Writes routed on a shard map older than this epoch are refused (the gateway refreshes its map
-- and retries once). Raised when a shard stops taking writes (read_only, offline) and, later,
-- when data moves away.
CREATE TABLE shard_fence (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    epoch BIGINT NOT NULL
);
INSERT INTO shard_fence (id, epoch) VALUES (1, 0);
