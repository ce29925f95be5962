-- The address of the client that made the request (its TCP peer, or what the trusted proxies in
-- front of it or a standalone gatekeeper said: `trusted_proxies`), as text; none for actions of
-- the system itself (moves, the balancer, start-up).
ALTER TABLE audit_log ADD COLUMN client_address TEXT;
