-- Blobs: binary objects of the tenants whose home is this shard, written in chunks through
-- uploads and switched live atomically (see shard-router/src/blobs.rs for the rules). Paths sort
-- in byte order (COLLATE "C"), the same order SQLite uses.

-- One row per upload, so that a janitor can find what is left over. state: staging (chunks
-- arriving), live (the blob's current content), superseded (replaced or deleted; readers may
-- still be streaming it), aborted (never visible). changed_at: the last chunk while staging, the
-- change of state afterwards. next_seq, received and last_chunk count what arrived, so chunks
-- are only appended in order and every chunk but the last is full.
CREATE TABLE blob_uploads (
    upload_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant TEXT COLLATE "C" NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    vshard BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('staging', 'live', 'superseded', 'aborted')),
    chunk_size BIGINT NOT NULL,
    next_seq BIGINT NOT NULL,
    received BIGINT NOT NULL,
    last_chunk BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    changed_at BIGINT NOT NULL
);

CREATE INDEX blob_uploads_by_state ON blob_uploads (state, changed_at);
CREATE INDEX blob_uploads_by_tenant ON blob_uploads (tenant);

-- The bytes of every upload, one row per chunk. Stored out of line without compression: blobs
-- are often compressed already, and pglz would spend CPU on every chunk for nothing.
CREATE TABLE blob_chunks (
    upload_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- The blobs: which upload each path shows. Deleted blobs stay as tombstones (deleted = 1,
-- upload_id NULL) so that versions never go backwards for a path.
CREATE TABLE blobs (
    tenant TEXT COLLATE "C" NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    vshard BIGINT NOT NULL,
    version BIGINT NOT NULL,
    deleted BIGINT NOT NULL DEFAULT 0,
    upload_id TEXT COLLATE "C",
    size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    content_type TEXT NOT NULL,
    chunk_size BIGINT NOT NULL,
    chunk_count BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, path)
);

CREATE INDEX blobs_by_vshard ON blobs (vshard);
