-- What each tenant stores on this shard, kept exact by the database itself: triggers on the
-- tables that hold a tenant's data change it in the same transaction as the rows, whoever writes
-- them (a request, a batch of them, a move's copy or clean-up, a purge, an instance of an older
-- version). Counted (shard-router/src/storage/usage.rs reads it):
-- - records: live rows of `records` and `spread_records` (deleted = 0; tombstones are not
--   counted), and their bytes: the stored value's length in bytes (octet_length);
-- - blobs: live rows of `blobs` (deleted = 0: a path that shows an upload), and their bytes (the
--   blob's size); uploads in progress, aborted or superseded content waiting for the janitor are
--   not counted;
-- - index entries: rows of `index_entries` in state live. A pending entry (written before its
--   record commits) is counted once it is marked live; one a failed write left behind is never
--   counted, and is removed by readers and the drift audit.
--
-- placement says what placed the rows, so that a reader can count each part only on the shard
-- the map places it on (a copy a move has not switched to yet, or has left behind until its
-- clean-up, is not counted twice): -1 the tenant's home data (`records`, `blobs`: its pin, else
-- the owner of its home vshard; it moves with the tenant), -2 records of range-distributed
-- collections (`spread_records` with vshard -1: their ranges place them), and a vshard (>= 0)
-- for the rows it places (`spread_records` of hash-distributed collections, `index_entries`).
--
-- stripe: a tenant's writers on one shard would all wait on one row per placement, and a
-- transaction holding that row from one statement while a later statement waits for a record
-- row could deadlock with a writer of that record waiting for the usage row. So a change adds to
-- a row of its (tenant, placement) that no other transaction holds at that moment (FOR UPDATE
-- SKIP LOCKED), and adds a row of its own, under a random stripe, when every row is held: no
-- writer ever waits for usage, and the rows of a (tenant, placement) grow only to the most
-- writers that ever held them at once. A reader sums them. One row's numbers may be negative (a
-- record created through one row and deleted through another); their sum is exact.
CREATE TABLE tenant_usage (
    tenant TEXT COLLATE "C" NOT NULL,
    placement BIGINT NOT NULL,
    stripe BIGINT NOT NULL,
    records BIGINT NOT NULL DEFAULT 0,
    record_bytes BIGINT NOT NULL DEFAULT 0,
    blobs BIGINT NOT NULL DEFAULT 0,
    blob_bytes BIGINT NOT NULL DEFAULT 0,
    index_entries BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, placement, stripe)
) WITH (fillfactor = 50);

-- Adds a change to a row of (t, p) that no other transaction holds, or to a new one. The row is
-- locked first and changed by its key in a statement of its own, which sees its latest version.
CREATE FUNCTION tenant_usage_add(t TEXT, p BIGINT, d_records BIGINT, d_record_bytes BIGINT, d_blobs BIGINT,
                                 d_blob_bytes BIGINT, d_index_entries BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    held BIGINT;
BEGIN
    SELECT s.stripe INTO held FROM tenant_usage s WHERE s.tenant = t AND s.placement = p
    LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE tenant_usage u
        SET records = u.records + d_records, record_bytes = u.record_bytes + d_record_bytes,
            blobs = u.blobs + d_blobs, blob_bytes = u.blob_bytes + d_blob_bytes,
            index_entries = u.index_entries + d_index_entries
        WHERE u.tenant = t AND u.placement = p AND u.stripe = held;
        RETURN;
    END IF;
    LOOP
        INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes, blobs, blob_bytes, index_entries)
        VALUES (t, p, 1 + floor(random() * 4611686018427387903)::BIGINT, d_records, d_record_bytes, d_blobs,
                d_blob_bytes, d_index_entries)
        ON CONFLICT (tenant, placement, stripe) DO NOTHING;
        EXIT WHEN FOUND;
    END LOOP;
END
$$;

