-- Entries of secondary indexes (see shard-router/src/index_entries.rs for the rules). An entry
-- lives on the shard that owns its own vshard, h(tenant, collection, index, value_key) mod V, so
-- all entries of one value sit together; it refers to its record by key (and the record's vshard),
-- never by physical shard. value_key is an order-preserving text encoding of the indexed value
-- (index-tables' ValueKey): byte order is value order.
--
-- state: pending (written before the record commits; a reader checks the record) or live (the
-- record committed with this value at record_version). claimed_at: when the entry was last
-- (re)claimed, ms since the Unix epoch. copy: the covering or full copy of the record as JSON,
-- NULL for normalized indexes. unique_claim = 1 marks the entries of unique indexes: at most one
-- record may hold a value, and the partial unique index below makes the database enforce it.
CREATE TABLE index_entries (
    tenant TEXT NOT NULL,
    collection TEXT NOT NULL,
    index_name TEXT NOT NULL,
    value_key TEXT NOT NULL,
    record_key TEXT NOT NULL,
    vshard INTEGER NOT NULL,
    record_vshard INTEGER NOT NULL,
    record_version INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'live')),
    claimed_at INTEGER NOT NULL,
    copy TEXT,
    unique_claim INTEGER NOT NULL DEFAULT 0 CHECK (unique_claim IN (0, 1)),
    PRIMARY KEY (tenant, collection, index_name, value_key, record_key)
) WITHOUT ROWID;

CREATE UNIQUE INDEX index_entries_unique_value ON index_entries (tenant, collection, index_name, value_key)
    WHERE unique_claim = 1;
CREATE INDEX index_entries_by_vshard ON index_entries (vshard);
