-- Records of collections distributed `hash` or `range` (collections spread over shards). They
-- are kept apart from `records` (a tenant's home data) because they move differently: with
-- their vshard in a rebalance (hash), or with their range (range), never with their tenant, so
-- tenant fences do not apply to them. `vshard` is the vshard a hash-placed record hashes to, and
-- -1 for a range-placed record (no vshard places it). Same columns and rules as `records`.
CREATE TABLE spread_records (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    vshard INTEGER NOT NULL,
    version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    value TEXT NOT NULL,
    live_since INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant, collection, key)
) WITHOUT ROWID;

CREATE INDEX spread_records_by_vshard ON spread_records (vshard, updated_at);
