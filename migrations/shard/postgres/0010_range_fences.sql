-- Key ranges of range-distributed collections this shard must not serve, whatever map an
-- instance routes on: a range moving away (state frozen: its records still read, not written
-- while the last changes are copied) or gone (state moved: its records here are the old copy
-- until the mover removes them). A range runs from from_key up to until_key (excluded; NULL:
-- to the end). The row is removed when the range moves back onto this shard or the move
-- rolls back.
CREATE TABLE range_fences (
    tenant TEXT COLLATE "C" NOT NULL,
    collection TEXT COLLATE "C" NOT NULL,
    from_key TEXT COLLATE "C" NOT NULL,
    until_key TEXT COLLATE "C",
    state TEXT NOT NULL CHECK (state IN ('frozen', 'moved')),
    job_id TEXT NOT NULL,
    since BIGINT NOT NULL,
    PRIMARY KEY (tenant, collection, from_key)
);
