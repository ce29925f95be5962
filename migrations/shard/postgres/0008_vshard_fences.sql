-- Vshards whose index entries this shard must not serve, whatever map an instance routes on: a
-- vshard moving away (state frozen: entries still read, not written while the last changes are
-- copied) or gone (state moved: its entries here are the old copy until the mover removes them).
-- The unpinned tenants a moving vshard places are fenced one by one in tenant_fences. The row
-- is removed when the vshard moves back onto this shard or the move rolls back.
CREATE TABLE vshard_fences (
    vshard BIGINT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('frozen', 'moved')),
    job_id TEXT NOT NULL,
    since BIGINT NOT NULL
);
