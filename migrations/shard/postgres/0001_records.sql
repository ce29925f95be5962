-- Records of every tenant whose data routes to this shard. Deleted records stay as tombstones
-- (deleted = 1) so that versions never go backwards for a key. Keys sort in byte order
-- (COLLATE "C"), the same order SQLite uses.
CREATE TABLE records (
    tenant TEXT COLLATE "C" NOT NULL,
    collection TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    vshard BIGINT NOT NULL,
    version BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted BIGINT NOT NULL DEFAULT 0,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant, collection, key)
);

CREATE INDEX records_by_vshard ON records (vshard);
