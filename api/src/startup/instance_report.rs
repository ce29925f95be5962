//! This instance's row in the instance registry (shard-router `catalog/instances.rs`): a task
//! that, at start and then every `instances.report_interval`, writes what the instance is (its
//! name in leases and load windows, version, start, advertised address) and the readiness of
//! each component as `/readyz` computes it (`routes::ops::readiness`) to the catalog, and at
//! most once a minute (or once per retention, if shorter) deletes the rows of instances not seen
//! for `storage.load.retention`. On a clean stop, [`stopped`] marks the row so the instance
//! shows as gone at once.
//!
//! While the catalog does not answer, nothing is written and the instance looks gone to the
//! others; it shows as serving again with its next report.

use std::sync::{Arc, Weak};
use std::time::Duration;

use shardgate_shard_router::catalog::InstanceReport;
use shardgate_shard_router::now_ms;

use crate::app::App;
use crate::config::InstancesConfig;
use crate::routes::ops::readiness;

/// How often, at most, the registry is pruned (more often when the retention is shorter).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// What this instance reports, but its readiness (taken at each report).
#[derive(Debug, Clone)]
struct Identity {
    id: String,
    started_ms: i64,
    address: String,
    interval: Duration,
}

/// Starts the task of `app`'s reports; it ends when the app is dropped. `listening` is the
/// address `listen` is bound to, shown unless `config` names another.
pub fn spawn(app: &Arc<App>, config: &InstancesConfig, listening: std::net::SocketAddr) {
    let identity = Identity {
        id: app.balancer.instance().to_owned(),
        started_ms: now_ms(),
        address: config.advertised_address.clone().unwrap_or_else(|| listening.to_string()),
        interval: config.report_interval,
    };
    tokio::spawn(run(Arc::downgrade(app), identity));
}

async fn run(app: Weak<App>, identity: Identity) {
    let mut last_prune: Option<tokio::time::Instant> = None;
    let mut failing = false;
    loop {
        let Some(app) = app.upgrade() else { return };
        match report(&app, &identity).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!(instance = identity.id, "reporting to the instance registry again");
            }
            Ok(()) => {}
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(instance = identity.id, error = %e, "cannot report to the instance registry");
            }
            Err(e) => tracing::debug!(instance = identity.id, error = %e, "cannot report to the instance registry"),
        }
        if last_prune.is_none_or(|at| at.elapsed() >= PRUNE_EVERY.min(app.load.retention)) {
            last_prune = Some(tokio::time::Instant::now());
            let retention = i64::try_from(app.load.retention.as_millis()).unwrap_or(i64::MAX);
            match app.router.catalog().prune_instances(now_ms().saturating_sub(retention)).await {
                Ok(0) => {}
                Ok(pruned) => tracing::debug!(pruned, "instances not seen for storage.load.retention deleted"),
                Err(e) => tracing::debug!(error = %e, "cannot prune the instance registry"),
            }
        }
        drop(app);
        tokio::time::sleep(identity.interval).await;
    }
}

async fn report(app: &App, identity: &Identity) -> Result<(), shardgate_shard_router::Error> {
    let readiness = readiness(app).await;
    let readiness = serde_json::to_string(&readiness)
        .map_err(|e| shardgate_shard_router::Error::Corrupt(format!("readiness: {e}")))?;
    let report = InstanceReport {
        id: identity.id.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        started_ms: identity.started_ms,
        address: identity.address.clone(),
        report_interval_ms: i64::try_from(identity.interval.as_millis()).unwrap_or(i64::MAX),
        readiness,
    };
    app.router.catalog().report_instance(&report, now_ms()).await
}

/// Marks `app`'s row stopped (a clean stop), so it shows as gone before its reports are missed.
pub async fn stopped(app: &App) {
    if let Err(e) = app.router.catalog().instance_stopped(app.balancer.instance(), now_ms()).await {
        tracing::warn!(error = %e, "cannot mark this instance stopped in the instance registry");
    }
}
