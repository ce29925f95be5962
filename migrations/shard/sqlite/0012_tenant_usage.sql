-- What each tenant stores on this shard, kept exact by the database itself: triggers on the
-- tables that hold a tenant's data change it in the same transaction as the rows, whoever writes
-- them (a request, a batch of them, a move's copy or clean-up, a purge, an instance of an older
-- version). Counted (shard-router/src/storage/usage.rs reads it):
-- - records: live rows of `records` and `spread_records` (deleted = 0; tombstones are not
--   counted), and their bytes: the stored value's length in bytes (UTF-8);
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
-- stripe: always 0 here (SQLite has one writer at a time); on PostgreSQL a change goes to a row
-- of its (tenant, placement) that no other transaction holds, so there may be several, and a
-- reader sums them on both engines alike.
CREATE TABLE tenant_usage (
    tenant TEXT NOT NULL,
    placement INTEGER NOT NULL,
    stripe INTEGER NOT NULL,
    records INTEGER NOT NULL DEFAULT 0,
    record_bytes INTEGER NOT NULL DEFAULT 0,
    blobs INTEGER NOT NULL DEFAULT 0,
    blob_bytes INTEGER NOT NULL DEFAULT 0,
    index_entries INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, placement, stripe)
) WITHOUT ROWID;

-- Row triggers (SQLite has no others). An update adds the difference in one statement when the
-- row stays in its placement (the primary key holds the tenant, so only a vshard can change),
-- and takes the old row out and puts the new one in otherwise. Tombstones and pending entries
-- change nothing, so the triggers' WHEN clauses skip them.

CREATE TRIGGER records_usage_insert AFTER INSERT ON records WHEN NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    VALUES (NEW.tenant, -1, 0, 1, length(CAST(NEW.value AS BLOB)))
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER records_usage_update AFTER UPDATE OF tenant, deleted, value ON records
WHEN OLD.deleted = 0 OR NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    SELECT OLD.tenant, -1, 0, -1, -length(CAST(OLD.value AS BLOB)) WHERE OLD.deleted = 0 AND NEW.tenant <> OLD.tenant
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    SELECT NEW.tenant, -1, 0, d.n, d.b
    FROM (SELECT (NEW.deleted = 0) - (OLD.deleted = 0 AND NEW.tenant = OLD.tenant) AS n,
                 CASE WHEN NEW.deleted = 0 THEN length(CAST(NEW.value AS BLOB)) ELSE 0 END
                   - CASE WHEN OLD.deleted = 0 AND NEW.tenant = OLD.tenant THEN length(CAST(OLD.value AS BLOB))
                     ELSE 0 END AS b) AS d
    WHERE d.n <> 0 OR d.b <> 0
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER records_usage_delete AFTER DELETE ON records WHEN OLD.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    VALUES (OLD.tenant, -1, 0, -1, -length(CAST(OLD.value AS BLOB)))
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER spread_records_usage_insert AFTER INSERT ON spread_records WHEN NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    VALUES (NEW.tenant, CASE WHEN NEW.vshard >= 0 THEN NEW.vshard ELSE -2 END, 0, 1, length(CAST(NEW.value AS BLOB)))
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER spread_records_usage_update AFTER UPDATE OF tenant, vshard, deleted, value ON spread_records
WHEN OLD.deleted = 0 OR NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    SELECT OLD.tenant, CASE WHEN OLD.vshard >= 0 THEN OLD.vshard ELSE -2 END, 0, -1, -length(CAST(OLD.value AS BLOB))
    WHERE OLD.deleted = 0 AND (NEW.tenant <> OLD.tenant OR NEW.vshard <> OLD.vshard)
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    SELECT NEW.tenant, CASE WHEN NEW.vshard >= 0 THEN NEW.vshard ELSE -2 END, 0, d.n, d.b
    FROM (SELECT (NEW.deleted = 0) - (OLD.deleted = 0 AND NEW.tenant = OLD.tenant AND NEW.vshard = OLD.vshard) AS n,
                 CASE WHEN NEW.deleted = 0 THEN length(CAST(NEW.value AS BLOB)) ELSE 0 END
                   - CASE WHEN OLD.deleted = 0 AND NEW.tenant = OLD.tenant AND NEW.vshard = OLD.vshard
                     THEN length(CAST(OLD.value AS BLOB)) ELSE 0 END AS b) AS d
    WHERE d.n <> 0 OR d.b <> 0
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER spread_records_usage_delete AFTER DELETE ON spread_records WHEN OLD.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes)
    VALUES (OLD.tenant, CASE WHEN OLD.vshard >= 0 THEN OLD.vshard ELSE -2 END, 0, -1, -length(CAST(OLD.value AS BLOB)))
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET records = records + excluded.records, record_bytes = record_bytes + excluded.record_bytes;
END;

