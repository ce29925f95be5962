//! HTTP handlers, one file per URL family:
//!
//! | URL | file |
//! | --- | --- |
//! | `/v1/tenants/{tenant}/collections/{collection}/records[/{key}]` | `records.rs` |
//! | `/v1/admin/tenants[/{id}]` | `admin/tenants.rs` |
//! | `/v1/admin/tenants/{id}/holdings` | `admin/holdings.rs` |
//! | `/v1/admin/tenants/{id}/usage` | `admin/usage.rs` |
//! | `/v1/admin/usage?day=` (the daily usage export) | `admin/usage_export.rs` |
//! | `/v1/admin/tenants/{id}/collections[/{collection}[/split]]` | `admin/collections.rs` |
//! | `/v1/admin/load[/heatmap]` (the load picture) | `admin/load.rs` |
//! | `/v1/admin/health/requests` (request health) | `admin/request_health.rs` |
//! | `/v1/admin/balancer/plan` | `admin/balancer.rs` |
//! | `/v1/admin/shards[/{id}]` | `admin/shards.rs` |
//! | `/v1/admin/shard-map`, `/v1/admin/route` | `admin/routing.rs` |
//! | `/v1/admin/audit` | `admin/audit_log.rs` |
//! | `/v1/admin/jobs/{id}` | `admin/jobs.rs` |
//! | `/v1/admin/index-audits` (index drift audits) | `admin/index_audits.rs` |
//! | `/v1/tenants/{tenant}/collections/{collection}/indexes[/{index}[/records]]` | `indexes.rs` |
//! | `/v1/tenants/{tenant}/blobs[/{path}]` | `blobs.rs` |
//! | `/v1/tenants/{tenant}/valet-keys[/{id}]` | `valet_keys.rs` |
//! | `/v1/tenants/{tenant}/usage` | `usage.rs` |
//! | `/valet/{tenant}/{path}` (no token: the signature is the credential) | `valet.rs` |
//! | `/v1/admin/valet/signing-keys[/rotate \| /{id}]` | `admin/signing_keys.rs` |
//! | `/v1/admin/key-sets/refresh` | `admin/key_sets.rs` |
//! | `/healthz`, `/readyz`, `/metrics` | `ops.rs` |
//! | `/console` (the operator's page; its files are in `api/console/`) | `console.rs` |
//!
//! A route module adapts HTTP to the services below it (the app state, the blob and valet
//! services, the domain crates) and never imports another route module.

pub mod admin;
pub mod blobs;
pub mod console;
pub mod indexes;
pub mod ops;
pub mod records;
pub mod usage;
pub mod valet;
pub mod valet_keys;
