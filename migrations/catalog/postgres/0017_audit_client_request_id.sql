-- The request id a client sent (`x-request-id`), kept beside the server's own in `request_id`:
-- a client may send any id, another request's too, so it is never the entry's request id.
ALTER TABLE audit_log ADD COLUMN client_request_id TEXT;
