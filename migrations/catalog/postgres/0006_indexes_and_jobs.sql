-- Secondary index definitions per tenant collection. A change moves the map epoch on, so every
-- instance learns it with its next catalog poll.
CREATE TABLE index_defs (
    tenant TEXT COLLATE "C" NOT NULL,
    collection TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    definition TEXT NOT NULL,
    state TEXT NOT NULL,
    job_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, collection, name)
);

-- Background jobs (index backfills, drift audits): visible at /v1/admin/jobs/{id} and resumed
-- after a restart from their stored progress.
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    tenant TEXT,
    target TEXT NOT NULL,
    state TEXT NOT NULL,
    progress TEXT NOT NULL,
    error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX jobs_by_state ON jobs (state, created_at);
