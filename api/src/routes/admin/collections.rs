//! `/v1/admin/tenants/{id}/collections`: a tenant's collections, each with its distribution and
//! records. `/v1/admin/tenants/{id}/collections/{collection}`: a collection's distribution
//! (`tenant`, `hash` or `range` with its ranges). The routing is [`shardgate_shard_router::map`]'s; the
//! change is [`shardgate_shard_router::mover::Mover::redistribute`] (a catalog change, or a
//! `collection.redistribute` job when records change table). `.../split` splits a
//! range ([`shardgate_shard_router::mover::Mover::split_range`]: a catalog change, or a
//! `range.move` job when its keys change shard).

use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shardgate_shard_router::catalog::{CollectionRow, RangeRow};
use shardgate_shard_router::mover::RangeSplit;
use shardgate_shard_router::redistribute::Redistribution;
use shardgate_shard_router::{CollectionName, Distribution, ShardId, TenantId, now_ms};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiJson, ApiPath};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code, invalid_path, tenant_in_path};
use crate::wire::openapi::errors;

/// Path of a tenant's collections.
#[derive(Debug, Deserialize, IntoParams)]
pub struct CollectionsPath {
    /// Tenant id.
    id: String,
}

/// One collection of a tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionSummary {
    /// The collection's name.
    pub name: String,
    /// `tenant` (the whole collection on the tenant's home shard), `hash` or `range`.
    #[schema(value_type = String, example = "tenant")]
    pub distribution: Distribution,
    /// For `range`: the ranges in ascending `from` order; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<Vec<RangeView>>,
    /// Its live records, counted now on the shards that answered.
    pub records: u64,
}

/// A tenant's collections.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantCollectionsView {
    /// The tenant.
    pub tenant: String,
    /// Its collections, by name (byte order).
    pub collections: Vec<CollectionSummary>,
    /// Whether every shard read answered; when not, `records` misses the parts of
    /// `unreachable_shards`, and if the tenant's home shard is among them, the collections
    /// distributed `tenant` are missing.
    pub complete: bool,
    /// Shards that did not answer in time (or are offline).
    pub unreachable_shards: Vec<String>,
}

errors!(ListCollectionsErrors: TenantNotFound, CatalogUnavailable);

/// A tenant's collections: those distributed `hash` or `range` (with their ranges), and those
/// distributed `tenant` (the default, which the catalog does not record) that hold live records
/// on the tenant's home shard, each with its live records, counted now (a statement on each
/// shard that may hold some, through the tenant's index; a shard that does not answer within
/// `storage.pool.probe_timeout` is named and left out).
#[utoipa::path(get, path = "/v1/admin/tenants/{id}/collections", params(CollectionsPath), responses(
    (status = 200, description = "The tenant's collections", body = TenantCollectionsView),
    ListCollectionsErrors,
))]
pub async fn list_collections(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<CollectionsPath>,
) -> Result<axum::Json<TenantCollectionsView>, ApiError> {
    let tenant = tenant_in_path(&path.id)?;
    app.router.catalog().get_tenant(&tenant).await?.ok_or_else(ApiError::tenant_not_found)?;
    let listed = app.topology().tenant_collections(&tenant).await?;
    Ok(axum::Json(TenantCollectionsView {
        tenant: tenant.to_string(),
        collections: listed
            .collections
            .into_iter()
            .map(|c| CollectionSummary {
                ranges: (c.distribution == Distribution::Range).then(|| range_views(&c.ranges)),
                name: c.name,
                distribution: c.distribution,
                records: c.records,
            })
            .collect(),
        complete: listed.unreachable.is_empty(),
        unreachable_shards: listed.unreachable.iter().map(ToString::to_string).collect(),
    }))
}

/// Path of a tenant's collection.
#[derive(Debug, Deserialize, IntoParams)]
pub struct CollectionPath {
    /// Tenant id.
    id: String,
    /// Collection name.
    collection: String,
}

impl CollectionPath {
    /// The tenant (404 `tenant_not_found` for an id that cannot exist) and the collection (400
    /// `invalid_path`).
    fn parse(&self) -> Result<(TenantId, CollectionName), ApiError> {
        Ok((tenant_in_path(&self.id)?, CollectionName::parse(&self.collection).map_err(invalid_path)?))
    }
}

/// One range of a range-distributed collection.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeView {
    /// The smallest key of the range; the next range's `from` ends it. The first range starts
    /// at `""`.
    pub from: String,
    /// The shard holding the range.
    pub shard: String,
}

/// A collection's distribution.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionDistribution {
    /// `tenant` (the whole collection on the tenant's home shard; the default), `hash` (each
    /// record on the vshard `h(tenant, collection, key)` picks) or `range` (each record on the
    /// shard of the greatest `from` `<=` its key).
    #[schema(value_type = String, example = "hash")]
    pub distribution: Distribution,
    /// For `range`: the ranges in ascending `from` order, the first from `""`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<Vec<RangeView>>,
}

