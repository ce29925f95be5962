-- The load picture: each instance's closed windows of the load it put on the shards
-- (shard-router `storage::meter`, flushed by `balance::windows`). Rows of `scope = 'vshard'`
-- count every statement (vshard -1: placed by no vshard); rows of `scope = 'tenant'` hold the
-- heaviest tenants of the window only. Full-resolution windows are rolled up into wider ones
-- (`width_ms`) and pruned after the configured retention.
CREATE TABLE load_windows (
    start_ms INTEGER NOT NULL,
    width_ms INTEGER NOT NULL,
    instance TEXT NOT NULL,
    shard TEXT NOT NULL,
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    work TEXT NOT NULL,
    reads INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    rows_read INTEGER NOT NULL,
    rows_written INTEGER NOT NULL,
    bytes_read INTEGER NOT NULL,
    bytes_written INTEGER NOT NULL,
    statement_us INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    overcount_us INTEGER NOT NULL,
    PRIMARY KEY (start_ms, width_ms, instance, shard, scope, subject, work)
);
CREATE INDEX load_windows_by_width ON load_windows (width_ms, start_ms);
