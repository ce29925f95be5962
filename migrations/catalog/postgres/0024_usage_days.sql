-- Daily usage for billing (shard-router `catalog::usage_days`, kept by `usage::daily`, read by
-- `GET /v1/admin/usage?day=`): per UTC day (`day`, days since 1970-01-01) and tenant, the hours
-- of storage held (`storage_byte_hours`: the record and blob bytes an hourly sample found, one
-- hour each), the requests answered for the tenant, the bytes of their bodies received
-- (`bytes_written`) and sent (`bytes_read`), and the bytes moved through valet URLs
-- (`valet_bytes`). Every instance adds what it counted to the rows (counts only grow, except a
-- valet reservation given back); a limited tenant's valet bytes are reserved here before they
-- move. Rows older than `usage.retention_days` are deleted.
CREATE TABLE usage_days (
    day BIGINT NOT NULL,
    tenant TEXT NOT NULL,
    storage_byte_hours BIGINT NOT NULL DEFAULT 0,
    requests BIGINT NOT NULL DEFAULT 0,
    bytes_read BIGINT NOT NULL DEFAULT 0,
    bytes_written BIGINT NOT NULL DEFAULT 0,
    valet_bytes BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (day, tenant)
);
-- The hourly storage samples taken (`hour`: hours since the Unix epoch), one per hour by whichever
-- instance writes it first, in the same transaction as the byte-hours it adds.
CREATE TABLE usage_samples (
    hour BIGINT PRIMARY KEY,
    instance TEXT NOT NULL,
    taken_ms BIGINT NOT NULL,
    tenants BIGINT NOT NULL,
    unreachable_shards BIGINT NOT NULL
);
