-- Tenants this shard must not serve, whatever map an instance routes on: a tenant moving away
-- (state frozen: reads still served, writes refused while the last changes are copied) or gone
-- (state moved: reads and writes refused; its rows are the old copy until the mover removes
-- them). A request refused here makes the gateway look at the catalog for the tenant's new shard.
-- The row is removed when the tenant moves back onto this shard or the move rolls back.
CREATE TABLE tenant_fences (
    tenant TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('frozen', 'moved')),
    job_id TEXT NOT NULL,
    since INTEGER NOT NULL
);