errors!(GetDistributionErrors: InvalidPath, TenantNotFound, CatalogUnavailable);

/// Read a collection's distribution (`tenant` unless set otherwise).
#[utoipa::path(get, path = "/v1/admin/tenants/{id}/collections/{collection}", params(CollectionPath), responses(
    (status = 200, description = "The collection's distribution", body = CollectionDistribution),
    GetDistributionErrors,
))]
pub async fn get_distribution(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<CollectionPath>,
) -> Result<axum::Json<CollectionDistribution>, ApiError> {
    let (tenant, collection) = path.parse()?;
    app.router.catalog().get_tenant(&tenant).await?.ok_or_else(ApiError::tenant_not_found)?;
    let row = app.router.catalog().get_distribution(&tenant, &collection).await?;
    Ok(axum::Json(match row {
        Some(row) => view(&row),
        None => CollectionDistribution { distribution: Distribution::Tenant, ranges: None },
    }))
}

errors!(SetDistributionErrors:
    InvalidPath, InvalidJson, InvalidBody, UnsupportedMediaType, TenantNotFound, UnknownShard, DistributionRefused,
    JobConflict, CatalogUnavailable, ShardUnavailable
);

/// Set a collection's distribution. A collection that holds no record yet changes it at once
/// (200, in effect on every instance: each shard's fence moves to the new map epoch), and so
/// does a non-empty `range` collection whose keys all stay on their shard (bounds added or
/// removed; keys change shard with `.../split`). A non-empty collection changing between
/// `tenant` and `hash` or `range` moves its records in a `collection.redistribute` job while
/// traffic flows, with a tenant move's guarantees (copy, catch up, the old layout alone fenced,
/// last delta, the two layouts compared by checksum, new distribution with a new epoch, old
/// rows removed after `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`.
/// Its writes during the cut-over wait for the new layout (at most
/// `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). A non-empty
/// collection goes between `hash` and `range` by way of `tenant` (409
/// `distribution_refused` otherwise). One job per tenant at a time, and none while a rebalance
/// runs if `hash` is a side (409 `job_conflict`). Range bounds must name active shards.
#[utoipa::path(put, path = "/v1/admin/tenants/{id}/collections/{collection}", params(CollectionPath), request_body = CollectionDistribution, responses(
    (status = 200, description = "The distribution now in effect", body = CollectionDistribution),
    (status = 202, description = "The records move to the new distribution: follow the job at `/v1/admin/jobs/{id}`", body = Job),
    SetDistributionErrors,
))]
pub async fn set_distribution(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<CollectionPath>,
    ApiJson(body): ApiJson<CollectionDistribution>,
) -> Result<Response, ApiError> {
    let (tenant, collection) = path.parse()?;
    let ranges = checked_ranges(body.distribution, body.ranges.as_deref())?;
    let now = now_ms();
    let row = CollectionRow {
        tenant: tenant.clone(),
        collection: collection.clone(),
        distribution: body.distribution,
        ranges,
        created_at_ms: now,
        updated_at_ms: now,
    };
    let audit = caller.audit(
        &request,
        "collection.distribute",
        Some(tenant.as_str()),
        format!("collection:{collection} distribution:{}", body.distribution.as_str()),
    );
    match app.mover.redistribute(&row, &audit).await? {
        Redistribution::Moving(job) => Ok(Job::accepted(job)),
        Redistribution::Switched(_) => Ok(axum::Json(view(&row)).into_response()),
    }
}

/// Body of `POST /v1/admin/tenants/{id}/collections/{collection}/split`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitRequest {
    /// The first key of the new range: the keys from here up to the next range's `from` go to
    /// `shard`. If a range starts here already (`""` is the first range's), that whole range
    /// goes to `shard`.
    pub at: String,
    /// The shard that takes the keys (registered and `active`).
    pub shard: String,
}

errors!(SplitRangeErrors:
    InvalidPath, InvalidJson, InvalidBody, UnsupportedMediaType, TenantNotFound, ShardNotFound, JobConflict,
    MoveRefused, DistributionRefused, CatalogUnavailable, ShardUnavailable
);

