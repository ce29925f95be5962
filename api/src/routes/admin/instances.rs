//! `GET /v1/admin/instances`: the gateway instances of the fleet, as each reported itself to
//! the instance registry (shard-router `catalog/instances.rs`, written by
//! `startup/instance_report.rs`), with the leases each holds (the balancer's, running jobs').

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shardgate_shard_router::catalog::{InstanceRow, JobLease};
use shardgate_shard_router::now_ms;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::timestamps::rfc3339;

/// Which instances to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InstancesQuery {
    /// Only instances in this state: `serving` or `gone`. Default: both.
    state: Option<String>,
}

/// Whether an instance serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    /// It reported within two of its report intervals.
    Serving,
    /// It stopped cleanly, or has not reported for two of its report intervals (killed, cut
    /// off, or unable to reach the catalog).
    Gone,
}

/// One component's readiness on an instance, as its `/readyz` last computed it.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct InstanceComponent {
    /// `up`, `down`, `offline`, `degraded`, `local` or `disabled` (see `/readyz`).
    pub status: String,
    /// How long its probe took (ms).
    pub latency_ms: u64,
    /// Why it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The database's circuit breaker on that instance (catalog and shards).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<String>,
}

/// One issuer's fetched key set on an instance.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct InstanceKeySet {
    /// `up`, `unavailable` or `expired` (see `/readyz`).
    pub status: String,
    /// Where its keys come from.
    pub url: String,
    /// Seconds since the set in use was fetched, when the instance reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<u64>,
    /// Why its last fetch failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The readiness document an instance reports: what its `/readyz` answered. Read leniently, so
/// an instance of another version shows what it shares with this one.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReportedReadiness {
    status: String,
    components: BTreeMap<String, InstanceComponent>,
    key_sets: BTreeMap<String, InstanceKeySet>,
}

/// A gateway instance.
#[derive(Debug, Serialize, ToSchema)]
pub struct Instance {
    /// Its name, as its leases and load windows carry it.
    pub id: String,
    /// `serving` or `gone`.
    pub state: InstanceState,
    /// The version it runs.
    pub version: String,
    /// When it started, RFC 3339.
    pub started_at: String,
    /// The address it advertises (`instances.advertised_address`, or the one it listens on).
    pub address: String,
    /// When it last reported, RFC 3339.
    pub last_seen_at: String,
    /// When it stopped cleanly, RFC 3339; absent unless it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// How often it reports (ms).
    pub report_interval_ms: u64,
    /// Whether its `/readyz` said `ready` when it last reported.
    pub ready: bool,
    /// Each component's readiness when it last reported: `catalog`, `cache`, `rate_limits` and
    /// one entry per shard.
    pub components: BTreeMap<String, InstanceComponent>,
    /// Each fetched key set by issuer, when it last reported; empty when it fetches none.
    pub key_sets: BTreeMap<String, InstanceKeySet>,
    /// Whether it holds the balancer's lease (it runs the balancer).
    pub balancer_lease: bool,
    /// The running jobs whose lease it holds (it runs them).
    pub job_leases: Vec<String>,
}

/// A lease an instance holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseHolder {
    /// The instance.
    pub instance: String,
    /// Until when, RFC 3339 (renewed while it runs).
    pub until: String,
}

/// A running job and the instance running it.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobLeaseHolder {
    /// The job (`GET /v1/admin/jobs/{id}`).
    pub job: String,
    /// Its kind.
    pub kind: String,
    /// What it works on.
    pub target: String,
    /// The instance holding its lease.
    pub instance: String,
    /// Until when, RFC 3339.
    pub until: String,
}

/// The fleet's instances and who holds which lease.
#[derive(Debug, Serialize, ToSchema)]
pub struct Instances {
    /// Every instance that reported within `storage.load.retention` (the longest running
    /// first, serving ones before gone ones).
    pub instances: Vec<Instance>,
    /// Who holds the balancer's lease; `null` when nobody does (no instance runs it now).
    pub balancer_lease: Option<LeaseHolder>,
    /// Each running job's lease, oldest job first (a job whose lease ran out is not listed: the
    /// next instance to look takes it over).
    pub job_leases: Vec<JobLeaseHolder>,
}

errors!(ListInstancesErrors: InvalidQuery, CatalogUnavailable);

/// The gateway instances of the fleet: each one's version, start, address and state
/// (`serving`, or `gone` when it stopped or has not reported for two of its report intervals),
/// the readiness of its components (catalog, each shard, Redis, key sets) as its `/readyz`
/// computed it at its last report, and which one holds the balancer's lease and each running
/// job's. Instances report through the catalog every `instances.report_interval`.
#[utoipa::path(get, path = "/v1/admin/instances", params(InstancesQuery), responses(
    (status = 200, description = "The instances and their leases", body = Instances),
    ListInstancesErrors,
))]
pub async fn list_instances(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<InstancesQuery>,
) -> Result<axum::Json<Instances>, ApiError> {
    let only = match query.state.as_deref() {
        None => None,
        Some("serving") => Some(InstanceState::Serving),
        Some("gone") => Some(InstanceState::Gone),
        Some(other) => {
            return Err(ApiError::new(Code::InvalidQuery, format!("state: {other:?} is not one of serving, gone")));
        }
    };
    let catalog = app.router.catalog();
    let now = now_ms();
    let retention = i64::try_from(app.load.retention.as_millis()).unwrap_or(i64::MAX);
    let rows = catalog.instances(now.saturating_sub(retention)).await?;
    let balancer = catalog.balancer().await?;
    let job_leases = catalog.job_leases(now).await?;
    let balancer_lease = match (balancer.owner, balancer.lease_until) {
        (Some(instance), Some(until)) if until >= now => Some(LeaseHolder { instance, until: rfc3339(until) }),
        _ => None,
    };
    let mut instances: Vec<Instance> = rows
        .into_iter()
        .map(|row| instance_view(row, now, balancer_lease.as_ref(), &job_leases))
        .filter(|instance| only.is_none_or(|state| instance.state == state))
        .collect();
    // Stable: within each state, the catalog's order (the longest running first).
    instances.sort_by_key(|instance| instance.state == InstanceState::Gone);
    let job_leases = job_leases
        .into_iter()
        .map(|lease| JobLeaseHolder {
            job: lease.job,
            kind: lease.kind,
            target: lease.target,
            instance: lease.owner,
            until: rfc3339(lease.lease_until),
        })
        .collect();
    Ok(axum::Json(Instances { instances, balancer_lease, job_leases }))
}

fn instance_view(row: InstanceRow, now: i64, balancer: Option<&LeaseHolder>, jobs: &[JobLease]) -> Instance {
    let state = if row.gone_at(now) { InstanceState::Gone } else { InstanceState::Serving };
    let readiness: ReportedReadiness = serde_json::from_str(&row.report.readiness).unwrap_or_default();
    let id = row.report.id;
    Instance {
        state,
        version: row.report.version,
        started_at: rfc3339(row.report.started_ms),
        address: row.report.address,
        last_seen_at: rfc3339(row.last_seen_ms),
        stopped_at: row.stopped_ms.map(rfc3339),
        report_interval_ms: u64::try_from(row.report.report_interval_ms).unwrap_or(0),
        ready: readiness.status == "ready",
        components: readiness.components,
        key_sets: readiness.key_sets,
        balancer_lease: balancer.is_some_and(|lease| lease.instance == id),
        job_leases: jobs.iter().filter(|lease| lease.owner == id).map(|lease| lease.job.clone()).collect(),
        id,
    }
}
