-- The jobs listing (`GET /v1/admin/jobs`) reads jobs newest first, of any state.
CREATE INDEX jobs_by_creation ON jobs (created_at, id);
