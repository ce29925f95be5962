-- A move finds the rows of a tenant changed since its previous pass. Without these indexes
-- that means reading all of the tenant's rows, twice under the fence (the last delta and its
-- comparison), which made the cut-over last as long as two scans of the tenant. Every update
-- of a record now also updates this index (no HOT update); bench/run.sh measures what that
-- costs a PUT.
CREATE INDEX records_changed ON records (tenant, updated_at);
CREATE INDEX blobs_changed ON blobs (tenant, updated_at);
