-- Jobs that move data (tenant moves, vshard rebalances, drains) run on one instance at a time:
-- owner is the instance holding the job's lease until lease_until (ms since the Unix epoch); an
-- instance that finds a running job whose lease ran out takes it over and resumes it from its
-- stored phase. cancel_requested asks the owner to roll the job back.
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;

-- What a running job owns (`tenant:<id>`, `vshard:<n>`): one job per tenant or vshard at a time.
CREATE TABLE job_claims (
    subject TEXT COLLATE "C" PRIMARY KEY,
    job_id TEXT NOT NULL
);
CREATE INDEX job_claims_by_job ON job_claims (job_id);
