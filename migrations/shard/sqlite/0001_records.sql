-- Records of every tenant whose data routes to this shard. Deleted records stay as tombstones
-- (deleted = 1) so that versions never go backwards for a key.
CREATE TABLE records (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    vshard INTEGER NOT NULL,
    version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant, collection, key)
) WITHOUT ROWID;

CREATE INDEX records_by_vshard ON records (vshard);
