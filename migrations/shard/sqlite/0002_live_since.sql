-- The version at which a record last became live (created, or re-created after a delete), so
-- an unconditional write can tell "created" (201) from "replaced" (200) in one statement.
ALTER TABLE records ADD COLUMN live_since INTEGER NOT NULL DEFAULT 1;