CREATE TRIGGER blobs_usage_insert AFTER INSERT ON blobs WHEN NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, blobs, blob_bytes)
    VALUES (NEW.tenant, -1, 0, 1, NEW.size)
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET blobs = blobs + excluded.blobs, blob_bytes = blob_bytes + excluded.blob_bytes;
END;

CREATE TRIGGER blobs_usage_update AFTER UPDATE OF tenant, deleted, size ON blobs
WHEN OLD.deleted = 0 OR NEW.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, blobs, blob_bytes)
    SELECT OLD.tenant, -1, 0, -1, -OLD.size WHERE OLD.deleted = 0 AND NEW.tenant <> OLD.tenant
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET blobs = blobs + excluded.blobs, blob_bytes = blob_bytes + excluded.blob_bytes;
    INSERT INTO tenant_usage (tenant, placement, stripe, blobs, blob_bytes)
    SELECT NEW.tenant, -1, 0, d.n, d.b
    FROM (SELECT (NEW.deleted = 0) - (OLD.deleted = 0 AND NEW.tenant = OLD.tenant) AS n,
                 CASE WHEN NEW.deleted = 0 THEN NEW.size ELSE 0 END
                   - CASE WHEN OLD.deleted = 0 AND NEW.tenant = OLD.tenant THEN OLD.size ELSE 0 END AS b) AS d
    WHERE d.n <> 0 OR d.b <> 0
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET blobs = blobs + excluded.blobs, blob_bytes = blob_bytes + excluded.blob_bytes;
END;

CREATE TRIGGER blobs_usage_delete AFTER DELETE ON blobs WHEN OLD.deleted = 0
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, blobs, blob_bytes)
    VALUES (OLD.tenant, -1, 0, -1, -OLD.size)
    ON CONFLICT (tenant, placement, stripe) DO UPDATE
    SET blobs = blobs + excluded.blobs, blob_bytes = blob_bytes + excluded.blob_bytes;
END;

CREATE TRIGGER index_entries_usage_insert AFTER INSERT ON index_entries WHEN NEW.state = 'live'
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, index_entries)
    VALUES (NEW.tenant, NEW.vshard, 0, 1)
    ON CONFLICT (tenant, placement, stripe) DO UPDATE SET index_entries = index_entries + excluded.index_entries;
END;

CREATE TRIGGER index_entries_usage_update AFTER UPDATE OF tenant, vshard, state ON index_entries
WHEN (OLD.state = 'live') <> (NEW.state = 'live')
    OR (OLD.state = 'live' AND (NEW.tenant <> OLD.tenant OR NEW.vshard <> OLD.vshard))
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, index_entries)
    SELECT OLD.tenant, OLD.vshard, 0, -1 WHERE OLD.state = 'live'
    ON CONFLICT (tenant, placement, stripe) DO UPDATE SET index_entries = index_entries + excluded.index_entries;
    INSERT INTO tenant_usage (tenant, placement, stripe, index_entries)
    SELECT NEW.tenant, NEW.vshard, 0, 1 WHERE NEW.state = 'live'
    ON CONFLICT (tenant, placement, stripe) DO UPDATE SET index_entries = index_entries + excluded.index_entries;
END;

CREATE TRIGGER index_entries_usage_delete AFTER DELETE ON index_entries WHEN OLD.state = 'live'
BEGIN
    INSERT INTO tenant_usage (tenant, placement, stripe, index_entries)
    VALUES (OLD.tenant, OLD.vshard, 0, -1)
    ON CONFLICT (tenant, placement, stripe) DO UPDATE SET index_entries = index_entries + excluded.index_entries;
END;

-- What the shard holds already (a fleet upgrading). The migration runs in one transaction, and
-- SQLite has one writer: no write slips between this count and the triggers.
INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes, blobs, blob_bytes, index_entries)
SELECT d.tenant, d.placement, 0, SUM(d.records), SUM(d.record_bytes), SUM(d.blobs), SUM(d.blob_bytes),
       SUM(d.index_entries)
FROM (
    SELECT tenant, -1 AS placement, 1 AS records, length(CAST(value AS BLOB)) AS record_bytes, 0 AS blobs,
           0 AS blob_bytes, 0 AS index_entries
    FROM records WHERE deleted = 0
    UNION ALL
    SELECT tenant, CASE WHEN vshard >= 0 THEN vshard ELSE -2 END, 1, length(CAST(value AS BLOB)), 0, 0, 0
    FROM spread_records WHERE deleted = 0
    UNION ALL
    SELECT tenant, -1, 0, 0, 1, size, 0 FROM blobs WHERE deleted = 0
    UNION ALL
    SELECT tenant, vshard, 0, 0, 0, 0, 1 FROM index_entries WHERE state = 'live'
) AS d
GROUP BY d.tenant, d.placement;
