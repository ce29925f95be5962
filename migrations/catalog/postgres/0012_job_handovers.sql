-- How many times a running job was taken over from an owner whose lease had run out (it
-- crashed, was killed, or could not reach the catalog to renew its lease). A job whose owner
-- stays alive keeps its lease (renewed apart from its progress saves) and is never taken over.
ALTER TABLE jobs ADD COLUMN handovers BIGINT NOT NULL DEFAULT 0;
