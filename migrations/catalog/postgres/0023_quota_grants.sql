-- Quota allowances (shard-router `catalog::quota_grants`, used by `usage::grants`): before an
-- instance lets a tenant's writes grow its usage, it takes an allowance of each limited part
-- (records, bytes, blobs, index entries) from what the tenant's quotas leave once its usage, summed
-- over the shards, and every other instance's live allowance are counted. An allowance lives until
-- `expires_ms` (the instance renews it while it writes; a stopped instance deletes its rows).
-- What an allowance lets through is, from then on, counted twice (in the allowance, and in the
-- usage once written) until the next renewal: never less than the truth.
CREATE TABLE quota_grants (
    tenant TEXT NOT NULL,
    instance TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    records BIGINT NOT NULL,
    record_bytes BIGINT NOT NULL,
    blobs BIGINT NOT NULL,
    blob_bytes BIGINT NOT NULL,
    index_entries BIGINT NOT NULL,
    PRIMARY KEY (tenant, instance)
);
-- One row per tenant whose allowances are being decided: an instance deciding holds it (written
-- first in the deciding transaction), so two instances never decide one tenant's at once.
CREATE TABLE quota_turns (
    tenant TEXT PRIMARY KEY,
    turns BIGINT NOT NULL
);
