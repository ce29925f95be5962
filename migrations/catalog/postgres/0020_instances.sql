-- The instance registry (shard-router `catalog::instances`, reported by the api's
-- `startup::instance_report`): every gateway instance writes its row once per report interval,
-- with its version, start, advertised address and the readiness of each component as its
-- /readyz computes it (`readiness`, JSON). An instance is gone when it has not reported for two
-- of its intervals, or stopped cleanly (`stopped_ms`). Rows not seen for the load windows'
-- retention are deleted.
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    started_ms BIGINT NOT NULL,
    address TEXT NOT NULL,
    report_interval_ms BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL,
    stopped_ms BIGINT,
    readiness TEXT NOT NULL
);
CREATE INDEX instances_by_last_seen ON instances (last_seen_ms);
