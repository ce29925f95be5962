-- Moves on with every valet grant revocation and signing key retirement, in the same
-- transaction: an instance that sees it move drops the valet checks it cached.
ALTER TABLE shard_map ADD COLUMN valet_generation INTEGER NOT NULL DEFAULT 0;
