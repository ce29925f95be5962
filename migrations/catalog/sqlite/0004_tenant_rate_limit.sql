-- A tenant's own rate limit, overriding its tier's (both NULL: the tier's limit applies).
ALTER TABLE tenants ADD COLUMN rate_per_second INTEGER;
ALTER TABLE tenants ADD COLUMN rate_burst INTEGER;
