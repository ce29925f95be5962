//! `/v1/admin/...`: the platform administration plane (scope `admin`).

pub mod routing;
pub mod shards;
pub mod tenants;
