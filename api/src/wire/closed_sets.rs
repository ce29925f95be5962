//! The closed sets of the API document: string properties that take one of a few values (a
//! tier, a permission, a job's kind and state...), declared as enums in `openapi.json` so that
//! generators make enum types of them. The wire types keep plain strings (or types whose schema
//! is a string); [`declare_closed_sets`] adds each set's values to the document, taken from the
//! types and constants that produce them where there are some.

use shardgate_shard_router::map::{Distribution, ShardState, Strategy};
use utoipa::openapi::schema::{Schema, SchemaType, Type};
use utoipa::openapi::{OpenApi, RefOr};

/// Each closed set: the properties (`Schema.property`) that take it, and its values.
fn closed_sets() -> Vec<(&'static [&'static str], Vec<String>)> {
    use shardgate_shard_router::Tier;
    let names = |values: &[&str]| values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
    let serialized =
        |values: Vec<serde_json::Value>| values.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
    vec![
        (
            &["Tenant.tier", "CreateTenant.tier", "UpdateTenant.tier", "TierQuotas.tier"],
            names(&[Tier::Free, Tier::Standard, Tier::Premium].map(Tier::as_str)),
        ),
        (
            &["IssueValetKey.permission"],
            names(&[shardgate_valet::Permission::Read, shardgate_valet::Permission::Write].map(|p| p.as_str())),
        ),
        // `issue_valet_key` (routes/valet_keys.rs): a read key allows GET (and HEAD), a write key PUT.
        (&["ValetKey.method"], names(&["GET", "PUT"])),
        (
            &["Shard.state", "UpdateShard.state", "MapShard.state", "PlannedLoad.state"],
            names(
                &[ShardState::Active, ShardState::ReadOnly, ShardState::Draining, ShardState::Offline]
                    .map(ShardState::as_str),
            ),
        ),
        (
            &[
                "CollectionDistribution.distribution",
                "CollectionSummary.distribution",
                "ListingExplanation.distribution",
                "RouteExplanation.distribution",
            ],
            names(&[Distribution::Tenant, Distribution::Hash, Distribution::Range].map(Distribution::as_str)),
        ),
        (
            &["RouteExplanation.strategy"],
            serialized(
                [Strategy::Lookup, Strategy::Hash, Strategy::RecordHash, Strategy::Range]
                    .iter()
                    .map(|s| serde_json::to_value(s).unwrap_or_default())
                    .collect(),
            ),
        ),
        (
            &["Job.kind", "JobLeaseHolder.kind"],
            names(&[
                shardgate_index_tables::backfill::BACKFILL_JOB,
                shardgate_index_tables::drift_audit::DRIFT_AUDIT_JOB,
                shardgate_shard_router::moves::job::MOVE_JOB,
                shardgate_shard_router::moves::job::VSHARD_MOVE_JOB,
                shardgate_shard_router::moves::job::RANGE_MOVE_JOB,
                shardgate_shard_router::moves::job::REDISTRIBUTE_JOB,
                shardgate_shard_router::moves::rebalancer::REBALANCE_JOB,
            ]),
        ),
        // The states the catalog's jobs table keeps (`catalog/jobs`): a job runs, then ends done,
        // failed or cancelled.
        (&["Job.state"], names(&["running", "done", "failed", "cancelled"])),
        // index-tables `registry.rs` (`IndexState`) as the catalog keeps it.
        (&["IndexInfo.state"], names(&["building", "active", "failed"])),
        // index-tables `definition.rs` (`Layout`'s `kind`).
        (&["IndexInfo.layout", "IndexSpec.layout"], names(&["normalized", "covering", "full"])),
        (
            &["SigningKeyInfo.state"],
            names(
                &[
                    shardgate_shard_router::catalog::ValetKeyState::Current,
                    shardgate_shard_router::catalog::ValetKeyState::Active,
                    shardgate_shard_router::catalog::ValetKeyState::Retired,
                ]
                .map(|s| s.name()),
            ),
        ),
    ]
}

/// Declares each closed set ([`closed_sets`]) as the enum of its properties in `openapi`; a
/// property that may be `null` keeps `null` among its values. A property named that the document
/// lacks is left alone (`tests/openapi_drift.rs` checks every one is there).
pub fn declare_closed_sets(openapi: &mut OpenApi) {
    let Some(components) = openapi.components.as_mut() else { return };
    for (properties, values) in closed_sets() {
        for property in properties {
            let Some((schema, field)) = property.split_once('.') else { continue };
            let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(schema) else { continue };
            let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut(field) else { continue };
            let nullable = matches!(&field.schema_type, SchemaType::Array(types) if types.contains(&Type::Null));
            let mut enumerated: Vec<serde_json::Value> = values.iter().map(|v| v.clone().into()).collect();
            if nullable {
                enumerated.push(serde_json::Value::Null);
            }
            field.enum_values = Some(enumerated);
        }
    }
}

/// The properties [`declare_closed_sets`] declares (for the test that checks each is in the
/// document).
#[doc(hidden)]
pub fn closed_set_properties() -> Vec<&'static str> {
    closed_sets().into_iter().flat_map(|(properties, _)| properties.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_has_distinct_values() {
        for (properties, values) in closed_sets() {
            let mut sorted = values.clone();
            sorted.sort();
            sorted.dedup();
            assert!(values.len() >= 2 && sorted.len() == values.len(), "{properties:?}: {values:?}");
        }
    }
}
