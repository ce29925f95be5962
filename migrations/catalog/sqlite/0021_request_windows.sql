-- Request health: each instance's closed windows of the requests it answered (api
-- `observability::request_health` notes them, shard-router `balance::request_meter` counts them,
-- `balance::windows` flushes them), per route template (`scope = 'route'`) and per shard
-- (`scope = 'shard'`): requests, errors (5xx and 429) and the latency histogram's bucket counts
-- (`bucket_00` .. `bucket_15`, upper bounds in `catalog::request_windows::LATENCY_BUCKETS_US`),
-- which add up across instances and windows; percentiles are computed on read. Rolled up and
-- pruned as `load_windows` are.
CREATE TABLE request_windows (
    start_ms INTEGER NOT NULL,
    width_ms INTEGER NOT NULL,
    instance TEXT NOT NULL,
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    latency_us INTEGER NOT NULL,
    bucket_00 INTEGER NOT NULL,
    bucket_01 INTEGER NOT NULL,
    bucket_02 INTEGER NOT NULL,
    bucket_03 INTEGER NOT NULL,
    bucket_04 INTEGER NOT NULL,
    bucket_05 INTEGER NOT NULL,
    bucket_06 INTEGER NOT NULL,
    bucket_07 INTEGER NOT NULL,
    bucket_08 INTEGER NOT NULL,
    bucket_09 INTEGER NOT NULL,
    bucket_10 INTEGER NOT NULL,
    bucket_11 INTEGER NOT NULL,
    bucket_12 INTEGER NOT NULL,
    bucket_13 INTEGER NOT NULL,
    bucket_14 INTEGER NOT NULL,
    bucket_15 INTEGER NOT NULL,
    PRIMARY KEY (start_ms, width_ms, instance, scope, subject)
);
CREATE INDEX request_windows_by_width ON request_windows (width_ms, start_ms);
CREATE INDEX request_windows_by_scope ON request_windows (scope, start_ms);
