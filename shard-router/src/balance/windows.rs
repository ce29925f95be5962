//! Each instance's part of the load picture: a task that, once per window, stores the windows
//! its meter ([`crate::storage::meter`]) has closed in the catalog, in one statement (and those
//! of its request-health meter, [`crate::balance::request_meter`], in another), and once
//! per rolled-up window rolls up the full-resolution windows older than
//! `storage.load.full_resolution` and prunes what is older than `storage.load.retention` (both
//! tables alike).
//!
//! Windows the catalog does not take stay queued in the meter and go with the next flush (at
//! most an hour of them); an instance that is killed loses its open window only. On a clean
//! stop, [`LoadFlusher::flush_all`] stores the open window too.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use crate::balance::request_meter::RequestMeter;
use crate::catalog::{LoadRow, RequestRow};
use crate::clock::now_ms;
use crate::config::LoadConfig;
use crate::ids::ShardId;
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::holdings::{ShardSize, shard_size};
use crate::storage::meter::LoadMeter;
use crate::storage::shard::FencedShard;

/// How long after a window's end its flush runs: statements that began before the end may
/// still be finishing.
const FLUSH_DELAY: Duration = Duration::from_millis(250);

/// Stores this instance's closed windows in the catalog and keeps the table to its retention.
#[derive(Debug, Clone)]
pub struct LoadFlusher {
    /// Weak: the task ends when the router is dropped.
    router: Weak<ShardRouter>,
    meter: Arc<LoadMeter>,
    /// The request-health counters the HTTP layer adds to.
    requests: Arc<RequestMeter>,
    config: LoadConfig,
    instance: String,
    /// Each shard's size as last sampled (once per rolled-up window), for `/metrics`.
    sizes: Arc<Mutex<Vec<(ShardId, ShardSize)>>>,
}

impl LoadFlusher {
    /// The flusher of `router`'s meter, if the load picture is on.
    pub fn new(router: &Arc<ShardRouter>, config: LoadConfig) -> Option<Self> {
        let meter = router.pools().meter()?.clone();
        let instance = format!("instance-{}", uuid::Uuid::new_v4().simple());
        let requests = Arc::new(RequestMeter::new(config.window));
        Some(Self { router: Arc::downgrade(router), meter, requests, config, instance, sizes: Arc::default() })
    }

    /// The request-health meter whose windows this flusher stores.
    pub fn request_meter(&self) -> &Arc<RequestMeter> {
        &self.requests
    }

    /// The name this instance's rows carry.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Runs until the router is dropped: a flush after the end of every window, upkeep once per
    /// rolled-up window.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let window = millis(self.config.window);
            let rollup = millis(self.config.rollup);
            let mut last_upkeep = 0;
            loop {
                let now = now_ms();
                let next_end = now - now.rem_euclid(window) + window;
                let wait = u64::try_from(next_end - now).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(wait) + FLUSH_DELAY).await;
                if self.router.strong_count() == 0 {
                    return;
                }
                self.flush_closed().await;
                let now = now_ms();
                if now - last_upkeep >= rollup {
                    last_upkeep = now;
                    self.upkeep(now).await;
                }
            }
        })
    }

    /// Stores the windows closed by now; keeps them queued if the catalog does not take them.
    /// Returns how many windows were stored.
    pub async fn flush_closed(&self) -> usize {
        self.flush(now_ms()).await
    }

    /// Stores every window, the open one too (on a clean stop).
    pub async fn flush_all(&self) -> usize {
        self.flush(now_ms() + millis(self.config.window)).await
    }

    async fn flush(&self, now: i64) -> usize {
        let Some(router) = self.router.upgrade() else { return 0 };
        let requests = self.requests.take_closed(now, &self.instance);
        if !requests.is_empty()
            && let Err(e) = router.catalog().store_windows(&requests).await
        {
            tracing::warn!(error = %e, rows = requests.len(), "cannot store request windows; keeping them for the next flush");
            self.requests.put_back(requests);
        }
        let windows = self.meter.take_closed(now);
        if windows.is_empty() {
            return 0;
        }
        let rows: Vec<LoadRow> = windows.iter().flat_map(|w| LoadRow::of_window(&self.instance, w)).collect();
        match router.catalog().store_windows(&rows).await {
            Ok(()) => windows.len(),
            Err(e) => {
                tracing::warn!(error = %e, windows = windows.len(), "cannot store load windows; keeping them for the next flush");
                self.meter.put_back(windows);
                0
            }
        }
    }

    /// Each shard's size (bytes, record rows) as last sampled; empty until the first upkeep.
    pub fn shard_sizes(&self) -> Vec<(ShardId, ShardSize)> {
        self.sizes.lock().clone()
    }

    /// Rolls up and prunes the catalog's load windows (any instance may: see
    /// [`crate::catalog::Catalog::roll_up_windows`]), and samples each shard's size.
    pub async fn upkeep(&self, now: i64) {
        let Some(router) = self.router.upgrade() else { return };
        let mut sizes = Vec::new();
        for (id, state, db) in router.shard_dbs() {
            if state == ShardState::Offline {
                continue;
            }
            let limit = router.pools().config().probe_timeout;
            match tokio::time::timeout(limit, shard_size(&FencedShard::new(&db, &id))).await {
                Ok(Ok(size)) => sizes.push((id, size)),
                Ok(Err(e)) => tracing::debug!(shard = %id, error = %e, "cannot measure a shard"),
                Err(_) => tracing::debug!(shard = %id, "measuring a shard timed out"),
            }
        }
        *self.sizes.lock() = sizes;
        let (window, rollup) = (millis(self.config.window), millis(self.config.rollup));
        let catalog = router.catalog();
        if rollup > window
            && let Err(e) =
                catalog.roll_up_windows::<LoadRow>(window, rollup, now - millis(self.config.full_resolution)).await
        {
            tracing::warn!(error = %e, "cannot roll up load windows");
        }
        if rollup > window
            && let Err(e) =
                catalog.roll_up_windows::<RequestRow>(window, rollup, now - millis(self.config.full_resolution)).await
        {
            tracing::warn!(error = %e, "cannot roll up request windows");
        }
        let cutoff = now - millis(self.config.retention);
        for width in [window, rollup] {
            if let Err(e) = catalog.prune_windows::<LoadRow>(width, cutoff).await {
                tracing::warn!(error = %e, "cannot prune load windows");
            }
            if let Err(e) = catalog.prune_windows::<RequestRow>(width, cutoff).await {
                tracing::warn!(error = %e, "cannot prune request windows");
            }
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
