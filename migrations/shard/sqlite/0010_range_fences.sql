-- Key ranges of range-distributed collections this shard must not serve, whatever map an
-- instance routes on: a range moving away (state frozen: its records still read, not written
-- while the last changes are copied) or gone (state moved: its records here are the old copy
-- until the mover removes them). A range runs from from_key up to until_key (excluded; NULL:
-- to the end). The row is removed when the range moves back onto this shard or the move
-- rolls back.
CREATE TABLE range_fences (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    from_key TEXT NOT NULL,
    until_key TEXT,
    state TEXT NOT NULL CHECK (state IN ('frozen', 'moved')),
    job_id TEXT NOT NULL,
    since INTEGER NOT NULL,
    PRIMARY KEY (tenant, collection, from_key)
);
