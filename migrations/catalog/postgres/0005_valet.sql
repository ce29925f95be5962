-- Valet key signing keys: one 'current' (signs new grants), 'active' ones (still verify) and
-- 'retired' ones (every URL they signed is refused).
CREATE TABLE valet_keys (
    id TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT
);

-- Every valet key (grant) issued: what it allows, and whether it was used (single-use) or revoked.
CREATE TABLE valet_grants (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    path TEXT NOT NULL,
    permission TEXT NOT NULL,
    key_id TEXT NOT NULL,
    not_before BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    single_use INTEGER NOT NULL,
    used_at BIGINT,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX valet_grants_by_tenant ON valet_grants (tenant, created_at);