-- Rows of `records` (placement -1) and `spread_records` (the row's vshard, -2 for vshard -1). One
-- change per (tenant, placement) and statement.
CREATE FUNCTION tenant_usage_of_records() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    home BOOLEAN := TG_TABLE_NAME = 'records';
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tenant_usage_add(d.tenant, d.placement, SUM(d.n), SUM(d.b), 0, 0, 0)
        FROM (SELECT r.tenant, CASE WHEN home THEN -1 WHEN r.vshard >= 0 THEN r.vshard ELSE -2 END,
                     1, octet_length(r.value)
              FROM new_rows r WHERE r.deleted = 0) AS d (tenant, placement, n, b)
        GROUP BY d.tenant, d.placement;
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM tenant_usage_add(d.tenant, d.placement, SUM(d.n), SUM(d.b), 0, 0, 0)
        FROM (SELECT r.tenant, CASE WHEN home THEN -1 WHEN r.vshard >= 0 THEN r.vshard ELSE -2 END,
                     1, octet_length(r.value)
              FROM new_rows r WHERE r.deleted = 0
              UNION ALL
              SELECT r.tenant, CASE WHEN home THEN -1 WHEN r.vshard >= 0 THEN r.vshard ELSE -2 END,
                     -1, -octet_length(r.value)
              FROM old_rows r WHERE r.deleted = 0) AS d (tenant, placement, n, b)
        GROUP BY d.tenant, d.placement HAVING SUM(d.n) <> 0 OR SUM(d.b) <> 0;
    ELSE
        PERFORM tenant_usage_add(d.tenant, d.placement, -SUM(d.n), -SUM(d.b), 0, 0, 0)
        FROM (SELECT r.tenant, CASE WHEN home THEN -1 WHEN r.vshard >= 0 THEN r.vshard ELSE -2 END,
                     1, octet_length(r.value)
              FROM old_rows r WHERE r.deleted = 0) AS d (tenant, placement, n, b)
        GROUP BY d.tenant, d.placement;
    END IF;
    RETURN NULL;
END
$$;

-- Rows of `blobs` (placement -1).
CREATE FUNCTION tenant_usage_of_blobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tenant_usage_add(d.tenant, -1, 0, 0, SUM(d.n), SUM(d.b)::BIGINT, 0)
        FROM (SELECT b.tenant, 1, b.size FROM new_rows b WHERE b.deleted = 0) AS d (tenant, n, b)
        GROUP BY d.tenant;
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM tenant_usage_add(d.tenant, -1, 0, 0, SUM(d.n), SUM(d.b)::BIGINT, 0)
        FROM (SELECT b.tenant, 1, b.size FROM new_rows b WHERE b.deleted = 0
              UNION ALL
              SELECT b.tenant, -1, -b.size FROM old_rows b WHERE b.deleted = 0) AS d (tenant, n, b)
        GROUP BY d.tenant HAVING SUM(d.n) <> 0 OR SUM(d.b) <> 0;
    ELSE
        PERFORM tenant_usage_add(d.tenant, -1, 0, 0, -SUM(d.n), -SUM(d.b)::BIGINT, 0)
        FROM (SELECT b.tenant, 1, b.size FROM old_rows b WHERE b.deleted = 0) AS d (tenant, n, b)
        GROUP BY d.tenant;
    END IF;
    RETURN NULL;
END
$$;

-- Rows of `index_entries` (placement: the entry's vshard).
CREATE FUNCTION tenant_usage_of_index_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tenant_usage_add(e.tenant, e.vshard, 0, 0, 0, 0, COUNT(*))
        FROM new_rows e WHERE e.state = 'live'
        GROUP BY e.tenant, e.vshard;
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM tenant_usage_add(d.tenant, d.vshard, 0, 0, 0, 0, SUM(d.n))
        FROM (SELECT e.tenant, e.vshard, 1 FROM new_rows e WHERE e.state = 'live'
              UNION ALL
              SELECT e.tenant, e.vshard, -1 FROM old_rows e WHERE e.state = 'live') AS d (tenant, vshard, n)
        GROUP BY d.tenant, d.vshard HAVING SUM(d.n) <> 0;
    ELSE
        PERFORM tenant_usage_add(e.tenant, e.vshard, 0, 0, 0, 0, -COUNT(*))
        FROM old_rows e WHERE e.state = 'live'
        GROUP BY e.tenant, e.vshard;
    END IF;
    RETURN NULL;
END
$$;

-- No write may slip between the count below and the triggers: instances of the previous version
-- may be writing while this migration runs (it runs in one transaction, and these locks are held
-- until it commits).
LOCK TABLE records, spread_records, blobs, index_entries IN SHARE ROW EXCLUSIVE MODE;

-- A trigger with transition tables fires for one kind of event, so each table has three.
CREATE TRIGGER records_usage_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();
CREATE TRIGGER records_usage_update AFTER UPDATE ON records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();
CREATE TRIGGER records_usage_delete AFTER DELETE ON records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();

CREATE TRIGGER spread_records_usage_insert AFTER INSERT ON spread_records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();
CREATE TRIGGER spread_records_usage_update AFTER UPDATE ON spread_records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();
CREATE TRIGGER spread_records_usage_delete AFTER DELETE ON spread_records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_records();

CREATE TRIGGER blobs_usage_insert AFTER INSERT ON blobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_blobs();
CREATE TRIGGER blobs_usage_update AFTER UPDATE ON blobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_blobs();
CREATE TRIGGER blobs_usage_delete AFTER DELETE ON blobs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_blobs();

CREATE TRIGGER index_entries_usage_insert AFTER INSERT ON index_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_index_entries();
CREATE TRIGGER index_entries_usage_update AFTER UPDATE ON index_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_index_entries();
CREATE TRIGGER index_entries_usage_delete AFTER DELETE ON index_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenant_usage_of_index_entries();

-- What the shard holds already (a fleet upgrading), in stripe 0.
INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes, blobs, blob_bytes, index_entries)
SELECT d.tenant, d.placement, 0, SUM(d.records), SUM(d.record_bytes), SUM(d.blobs), SUM(d.blob_bytes),
       SUM(d.index_entries)
FROM (
    SELECT tenant, -1, 1, octet_length(value), 0, 0, 0 FROM records WHERE deleted = 0
    UNION ALL
    SELECT tenant, CASE WHEN vshard >= 0 THEN vshard ELSE -2 END, 1, octet_length(value), 0, 0, 0
    FROM spread_records WHERE deleted = 0
    UNION ALL
    SELECT tenant, -1, 0, 0, 1, size, 0 FROM blobs WHERE deleted = 0
    UNION ALL
    SELECT tenant, vshard, 0, 0, 0, 0, 1 FROM index_entries WHERE state = 'live'
) AS d (tenant, placement, records, record_bytes, blobs, blob_bytes, index_entries)
GROUP BY d.tenant, d.placement;
