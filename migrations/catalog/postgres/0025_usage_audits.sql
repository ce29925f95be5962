-- The background usage audits (shard-router `catalog::usage_days`, run by `usage::audit`): `run`
-- is the time divided by `usage.audit.interval`; the first instance to write a run's row audits
-- the fleet, and writes what it found when it ends (`finished_ms` stays NULL for an audit that
-- did not end). Rows begun before the oldest day of usage kept are deleted with it.
CREATE TABLE usage_audits (
    run BIGINT PRIMARY KEY,
    instance TEXT NOT NULL,
    started_ms BIGINT NOT NULL,
    finished_ms BIGINT,
    shards BIGINT NOT NULL DEFAULT 0,
    disagreements BIGINT NOT NULL DEFAULT 0,
    repaired BIGINT NOT NULL DEFAULT 0
);
