-- A tenant's incarnation: the map epoch of the change that created it. A tenant deleted and
-- created again under the same id gets a new one, and whatever was issued to an earlier one
-- (valet grants, index definitions) names it, so it never reaches the new tenant. Tenants,
-- grants and definitions older than this migration share incarnation 0.
ALTER TABLE tenants ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE valet_grants ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE index_defs ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0;
