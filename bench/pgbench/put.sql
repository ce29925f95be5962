-- What one gateway PUT of an existing record does on its shard (shard-router RecordStore::put):
-- read the current version and tombstone flag, then an update conditional on that version which
-- bumps it. Two autocommit statements, as the gateway issues them.
-- Run with: pgbench -n -M prepared -f bench/pgbench/put.sql (in the tenant's home shard database)
\set n random(0, 9999)
SELECT version AS cur, deleted AS del FROM records WHERE tenant = 'bench' AND collection = 'items' AND key = 'k-' || lpad(:n::text, 5, '0') \gset
UPDATE records SET version = :cur + 1, updated_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint, deleted = 0, value = '{"n":' || :n || ',"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}' WHERE tenant = 'bench' AND collection = 'items' AND key = 'k-' || lpad(:n::text, 5, '0') AND version = :cur RETURNING version;
