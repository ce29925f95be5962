-- Collections whose records this shard must not serve in one layout (`home`: the `records`
-- table, a tenant's home data; `spread`: `spread_records`), whatever map an instance routes on:
-- a collection changing its distribution (state frozen: its records still read, not written
-- while the last changes are copied to the new layout) or changed (state moved: its records
-- here are the old copy until the job removes them). The row is removed when the collection
-- comes back to this layout or the change rolls back.
CREATE TABLE collection_fences (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    layout TEXT NOT NULL CHECK (layout IN ('home', 'spread')),
    state TEXT NOT NULL CHECK (state IN ('frozen', 'moved')),
    job_id TEXT NOT NULL,
    since INTEGER NOT NULL,
    PRIMARY KEY (tenant, collection, layout)
);
