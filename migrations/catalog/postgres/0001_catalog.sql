-- The catalog: registered shards, the vshard table, tenants and their pins, and the map epoch.
CREATE TABLE shard_map (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    epoch BIGINT NOT NULL,
    vshard_count BIGINT NOT NULL
);
INSERT INTO shard_map (id, epoch, vshard_count) VALUES (1, 0, 1024);

CREATE TABLE shards (
    id TEXT COLLATE "C" PRIMARY KEY,
    url TEXT NOT NULL,
    engine TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE vshards (
    vshard BIGINT PRIMARY KEY,
    shard TEXT COLLATE "C" NOT NULL REFERENCES shards (id)
);

CREATE TABLE tenants (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT NOT NULL,
    tier TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE tenant_pins (
    tenant TEXT COLLATE "C" PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    shard TEXT COLLATE "C" NOT NULL REFERENCES shards (id)
);