/// Split a range of a `range`-distributed collection: the keys from `at` up to the next range
/// go to `shard`. If that shard holds them already, only the ranges change (200, in effect on
/// every instance at once). Otherwise a `range.move` job moves them while traffic flows, with
/// a tenant move's guarantees (copy, catch up, the range alone fenced on its old shard, last
/// delta, checksums, new ranges with a new epoch, old copy removed after
/// `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`. Writes of the
/// range's keys during the cut-over wait for the new shard (at most
/// `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). One job per
/// tenant at a time (409 `job_conflict`).
#[utoipa::path(post, path = "/v1/admin/tenants/{id}/collections/{collection}/split", params(CollectionPath), request_body = SplitRequest, responses(
    (status = 200, description = "The keys stay on their shard: the distribution now in effect", body = CollectionDistribution),
    (status = 202, description = "The keys move: follow the job at `/v1/admin/jobs/{id}`", body = Job),
    SplitRangeErrors,
))]
pub async fn split_range(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<CollectionPath>,
    ApiJson(body): ApiJson<SplitRequest>,
) -> Result<Response, ApiError> {
    let (tenant, collection) = path.parse()?;
    let invalid = |detail: String| ApiError::new(Code::InvalidBody, detail);
    // `""` is the first range's bound: a split there moves that whole range.
    if !body.at.is_empty() {
        shardgate_shard_router::ids::check_key_text("at", &body.at).map_err(|e| invalid(e.to_string()))?;
    }
    let shard = ShardId::parse(&body.shard).map_err(|e| invalid(format!("shard: {e}")))?;
    app.router.catalog().get_tenant(&tenant).await?.ok_or_else(ApiError::tenant_not_found)?;
    let audit = caller.audit(
        &request,
        "collection.split",
        Some(tenant.as_str()),
        format!("collection:{collection} at:{:?} shard:{shard}", body.at),
    );
    match app.mover.split_range(&tenant, &collection, &body.at, &shard, &audit).await? {
        RangeSplit::Moving(job) => Ok(Job::accepted(job)),
        RangeSplit::Switched(_) => {
            let row = app.router.catalog().get_distribution(&tenant, &collection).await?;
            let row = row.ok_or_else(|| {
                ApiError::new(Code::DistributionRefused, format!("collection {collection} lost its distribution"))
            })?;
            Ok(axum::Json(view(&row)).into_response())
        }
    }
}

/// The ranges of a `range` distribution, checked: present, ascending, the first from `""`,
/// valid shard ids; none for the other distributions.
fn checked_ranges(distribution: Distribution, ranges: Option<&[RangeView]>) -> Result<Vec<RangeRow>, ApiError> {
    let invalid = |detail: String| ApiError::new(Code::InvalidBody, detail);
    let Some(ranges) = ranges else {
        return match distribution {
            Distribution::Range => Err(invalid("a `range` distribution needs `ranges`".to_owned())),
            Distribution::Tenant | Distribution::Hash => Ok(Vec::new()),
        };
    };
    if distribution != Distribution::Range {
        return Err(invalid(format!("`ranges` belong to a `range` distribution, not `{}`", distribution.as_str())));
    }
    if ranges.first().is_none_or(|r| !r.from.is_empty()) {
        return Err(invalid("the first range must start at \"\" (every key needs a range)".to_owned()));
    }
    if let Some(pair) = ranges.windows(2).find(|w| w[0].from >= w[1].from) {
        return Err(invalid(format!(
            "ranges must be in strictly ascending `from` order: {:?} comes after {:?}",
            pair[1].from, pair[0].from
        )));
    }
    const MAX_RANGES: usize = 1024;
    if ranges.len() > MAX_RANGES {
        return Err(invalid(format!("at most {MAX_RANGES} ranges")));
    }
    ranges
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if i > 0 {
                shardgate_shard_router::ids::check_key_text("from", &r.from)
                    .map_err(|e| invalid(format!("ranges[{i}].{e}")))?;
            }
            let shard = ShardId::parse(&r.shard).map_err(|e| invalid(format!("ranges[{i}].shard: {e}")))?;
            Ok(RangeRow { from: r.from.clone(), shard })
        })
        .collect()
}

fn view(row: &CollectionRow) -> CollectionDistribution {
    CollectionDistribution {
        distribution: row.distribution,
        ranges: (row.distribution == Distribution::Range).then(|| range_views(&row.ranges)),
    }
}

fn range_views(ranges: &[RangeRow]) -> Vec<RangeView> {
    ranges.iter().map(|r| RangeView { from: r.from.clone(), shard: r.shard.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: &str, shard: &str) -> RangeView {
        RangeView { from: from.to_owned(), shard: shard.to_owned() }
    }

    #[test]
    fn ranges_must_cover_every_key_in_order() {
        let ok = checked_ranges(Distribution::Range, Some(&[range("", "s1"), range("m", "s2")])).unwrap();
        assert_eq!(ok.len(), 2);
        for bad in [
            vec![],
            vec![range("a", "s1")],
            vec![range("", "s1"), range("m", "s2"), range("m", "s1")],
            vec![range("", "s1"), range("b", "s2"), range("a", "s1")],
            vec![range("", "S 1")],
        ] {
            let err = checked_ranges(Distribution::Range, Some(&bad)).unwrap_err();
            assert_eq!(err.code(), "invalid_body", "{bad:?}");
        }
        assert_eq!(checked_ranges(Distribution::Range, None).unwrap_err().code(), "invalid_body");
        assert_eq!(checked_ranges(Distribution::Hash, Some(&[range("", "s1")])).unwrap_err().code(), "invalid_body");
        assert!(checked_ranges(Distribution::Hash, None).unwrap().is_empty());
    }
}
