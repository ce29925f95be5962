-- Envelope encryption of the catalog's secrets (shard URLs, valet signing keys): a data key seals
-- them (`sealed:v1:<data key id>:<base64>` in `shards.url` and `valet_keys.secret`); it is kept
-- here only wrapped, once under each key of the operator's key file (`storage.secrets_key_file`).
-- No row: the catalog's secrets are stored in the clear (no key file was ever configured).
CREATE TABLE data_keys (
    id TEXT NOT NULL,
    wrapping_key TEXT NOT NULL,
    wrapped TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (id, wrapping_key)
);
