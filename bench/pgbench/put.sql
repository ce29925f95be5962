-- What one gateway PUT without precondition does on its shard (shard-router RecordStore::upsert,
-- statement INSERT_NEW_OR_UPDATE): one INSERT ... ON CONFLICT DO UPDATE that bumps the version,
-- guarded by the shard's write fence, exactly as the gateway issues it.
-- Run with: pgbench -n -M prepared -f bench/pgbench/put.sql (in the tenant's home shard database)
\set n random(0, 9999)
INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) SELECT 'bench', 'items', 'k-' || lpad(:n::text, 5, '0'), 0, 1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 0, '{"n":' || :n || ',"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}', 1 WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > 9223372036854775806) ON CONFLICT (tenant, collection, key) DO UPDATE SET version = records.version + 1, updated_at = excluded.updated_at, value = excluded.value, vshard = excluded.vshard, live_since = CASE WHEN records.deleted = 1 THEN records.version + 1 ELSE records.live_since END, deleted = 0 RETURNING version, live_since;
