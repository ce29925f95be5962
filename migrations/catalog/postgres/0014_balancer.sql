-- The balancer (shard-router `balance::runner`). One row: the mode an operator switched it to
-- at runtime (NULL: the configured `balancer.mode`), who did and when, and the lease of the one
-- instance that runs it.
CREATE TABLE balancer (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mode TEXT,
    mode_by TEXT,
    mode_at_ms BIGINT,
    owner TEXT,
    lease_until BIGINT
);
INSERT INTO balancer (id) VALUES (1);

-- Every run's decision: its inputs, what it chose and the predicted effect, or why it did
-- nothing (`decision`, JSON). A run that chose a move names its subject (the job claim, e.g.
-- `vshard:7`, for cooldowns) and target; in `propose` mode it is a proposal (`pending`, then
-- `approved`, `expired` or `failed`); the move job it started, if any.
CREATE TABLE balancer_runs (
    id BIGSERIAL PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    instance TEXT NOT NULL,
    mode TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    decision TEXT NOT NULL,
    subject TEXT,
    to_shard TEXT,
    proposal TEXT,
    settled TEXT,
    settled_at_ms BIGINT,
    job TEXT
);
CREATE INDEX balancer_runs_by_subject ON balancer_runs (subject, at_ms);
CREATE INDEX balancer_runs_by_proposal ON balancer_runs (proposal);
