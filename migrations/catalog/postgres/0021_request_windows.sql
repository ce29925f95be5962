-- Request health: each instance's closed windows of the requests it answered (api
-- `observability::request_health` notes them, shard-router `balance::request_meter` counts them,
-- `balance::windows` flushes them), per route template (`scope = 'route'`) and per shard
-- (`scope = 'shard'`): requests, errors (5xx and 429) and the latency histogram's bucket counts
-- (`bucket_00` .. `bucket_15`, upper bounds in `catalog::request_windows::LATENCY_BUCKETS_US`),
-- which add up across instances and windows; percentiles are computed on read. Rolled up and
-- pruned as `load_windows` are.
CREATE TABLE request_windows (
    start_ms BIGINT NOT NULL,
    width_ms BIGINT NOT NULL,
    instance TEXT NOT NULL,
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    latency_us BIGINT NOT NULL,
    bucket_00 BIGINT NOT NULL,
    bucket_01 BIGINT NOT NULL,
    bucket_02 BIGINT NOT NULL,
    bucket_03 BIGINT NOT NULL,
    bucket_04 BIGINT NOT NULL,
    bucket_05 BIGINT NOT NULL,
    bucket_06 BIGINT NOT NULL,
    bucket_07 BIGINT NOT NULL,
    bucket_08 BIGINT NOT NULL,
    bucket_09 BIGINT NOT NULL,
    bucket_10 BIGINT NOT NULL,
    bucket_11 BIGINT NOT NULL,
    bucket_12 BIGINT NOT NULL,
    bucket_13 BIGINT NOT NULL,
    bucket_14 BIGINT NOT NULL,
    bucket_15 BIGINT NOT NULL,
    PRIMARY KEY (start_ms, width_ms, instance, scope, subject)
);
CREATE INDEX request_windows_by_width ON request_windows (width_ms, start_ms);
CREATE INDEX request_windows_by_scope ON request_windows (scope, start_ms);
