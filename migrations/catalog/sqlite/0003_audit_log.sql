-- Every admin action, written in the same transaction as the change it records.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    tenant TEXT,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    request_id TEXT NOT NULL
);
