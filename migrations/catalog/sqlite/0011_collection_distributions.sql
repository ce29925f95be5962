-- Collections spread over shards. A collection without a row here is distributed `tenant`
-- (whole on the tenant's home shard). `hash` places each record by the vshard its
-- (tenant, collection, key) hashes to; `range` by `ranges`, a JSON array of {"from", "shard"}
-- in ascending order whose first bound is "": a key lives on the shard of the greatest bound
-- <= key. Part of the shard map: every change moves the epoch on.
CREATE TABLE collection_distributions (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    distribution TEXT NOT NULL CHECK (distribution IN ('hash', 'range')),
    ranges TEXT,
    incarnation INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, collection)
);
