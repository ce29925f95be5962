-- Blobs: binary objects of the tenants whose home is this shard, written in chunks through
-- uploads and switched live atomically (see shard-router/src/blobs.rs for the rules).

-- One row per upload, so that a janitor can find what is left over. state: staging (chunks
-- arriving), live (the blob's current content), superseded (replaced or deleted; readers may
-- still be streaming it), aborted (never visible). changed_at: the last chunk while staging, the
-- change of state afterwards. next_seq, received and last_chunk count what arrived, so chunks
-- are only appended in order and every chunk but the last is full.
CREATE TABLE blob_uploads (
    upload_id TEXT NOT NULL PRIMARY KEY,
    tenant TEXT NOT NULL,
    path TEXT NOT NULL,
    vshard INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('staging', 'live', 'superseded', 'aborted')),
    chunk_size INTEGER NOT NULL,
    next_seq INTEGER NOT NULL,
    received INTEGER NOT NULL,
    last_chunk INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX blob_uploads_by_state ON blob_uploads (state, changed_at);
CREATE INDEX blob_uploads_by_tenant ON blob_uploads (tenant);

-- The bytes of every upload, one row per chunk (a rowid table: its rows are large).
CREATE TABLE blob_chunks (
    upload_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (upload_id, seq)
);

-- The blobs: which upload each path shows. Deleted blobs stay as tombstones (deleted = 1,
-- upload_id NULL) so that versions never go backwards for a path.
CREATE TABLE blobs (
    tenant TEXT NOT NULL,
    path TEXT NOT NULL,
    vshard INTEGER NOT NULL,
    version INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    upload_id TEXT,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    content_type TEXT NOT NULL,
    chunk_size INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, path)
) WITHOUT ROWID;

CREATE INDEX blobs_by_vshard ON blobs (vshard);
