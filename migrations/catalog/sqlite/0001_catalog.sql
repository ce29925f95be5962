-- The catalog: registered shards, the vshard table, tenants and their pins, and the map epoch.
CREATE TABLE shard_map (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL,
    vshard_count INTEGER NOT NULL
);
INSERT INTO shard_map (id, epoch, vshard_count) VALUES (1, 0, 1024);

CREATE TABLE shards (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    engine TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE vshards (
    vshard INTEGER PRIMARY KEY,
    shard TEXT NOT NULL REFERENCES shards (id)
);

CREATE TABLE tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    tier TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE tenant_pins (
    tenant TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    shard TEXT NOT NULL REFERENCES shards (id)
);
