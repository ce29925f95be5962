//! Moving data to another shard while its traffic flows (DESIGN.md §5, "Moving data"): a job
//! in the catalog that one instance runs at a time and another takes over if that instance
//! dies. A move takes a [`MoveSubject`]: one tenant's home data (`tenant.move`, which pins the
//! tenant to the target), or a set of vshards owned by one shard (`vshard.move`, a step of a
//! rebalance or drain: [`crate::moves::rebalancer`]) — the index entries they place and the home data
//! of the unpinned tenants they place, listed once the vshards are claimed (no tenant of them
//! is created or deleted until the move ends).
//!
//! # Phases
//!
//! 1. `copy`: whatever an earlier, rolled-back attempt left of the subject on the target is
//!    removed, then every row of its tenants (records and their tombstones, blobs, their live
//!    uploads and chunks: [`crate::moves::copy::TENANT_TABLES`]) is copied, at most at
//!    `moves.copy_bytes_per_second` and, with `moves.adaptive_pace`, slower while the requests
//!    on the source or the target feel it ([`crate::moves::copy::Pace`]; `progress.pace`). A
//!    copied row replaces an older version of its key and never a newer one, so any pass can
//!    be repeated.
//! 2. `catch_up`: passes over the rows changed since the previous pass began, until one finds
//!    few. "Since" is a moment on the source ([`crate::moves::copy::Since`]): on PostgreSQL the
//!    transactions not yet committed then (each row's `xmin` says which wrote it), exact
//!    whatever the instances' clocks; on SQLite the rows' change times, less a margin for
//!    instance clocks that differ (`moves.clock_margin`, 1 s). Then the settled rows (not changed
//!    since the last pass began) are compared by checksum on both sides, still outside the
//!    fence ([`crate::moves::copy::split_checksums`]), so that the cut-over need only compare the rest.
//! 3. `cut_over`: one more pass, and the rows it took that changed since the last comparison
//!    are compared, still outside the fence. Then the subject is fenced on the source
//!    ([`FencedShard::freeze`]: each tenant, and each vshard for its index entries): from now
//!    on every instance's writes of it are refused there whatever map it routes on, while reads
//!    are still served. On PostgreSQL the mover then waits until no write statement that began
//!    before the fence is still running, so a write that raced the fence is in the last delta.
//!    The last delta (the rows changed since that pass began) is read once from the source,
//!    merged into the target and compared with what the target stored
//!    ([`crate::moves::copy::copy_and_compare`]; other tables, such as uploads, are copied as in any
//!    pass and compared by [`crate::moves::copy::split_checksums`], and a vshard's index entries are
//!    copied and compared whole: they leave no tombstone when removed). If any comparison found
//!    a difference, everything is compared; if that differs, a full pass is made and
//!    everything compared again, and a difference then rolls the move back. Then the subject is
//!    marked `moved` on the source (its reads are refused there too), and one catalog
//!    transaction pins the tenant to the target, or gives the vshards to it, with a new epoch
//!    and moves the job to `cleanup`. Requests that met the fence wait for that epoch
//!    (`moves.cutover_wait`) and go to the new shard.
//! 4. `cleanup`: after `moves.cleanup_grace` (downloads still streaming from the old copy end),
//!    the old copy is removed from the source. The `moved` fences stay until the subject moves
//!    back.
//!
//! A failure or a cancellation before the subject is marked `moved` rolls the move back: the
//! fences are lifted and the target's copy removed. From `moved` on, the move only goes
//! forward. Other tenants and vshards on either shard are never fenced or paused.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;

pub use crate::moves::job::{
    Announce, Checksums, CopiedBytes, MOVE_JOB, MOVE_JOB_KINDS, Phase, RANGE_MOVE_JOB, REDISTRIBUTE_JOB,
    VSHARD_MOVE_JOB,
};

use crate::catalog::{Audit, CollectionRow, JobRow, Placement, RangeRow, tenant_subject, vshard_subject};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::{Distribution, ShardState};
use crate::moves::copy::{
    Checksum, CopyMethod, CopySize, CopyTable, INDEX_ENTRIES, KeyPages, Pace, Part, Pass, SCAN_PAGE_ROWS,
    SPREAD_RECORDS, Selection, Since, TENANT_TABLES, Tally, Window, checksums, compared_in_pages, copy_and_compare,
    copy_batch_counted, copy_rows, copy_size, purge_rows, split_checksums, split_checksums_in_pages,
};
use crate::moves::job::{
    JobHandle, MAX_CATCH_UP_PASSES, PhasedJob, SMALL_DELTA_ROWS, copy_pace, drive, encoded, keeping_lease, lease_ms,
    new_job, wait_for_statements_before_the_fence,
};
pub use crate::moves::progress::{FirstCopy, MoveProgress, RangeMove, RangeSplit};
use crate::moves::redistribute::{DistributionSpec, RedistributeProgress, Redistribution};
use crate::router::ShardRouter;
use crate::storage::blobs::BlobStore;
use crate::storage::db::Database;
use crate::storage::meter::Work;
use crate::storage::records::RecordStore;
use crate::storage::shard::{FencedShard, KeyRange, MoveSubject, OnShard, ShardStore};
use crate::topology::Topology;

/// How often, at most, a move's first copy stores its progress within a batch.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// How often, at most, a move's first copy looks for a cancellation within a batch whose
/// progress has not moved (its pace holds it).
const CANCEL_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs move jobs on this instance.
pub struct Mover {
    pub(crate) router: Arc<ShardRouter>,
    /// This instance's name in job leases.
    pub(crate) owner: String,
    pub(crate) announce: Announce,
    /// Jobs running here.
    pub(crate) running: Mutex<HashSet<String>>,
    /// The bytes the copies of the jobs run here took, by kind.
    pub(crate) copied: Arc<CopiedBytes>,
}

impl std::fmt::Debug for Mover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mover").field("owner", &self.owner).finish_non_exhaustive()
    }
}

impl Mover {
    /// A mover on `router` that announces pin switches with `announce` and counts the bytes
    /// its jobs copy in `copied`.
    pub fn new(router: Arc<ShardRouter>, announce: Announce, copied: Arc<CopiedBytes>) -> Arc<Self> {
        Self::named(router, format!("instance-{}", uuid::Uuid::new_v4().simple()), announce, copied)
    }

    /// [`Mover::new`] with `owner` as this instance's name in leases (the name its load windows
    /// and its row in the instance registry carry).
    pub fn named(router: Arc<ShardRouter>, owner: String, announce: Announce, copied: Arc<CopiedBytes>) -> Arc<Self> {
        Arc::new(Self { router, owner, announce, running: Mutex::new(HashSet::new()), copied })
    }

    /// Starts moving `tenant` to shard `to`: records the job (claiming the tenant, and the
    /// vshard that places it if it is not pinned) and runs it.
    pub async fn start(self: &Arc<Self>, tenant: &TenantId, to: &ShardId, audit: &Audit) -> Result<JobRow, Error> {
        self.start_tenant(tenant, to, None, audit).await
    }

    pub(crate) async fn start_tenant(
        self: &Arc<Self>,
        tenant: &TenantId,
        to: &ShardId,
        parent: Option<&str>,
        audit: &Audit,
    ) -> Result<JobRow, Error> {
        let route = self.router.route_tenant(tenant)?;
        if route.shard == *to {
            return Err(Error::MoveRefused(format!("tenant {tenant} is on shard {to} already")));
        }
        self.check_target(to)?;
        let mut progress = MoveProgress::new(&route.shard, to);
        progress.parent = parent.map(str::to_owned);
        self.count_to_copy(&mut progress, &Subject::Tenant(tenant.clone())).await;
        let mut subjects = vec![tenant_subject(tenant)];
        if route.strategy == crate::map::Strategy::Hash {
            // A move of its vshard would take the tenant along.
            subjects.push(vshard_subject(route.vshard));
        }
        let target = format!("{tenant}: {} -> {to}", route.shard);
        self.launch(MOVE_JOB, Some(tenant), target, &progress, &subjects, audit).await
    }

    /// Starts moving `vshards`, all owned by one shard (their index entries and the unpinned
    /// tenants they place), to shard `to`, as a step of rebalance job `parent`: records the job
    /// (claiming the vshards) and runs it. They move together: one fence, one switch.
    pub(crate) async fn start_vshards(
        self: &Arc<Self>,
        vshards: &[u32],
        to: &ShardId,
        parent: Option<&str>,
        audit: &Audit,
    ) -> Result<JobRow, Error> {
        let Some(&first) = vshards.first() else {
            return Err(Error::MoveRefused("no vshard to move".to_owned()));
        };
        let from = self.router.resolve_vshard(first, crate::router::Access::Read)?.0;
        for &vshard in vshards {
            let owner = self.router.resolve_vshard(vshard, crate::router::Access::Read)?.0;
            if owner != from {
                return Err(Error::MoveRefused(format!("vshards {first} and {vshard} are on different shards")));
            }
        }
        if from == *to {
            return Err(Error::MoveRefused(format!("vshard {first} is on shard {to} already")));
        }
        self.check_target(to)?;
        let mut progress = MoveProgress::new(&from, to);
        progress.vshards = Some(vshards.to_vec());
        progress.parent = parent.map(str::to_owned);
        // The tenants the vshards place now: the job lists them again once it holds its claim.
        let tenants = self.router.with_map(|map| map.unpinned_tenants_of(vshards));
        self.count_to_copy(&mut progress, &Subject::Vshards { vshards: vshards.to_vec(), tenants }).await;
        let target = format!("{} vshards ({}): {from} -> {to}", vshards.len(), vshard_list(vshards));
        let subjects: Vec<String> = vshards.iter().map(|v| vshard_subject(*v)).collect();
        self.launch(VSHARD_MOVE_JOB, None, target, &progress, &subjects, audit).await
    }

    /// Splits the range of `tenant`'s range-distributed `collection` that holds key `at`, so
    /// that the keys from `at` up to the next bound live on shard `to` (`at` may be a bound
    /// already: then that whole range changes shard). If another shard holds them now, they
    /// move there in a `range.move` job (claiming the tenant) with a tenant move's guarantees;
    /// otherwise only the catalog changes.
    pub async fn split_range(
        self: &Arc<Self>,
        tenant: &TenantId,
        collection: &CollectionName,
        at: &str,
        to: &ShardId,
        audit: &Audit,
    ) -> Result<RangeSplit, Error> {
        self.split_range_for(tenant, collection, at, to, None, audit).await
    }

    /// [`Mover::split_range`] as a step of rebalance or drain job `parent`, if any.
    pub(crate) async fn split_range_for(
        self: &Arc<Self>,
        tenant: &TenantId,
        collection: &CollectionName,
        at: &str,
        to: &ShardId,
        parent: Option<&str>,
        audit: &Audit,
    ) -> Result<RangeSplit, Error> {
        let row = self.router.catalog().get_distribution(tenant, collection).await?;
        let Some(row) = row.filter(|row| row.distribution == crate::map::Distribution::Range) else {
            return Err(Error::DistributionRefused(format!(
                "collection {collection} of tenant {tenant} is not distributed `range`; only a range can be split"
            )));
        };
        let (owner, until, ranges_after) = split(&row.ranges, at, to);
        if owner == *to {
            let changed = crate::catalog::CollectionRow { ranges: ranges_after, updated_at_ms: now_ms(), ..row };
            return Ok(RangeSplit::Switched(Topology::of(&self.router).set_distribution(&changed, audit).await?));
        }
        self.check_target(to)?;
        let mut progress = MoveProgress::new(&owner, to);
        progress.parent = parent.map(str::to_owned);
        let range = RangeMove {
            collection: collection.clone(),
            from: at.to_owned(),
            until,
            ranges_before: row.ranges,
            ranges_after,
        };
        let target = format!("{}: {owner} -> {to}", range_name(tenant, &range));
        self.count_to_copy(&mut progress, &Subject::Range { tenant: tenant.clone(), range: range.clone() }).await;
        progress.range = Some(range);
        let subjects = [tenant_subject(tenant)];
        Ok(RangeSplit::Moving(self.launch(RANGE_MOVE_JOB, Some(tenant), target, &progress, &subjects, audit).await?))
    }

    /// Counts the rows and bytes the first copy of `subject` will take into `progress`, before
    /// the job is recorded, so that its progress has them from its first answer. The copy
    /// counts them again as it begins (rows may change meanwhile). A count that fails leaves
    /// them to the copy.
    async fn count_to_copy(&self, progress: &mut MoveProgress, subject: &Subject) {
        let counted = match ShardId::parse(&progress.from) {
            Ok(from) => size_to_copy(&self.router, subject.borrowed(), &from, Window::All).await,
            Err(e) => Err(Error::Corrupt(e.to_string())),
        };
        match counted {
            Ok(size) => {
                progress.rows_to_copy = Some(size.rows);
                progress.bytes_to_copy = Some(size.bytes);
            }
            Err(e) => tracing::warn!(subject = %subject, error = %e, "cannot count the rows a move will copy"),
        }
    }

    /// A move may only go to a registered, `active` shard this instance can reach.
    pub(crate) fn check_target(&self, to: &ShardId) -> Result<(), Error> {
        let target = self.router.with_map(|map| map.shard(to.as_str()).cloned());
        let target = target.ok_or_else(|| Error::ShardNotFound(to.clone()))?;
        if target.state != ShardState::Active {
            return Err(Error::MoveRefused(format!(
                "shard {to} is {}; data can only move to an active shard",
                target.state.as_str()
            )));
        }
        self.router.shard_db(to)?;
        Ok(())
    }

    /// Records a job claiming `subjects` and runs it here.
    pub(crate) async fn launch(
        self: &Arc<Self>,
        kind: &str,
        tenant: Option<&TenantId>,
        target: String,
        progress: &impl Serialize,
        subjects: &[String],
        audit: &Audit,
    ) -> Result<JobRow, Error> {
        let job = new_job(kind, tenant, target, progress)?;
        self.router.catalog().start_claiming_job(&job, subjects, audit).await?;
        self.adopt(job.clone()).await;
        Ok(job)
    }

    /// Takes over the move jobs whose holder stopped renewing its lease (it crashed or was
    /// killed) and runs them here; the api calls it at start-up and then every so often.
    pub async fn adopt_orphans(self: &Arc<Self>) -> Result<(), Error> {
        for job in self.router.catalog().running_jobs().await? {
            let ours = MOVE_JOB_KINDS.contains(&job.kind.as_str());
            if ours && !self.running.lock().contains(&job.id) {
                self.adopt(job).await;
            }
        }
        Ok(())
    }

    /// Runs `job` here if its lease can be taken.
    async fn adopt(self: &Arc<Self>, job: JobRow) {
        let lease = lease_ms(&self.router);
        match self.router.catalog().take_job_lease(&job.id, &self.owner, lease).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(job = job.id, error = %e, "cannot take a move job's lease");
                return;
            }
        }
        if !self.running.lock().insert(job.id.clone()) {
            return;
        }
        tracing::info!(job = job.id, kind = job.kind, target = job.target, "running a move job");
        let mover = self.clone();
        tokio::spawn(async move {
            let id = job.id.clone();
            let run = keeping_lease(&mover.router, &id, &mover.owner, mover.run(job));
            if let Err(e) = run.await {
                tracing::warn!(job = id, error = %e, "move job stopped; another attempt resumes it");
            }
            mover.running.lock().remove(&id);
        });
    }

    async fn run(&self, job: JobRow) -> Result<(), Error> {
        if job.kind == REDISTRIBUTE_JOB {
            return crate::moves::redistribute::run(
                JobHandle { router: &self.router, owner: &self.owner, id: &job.id, copied: self.copied.of(&job.kind) },
                &self.announce,
                &job,
            )
            .await;
        }
        let mut progress: MoveProgress = serde_json::from_str(&job.progress)
            .map_err(|e| Error::Corrupt(format!("move job {} progress: {e}", job.id)))?;
        let corrupt = |e: String| Error::Corrupt(format!("move job {}: {e}", job.id));
        let subject = match progress.vshards.clone() {
            None if progress.range.is_some() => Subject::Range {
                tenant: TenantId::parse(job.tenant.as_deref().unwrap_or_default())
                    .map_err(|e| corrupt(e.to_string()))?,
                range: progress.range.clone().ok_or_else(|| corrupt("no range".to_owned()))?,
            },
            None => Subject::Tenant(
                TenantId::parse(job.tenant.as_deref().unwrap_or_default())
                    .map_err(|e| Error::Corrupt(format!("move job {}: {e}", job.id)))?,
            ),
            Some(vshards) => {
                let listed = match &progress.tenants {
                    Some(listed) => listed.clone(),
                    None => {
                        // Listed after the claim committed: from now on no tenant of the vshard
                        // is created or deleted, so the list stays true until the move ends.
                        self.router.refresh().await?;
                        let tenants = self.router.with_map(|map| map.unpinned_tenants_of(&vshards));
                        let listed: Vec<String> = tenants.iter().map(ToString::to_string).collect();
                        progress.tenants = Some(listed.clone());
                        listed
                    }
                };
                let tenants = listed
                    .iter()
                    .map(|t| TenantId::parse(t).map_err(|e| Error::Corrupt(format!("move job {}: {e}", job.id))))
                    .collect::<Result<Vec<_>, _>>()?;
                Subject::Vshards { vshards, tenants }
            }
        };
        let mut run = Run { mover: self, id: job.id, subject, progress, pace: copy_pace(&self.router) };
        drive(&mut run).await
    }
}

impl Mover {
    /// Sets `row`'s distribution. If the collection holds rows that would change table (between
    /// `tenant` and `hash` or `range`), they move in a `collection.redistribute` job (claiming
    /// the tenant, and the rebalance slot when `hash` is a side); otherwise only the catalog
    /// changes ([`crate::topology::Topology::set_distribution`], which refuses other changes of
    /// a non-empty collection).
    pub async fn redistribute(self: &Arc<Self>, row: &CollectionRow, audit: &Audit) -> Result<Redistribution, Error> {
        self.router.refresh().await?;
        let (tenant, collection) = (&row.tenant, &row.collection);
        self.router.route_tenant(tenant)?;
        let old = self.router.distribution_of(tenant, collection);
        if old == row.distribution && old != Distribution::Range {
            // In effect already (ranges may change without a move: the router checks), unless
            // a job is changing it.
            let subject = tenant_subject(tenant);
            if let Some(job) = self.router.catalog().job_claiming(&subject).await? {
                return Err(Error::JobConflict { subject, job });
            }
            return Ok(Redistribution::Switched(self.router.epoch()));
        }
        let changes_table = old != row.distribution && [old, row.distribution].contains(&Distribution::Tenant);
        if !changes_table || Topology::of(&self.router).count_collection_rows(tenant, collection).await? == 0 {
            return Ok(Redistribution::Switched(Topology::of(&self.router).set_distribution(row, audit).await?));
        }
        for range in &row.ranges {
            // As when the catalog alone changes: a range names a known, active shard.
            match self.check_target(&range.shard) {
                Err(Error::ShardNotFound(id)) => return Err(Error::UnknownShard(id)),
                Err(Error::MoveRefused(why)) => return Err(Error::DistributionRefused(why)),
                other => other?,
            }
        }
        let from = match self.router.catalog().get_distribution(tenant, collection).await? {
            Some(current) => DistributionSpec { distribution: current.distribution, ranges: current.ranges },
            None => DistributionSpec { distribution: Distribution::Tenant, ranges: Vec::new() },
        };
        let to = DistributionSpec { distribution: row.distribution, ranges: row.ranges.clone() };
        let mut subjects = vec![tenant_subject(tenant)];
        if [old, row.distribution].contains(&Distribution::Hash) {
            subjects.push(crate::catalog::REBALANCE_SUBJECT.to_owned());
        }
        let target = format!("{tenant}/{collection}: {} -> {}", old.as_str(), row.distribution.as_str());
        let progress = RedistributeProgress::new(collection, from, to);
        let job = self.launch(REDISTRIBUTE_JOB, Some(tenant), target, &progress, &subjects, audit).await?;
        Ok(Redistribution::Moving(job))
    }
}

/// A shard of a move, with its pool.
type Placed = (ShardId, Database);

/// What one move job takes (owned; [`MoveSubject`] borrows it).
#[derive(Debug, Clone)]
enum Subject {
    Tenant(TenantId),
    Vshards { vshards: Vec<u32>, tenants: Vec<TenantId> },
    Range { tenant: TenantId, range: RangeMove },
}

impl Subject {
    /// The kind of job that moves it.
    fn kind(&self) -> &'static str {
        match self {
            Subject::Tenant(_) => MOVE_JOB,
            Subject::Vshards { .. } => VSHARD_MOVE_JOB,
            Subject::Range { .. } => RANGE_MOVE_JOB,
        }
    }

    fn borrowed(&self) -> MoveSubject<'_> {
        match self {
            Subject::Tenant(tenant) => MoveSubject::Tenant(tenant),
            Subject::Vshards { vshards, tenants } => MoveSubject::Vshards { vshards, tenants },
            Subject::Range { tenant, range } => MoveSubject::Range(KeyRange {
                tenant,
                collection: &range.collection,
                from: &range.from,
                until: range.until.as_deref(),
            }),
        }
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Tenant(tenant) => write!(f, "tenant {tenant}"),
            Subject::Vshards { vshards, tenants } => {
                write!(f, "vshards {} ({} tenants)", vshard_list(vshards), tenants.len())
            }
            Subject::Range { tenant, range } => write!(f, "{}", range_name(tenant, range)),
        }
    }
}

/// One run of one move job.
struct Run<'m> {
    mover: &'m Mover,
    id: String,
    subject: Subject,
    progress: MoveProgress,
    pace: Pace,
}

impl Run<'_> {
    fn router(&self) -> &ShardRouter {
        &self.mover.router
    }

    fn subject(&self) -> MoveSubject<'_> {
        self.subject.borrowed()
    }

    /// Removes the subject's rows from `shard` (a target's leftovers, a source's old copy).
    async fn purge(&self, shard: &FencedShard<'_>) -> Result<(), Error> {
        let (db, id) = (shard.db(), shard.id());
        for tenant in self.subject().tenants() {
            BlobStore::new(db, id).purge_tenant(tenant).await?;
            RecordStore::new(db, id).purge_tenant(tenant).await?;
        }
        let vshards = self.subject().vshards();
        if !vshards.is_empty() {
            purge_rows(&INDEX_ENTRIES, shard, Selection::Vshards(vshards)).await?;
            purge_rows(&SPREAD_RECORDS, shard, Selection::Vshards(vshards)).await?;
        }
        if let MoveSubject::Range(range) = self.subject() {
            purge_rows(&SPREAD_RECORDS, shard, Selection::Range(range)).await?;
        }
        Ok(())
    }

    /// The tables a pass copies, with the rows it takes of each ([`copied_tables`]).
    fn copied_tables(&self) -> Vec<(&'static CopyTable, Selection<'_>)> {
        copied_tables(self.subject())
    }

    /// The tables compared: those a pass copies, and index entries (copied whole under the
    /// fence, see [`crate::moves::copy::INDEX_ENTRIES`]).
    fn compared_tables(&self) -> Vec<(&'static CopyTable, Selection<'_>)> {
        let mut tables = self.copied_tables();
        let vshards = self.subject().vshards();
        if !vshards.is_empty() {
            tables.push((&INDEX_ENTRIES, Selection::Vshards(vshards)));
        }
        tables
    }

    fn shards(&self) -> Result<(Placed, Placed), Error> {
        let parse = |id: &str| ShardId::parse(id).map_err(|e| Error::Corrupt(format!("move job shard: {e}")));
        let (from, to) = (parse(&self.progress.from)?, parse(&self.progress.to)?);
        let work = |db: Database| db.working_as(Work::Move);
        let (source, target) = (work(self.router().shard_db(&from)?), work(self.router().shard_db(&to)?));
        self.pace.watch(&[from.clone(), to.clone()]);
        Ok(((from, source), (to, target)))
    }

    async fn copy(&mut self) -> Result<(), Error> {
        if let Subject::Range { tenant, range } = &self.subject {
            let now = self.router().catalog().get_distribution(tenant, &range.collection).await?;
            if now.map(|row| row.ranges) != Some(range.ranges_before.clone()) {
                return Err(Error::MoveRefused(format!(
                    "the ranges of collection {} changed before the move began",
                    range.collection
                )));
            }
        }
        let ((from, source), (to, target)) = self.shards()?;
        if self.progress.first_copy.is_none() {
            // What an earlier attempt left on the target is not the subject's data.
            self.purge(&FencedShard::new(&target, &to)).await?;
            let margin = self.router().move_config().clock_margin;
            let began = Since::now(FencedShard::new(&source, &from), margin).await?;
            self.progress.first_copy = Some(FirstCopy { began, table: 0, after: None });
            let total = size_to_copy(self.router(), self.subject(), &from, Window::All).await?;
            self.progress.rows_to_copy = Some(total.rows);
            self.progress.bytes_to_copy = Some(total.bytes);
            self.progress.pass_started_ms = Some(now_ms());
            self.progress.copied.lag_rows = 0;
        }
        // The list of a vshard's tenants, and where the copy begins, are stored before anything
        // is copied.
        self.heartbeat().await?;
        let method = CopyMethod::best(&source, &target);
        while let Some(at) = self.progress.first_copy.clone() {
            let tally = Tally::default();
            let batch = {
                let tables = self.copied_tables();
                let Some(&(table, selection)) = tables.get(at.table) else { break };
                let pass = Pass { selection, window: Window::All, pace: Some(&self.pace) };
                let sides = (FencedShard::new(&source, &from), FencedShard::new(&target, &to));
                let batch_bytes = self.router().move_config().copy_batch_bytes;
                let batch =
                    copy_batch_counted(table, sides, &pass, (at.after.as_ref(), batch_bytes), method, Some(&tally));
                // The batch's progress is shown as it goes ([`PROGRESS_EVERY`]); a
                // cancellation seen then ends the batch there.
                tokio::select! {
                    biased;
                    batch = batch => batch?,
                    stopped = self.show_progress_within(&tally) => return Err(stopped),
                }
            };
            self.job().count_copied(batch.copied.bytes);
            let progress = &mut self.progress;
            progress.pace = Some(self.pace.report());
            progress.copied.rows_copied += batch.copied.read;
            progress.copied.bytes_copied += batch.copied.bytes;
            progress.method = Some(batch.copied.method);
            progress.first_copy = Some(match batch.last {
                Some(last) => FirstCopy { after: Some(last), ..at },
                None => FirstCopy { table: at.table + 1, after: None, ..at },
            });
            if self.heartbeat().await? {
                return Err(Error::MoveRefused("cancelled".to_owned()));
            }
        }
        self.progress.copied.passes += 1;
        self.progress.pass_since = self.progress.first_copy.as_ref().map(|at| at.began.clone());
        // How far behind the target is now: the rows changed on the source since the copy
        // began (the first catch-up pass takes them), not the rows the copy took.
        if let Some(since) = self.progress.pass_since.clone() {
            let changed = size_to_copy(self.router(), self.subject(), &from, Window::ChangedSince(&since)).await?;
            self.progress.copied.lag_rows = changed.rows;
        }
        self.progress.phase = Phase::CatchUp;
        Ok(())
    }

    /// While a batch of the first copy runs, stores the progress with what `tally` has counted
    /// of the batch so far, every [`PROGRESS_EVERY`] when it moved, else every
    /// [`CANCEL_CHECK_EVERY`] (to see a cancellation): a catalog write per interval, never per
    /// row. Ends only when the job must stop: an operator asked to cancel, or another instance
    /// holds the job.
    async fn show_progress_within(&self, tally: &Tally) -> Error {
        let (mut shown, mut stored) = ((0, 0), tokio::time::Instant::now());
        loop {
            tokio::time::sleep(PROGRESS_EVERY).await;
            let (rows, bytes) = tally.read();
            if (rows, bytes) == shown && stored.elapsed() < CANCEL_CHECK_EVERY {
                continue;
            }
            (shown, stored) = ((rows, bytes), tokio::time::Instant::now());
            let mut progress = self.progress.clone();
            progress.copied.rows_copied += rows;
            progress.copied.bytes_copied += bytes;
            progress.pace = Some(self.pace.report());
            match self.job().heartbeat(&progress).await {
                Ok(false) => {}
                Ok(true) => return Error::MoveRefused("cancelled".to_owned()),
                Err(e @ Error::JobLost(_)) => return e,
                Err(e) => tracing::warn!(job = self.id, error = %e, "cannot store a move's progress"),
            }
        }
    }

    async fn catch_up(&mut self) -> Result<(), Error> {
        while self.progress.copied.passes < MAX_CATCH_UP_PASSES + 1 {
            let since = self.since();
            self.pass(since).await?;
            if self.progress.copied.lag_rows <= SMALL_DELTA_ROWS {
                break;
            }
            if self.heartbeat().await? {
                return Err(Error::MoveRefused("cancelled".to_owned()));
            }
        }
        // The settled part (rows not changed since the last pass began) is compared now,
        // outside the fence; the cut-over then compares only the rest.
        self.progress.settled_since = self.progress.pass_since.clone();
        let ((from, source), (to, target)) = self.shards()?;
        let sides = (FencedShard::new(&source, &from), FencedShard::new(&target, &to));
        self.retire_orphan_uploads(&sides.1).await?;
        let settled = match &self.progress.settled_since {
            Some(since) => self.compare_part(sides, since, Part::Settled, &[]).await?,
            None => Checksums { tables: Vec::new(), matched: false },
        };
        if !settled.matched {
            // The cut-over compares everything instead.
            self.progress.settled_since = None;
        }
        self.progress.settled = Some(settled);
        self.progress.phase = Phase::CutOver;
        Ok(())
    }

    /// Where the next pass begins: the moment the last one began at.
    fn since(&self) -> Option<Since> {
        self.progress.pass_since.clone()
    }

    /// One pass over every table of the tenant (rows changed since `since`, or all).
    async fn pass(&mut self, since: Option<Since>) -> Result<(), Error> {
        let ((from, source), (to, target)) = self.shards()?;
        let started = now_ms();
        let began = Since::now(FencedShard::new(&source, &from), self.router().move_config().clock_margin).await?;
        let method = CopyMethod::best(&source, &target);
        let (mut rows, mut bytes, mut used) = (0, 0, None);
        let window = since.as_ref().map_or(Window::All, Window::ChangedSince);
        for (table, selection) in self.copied_tables() {
            let pass = Pass { selection, window, pace: Some(&self.pace) };
            let sides = (FencedShard::new(&source, &from), FencedShard::new(&target, &to));
            let copied = copy_rows(table, sides.0, sides.1, &pass, method).await?;
            rows += copied.read;
            bytes += copied.bytes;
            used = Some(copied.method);
        }
        self.progress.copied.count_pass(rows, bytes);
        self.job().count_copied(bytes);
        self.progress.pace = Some(self.pace.report());
        self.progress.method = used.or(self.progress.method);
        self.progress.pass_started_ms = Some(started);
        self.progress.pass_since = Some(began);
        Ok(())
    }

    async fn cut_over(&mut self) -> Result<(), Error> {
        let ((from, source_db), (to, target_db)) = self.shards()?;
        let (source, target) = (FencedShard::new(&source_db, &from), FencedShard::new(&target_db, &to));
        // A pass just before the fence leaves the one under it little to copy, and what it
        // copied is compared now, outside the fence.
        self.pass(self.since()).await?;
        if let (Some(compared), Some(until)) = (self.progress.settled_since.clone(), self.since()) {
            self.retire_orphan_uploads(&target).await?;
            let between = self.compare_part((source, target), &compared, Part::Until(&until), &[]).await?;
            // If they differ, the cut-over compares everything.
            self.progress.settled_since = between.matched.then_some(until);
        }
        let fenced_at = now_ms();
        source.freeze(self.subject(), &self.id, fenced_at).await?;
        let mut steps = self.progress.cut_over.fenced(fenced_at);
        if let Err(e) = wait_for_statements_before_the_fence(&source).await {
            return Err(self.thaw_after(&source, e).await);
        }
        steps.took(&mut self.progress.cut_over, "wait_for_statements");
        // A test stopping an instance between the fence and the pin switch stops it here.
        self.pause().await;
        // The last delta. Where everything up to its moment has been compared, the tables whose
        // rows carry their change are compared as they are copied.
        let (since, compared) = (self.since(), self.progress.settled_since.clone());
        let mut checked = Vec::new();
        match since {
            Some(since) if compared.as_ref() == Some(&since) => {
                checked = self.last_delta((source, target), &since).await?;
            }
            since => self.pass(since).await?,
        }
        let vshards = self.subject.borrowed().vshards();
        if !vshards.is_empty() {
            // Entries leave no tombstone when removed: the target takes the vshards' whole.
            purge_rows(&INDEX_ENTRIES, &target, Selection::Vshards(vshards)).await?;
            let pass = Pass { selection: Selection::Vshards(vshards), window: Window::All, pace: None };
            let copied =
                copy_rows(&INDEX_ENTRIES, source, target, &pass, CopyMethod::best(&source_db, &target_db)).await?;
            self.progress.copied.rows_copied += copied.read;
            self.progress.copied.bytes_copied += copied.bytes;
            self.job().count_copied(copied.bytes);
        }
        self.retire_orphan_uploads(&target).await?;
        steps.took(&mut self.progress.cut_over, "last_delta");
        // The rows the settled comparison did not cover (all of them if it found a difference).
        let mut checksums = match &self.progress.settled_since {
            Some(since) => {
                let rest = self.compare_part((source, target), since, Part::Changed, &checked).await?;
                let matched = rest.matched && checked.iter().all(|(_, ours, theirs)| ours == theirs);
                Checksums { tables: checked.into_iter().chain(rest.tables).collect(), matched }
            }
            None => self.compare_all(&source, &target).await?,
        };
        if !checksums.matched {
            tracing::warn!(
                job = self.id,
                "checksums differ after the last delta; copying and comparing everything once more"
            );
            self.pass(None).await?;
            self.retire_orphan_uploads(&target).await?;
            checksums = self.compare_all(&source, &target).await?;
        }
        let matched = checksums.matched;
        self.progress.cut_over.checksums = Some(checksums);
        steps.took(&mut self.progress.cut_over, "compare");
        if !matched {
            let e = Error::MoveRefused("source and target checksums differ after a full copy".to_owned());
            return Err(self.thaw_after(&source, e).await);
        }
        target.clear_fences(self.subject()).await?;
        source.mark_moved(self.subject(), &self.id, now_ms()).await?;
        steps.took(&mut self.progress.cut_over, "mark");
        // From here the move only goes forward: the source serves the tenant no more.
        let cutover_ms = self.progress.cut_over.switched(now_ms(), fenced_at);
        self.progress.phase = Phase::Cleanup;
        let (placement, action, tenant, target) = match &self.subject {
            Subject::Tenant(tenant) => (
                Placement::Pin(tenant, &to),
                "tenant.move.switch",
                Some(tenant.to_string()),
                format!("tenant:{tenant} shard:{to}"),
            ),
            Subject::Vshards { vshards, .. } => (
                Placement::Vshards(vshards, &to),
                "vshard.move.switch",
                None,
                format!("vshards:{} shard:{to}", vshard_list(vshards)),
            ),
            Subject::Range { tenant, range } => (
                Placement::Ranges(tenant, &range.collection, &range.ranges_after),
                "range.move.switch",
                Some(tenant.to_string()),
                format!("{} shard:{to}", range_name(tenant, range)),
            ),
        };
        let audit = Audit {
            actor: "system".to_owned(),
            tenant,
            action,
            target,
            request_id: format!("job-{}", self.id),
            client_request_id: None,
            client_address: None,
        };
        let progress = self.encoded()?;
        let epoch =
            self.router().catalog().switch_placement(placement, &self.id, &self.mover.owner, &progress, &audit).await?;
        self.progress.cut_over.epoch = Some(epoch);
        if let Err(e) = self.router().refresh().await {
            tracing::warn!(job = self.id, error = %e, "cannot refresh the map after a pin switch");
        }
        (self.mover.announce)(epoch).await;
        tracing::info!(job = self.id, subject = %self.subject, to = %to, epoch, cutover_ms, "moved");
        Ok(())
    }

    /// Lifts the fence after a failed cut-over (the tenant stays on the source), returning `e`.
    async fn thaw_after(&self, source: &FencedShard<'_>, e: Error) -> Error {
        if let Err(thaw) = source.thaw(self.subject()).await {
            tracing::warn!(job = self.id, error = %thaw, "cannot lift the fence after a failed cut-over");
        }
        e
    }

    /// Before a comparison: uploads the target holds live that the source has since replaced
    /// (copied live, superseded there before the blob row was copied) are retired on the target
    /// as they are on the source ([`retire_orphan_uploads`]). A range move takes no uploads.
    async fn retire_orphan_uploads(&self, target: &FencedShard<'_>) -> Result<(), Error> {
        if matches!(self.subject, Subject::Range { .. }) {
            return Ok(());
        }
        retire_orphan_uploads(target, Selection::from(self.subject())).await
    }

    /// The last delta under the fence, every row changed since `since` (up to which everything
    /// has been compared): the tables whose rows carry their change are copied and compared in
    /// one read of the source ([`crate::moves::copy::copy_and_compare`]), the others copied in pages
    /// (a delta is small: no staging table) and compared after. The tables go at once: until
    /// the switch nothing reads the subject on the target, so their order does not matter
    /// here. Gives the comparisons made.
    async fn last_delta(
        &mut self,
        (source, target): (FencedShard<'_>, FencedShard<'_>),
        since: &Since,
    ) -> Result<Vec<(String, Checksum, Checksum)>, Error> {
        let tables = self.copied_tables();
        let deltas = futures::future::try_join_all(tables.into_iter().map(|(table, selection)| async move {
            if let Some((copied, ours, theirs)) = copy_and_compare(table, (source, target), selection, since).await? {
                return Ok::<_, Error>((copied, Some((table.name.to_owned(), ours, theirs))));
            }
            let pass = Pass { selection, window: Window::ChangedSince(since), pace: None };
            Ok((copy_rows(table, source, target, &pass, CopyMethod::Pages).await?, None))
        }))
        .await?;
        let rows = deltas.iter().map(|(copied, _)| copied.read).sum();
        let bytes = deltas.iter().map(|(copied, _)| copied.bytes).sum();
        self.progress.copied.count_pass(rows, bytes);
        self.job().count_copied(bytes);
        Ok(deltas.into_iter().filter_map(|(_, compared)| compared).collect())
    }

    /// Checksums of one part of the rows on both sides, split at `since`
    /// ([`crate::moves::copy::split_checksums`]): the settled part while the source still changes, or
    /// the changed part under the fence. Tables always compared whole (index entries) are left
    /// out of the settled part and compared whole with the changed one; a table whose settled
    /// part cannot be taken apart makes the comparison fail, and its changed part is then
    /// compared whole.
    async fn compare_part(
        &self,
        (source, target): (FencedShard<'_>, FencedShard<'_>),
        since: &Since,
        part: Part<'_>,
        compared: &[(String, Checksum, Checksum)],
    ) -> Result<Checksums, Error> {
        let mut tables = Vec::new();
        let mut matched = true;
        for (table, selection) in self.compared_tables() {
            let whole = matches!(table.rows, crate::moves::copy::RowFilter::All);
            if (whole && part != Part::Changed) || compared.iter().any(|(name, _, _)| name == table.name) {
                continue;
            }
            // Outside the fence, in pages the pace rests between; under it, in one go.
            let split = if part != Part::Changed && compared_in_pages(table, (source, target)) {
                let pages = KeyPages::of(table, source, selection, SCAN_PAGE_ROWS).await?;
                split_checksums_in_pages(table, (source, target), selection, (since, part), (&pages, Some(&self.pace)))
                    .await?
            } else {
                split_checksums(table, (source, target), selection, since, part).await?
            };
            let pair = match split {
                Some(pair) => Some(pair),
                None if part == Part::Changed => {
                    let pass = Pass { selection, window: Window::All, pace: None };
                    Some(checksums(table, source, target, &pass).await?)
                }
                None => None,
            };
            match pair {
                Some((ours, theirs)) => {
                    matched &= ours == theirs;
                    tables.push((table.name.to_owned(), ours, theirs));
                }
                None => matched = false,
            }
        }
        Ok(Checksums { tables, matched })
    }

    /// Checksums of all the subject's rows on both sides.
    async fn compare_all(&self, source: &FencedShard<'_>, target: &FencedShard<'_>) -> Result<Checksums, Error> {
        let mut tables = Vec::new();
        for (table, selection) in self.compared_tables() {
            let pass = Pass { selection, window: Window::All, pace: None };
            let (ours, theirs) = checksums(table, *source, *target, &pass).await?;
            tables.push((table.name.to_owned(), ours, theirs));
        }
        let matched = tables.iter().all(|(_, a, b)| a == b);
        Ok(Checksums { tables, matched })
    }

    async fn cleanup(&mut self) -> Result<(), Error> {
        self.job().cleanup_grace(&self.progress, self.progress.cut_over.switched_at_ms).await?;
        let ((from, source), _) = self.shards()?;
        self.purge(&FencedShard::new(&source, &from)).await?;
        self.progress.phase = Phase::Done;
        self.end("done", None).await
    }

    async fn roll_back(&mut self, why: &str) -> Result<(), Error> {
        tracing::warn!(job = self.id, subject = %self.subject, why, "rolling a move back");
        let ((from, source), (to, target)) = self.shards()?;
        FencedShard::new(&source, &from).thaw(self.subject()).await?;
        self.purge(&FencedShard::new(&target, &to)).await?;
        self.progress.phase = Phase::RolledBack;
        self.progress.cut_over.rolled_back = Some(why.to_owned());
        let state = if why.starts_with("cancelled") { "cancelled" } else { "failed" };
        self.end(state, Some(why)).await
    }

    async fn end(&self, state: &str, error: Option<&str>) -> Result<(), Error> {
        self.job().end(&self.progress, state, error).await
    }

    fn encoded(&self) -> Result<String, Error> {
        encoded(&self.progress)
    }

    fn job(&self) -> JobHandle<'_> {
        let copied = self.mover.copied.of(self.subject.kind());
        JobHandle { router: &self.mover.router, owner: &self.mover.owner, id: &self.id, copied }
    }

    /// Stores the progress and renews the lease; `true` if an operator asked to cancel.
    /// [`Error::JobLost`] if another instance holds the job now.
    async fn heartbeat(&self) -> Result<bool, Error> {
        self.job().heartbeat(&self.progress).await
    }

    async fn pause(&self) {
        self.job().pause(&self.progress, self.progress.phase).await;
    }
}

impl PhasedJob for Run<'_> {
    fn id(&self) -> &str {
        &self.id
    }

    fn phase(&self) -> Phase {
        self.progress.phase
    }

    async fn heartbeat(&self) -> Result<bool, Error> {
        Run::heartbeat(self).await
    }

    async fn pause(&self) {
        Run::pause(self).await;
    }

    async fn copy(&mut self) -> Result<(), Error> {
        Run::copy(self).await
    }

    async fn catch_up(&mut self) -> Result<(), Error> {
        Run::catch_up(self).await
    }

    async fn cut_over(&mut self) -> Result<(), Error> {
        Run::cut_over(self).await
    }

    async fn cleanup(&mut self) -> Result<(), Error> {
        Run::cleanup(self).await
    }

    async fn roll_back(&mut self, why: &str) -> Result<(), Error> {
        Run::roll_back(self, why).await
    }
}

/// The shard holding key `at` in `ranges` (ascending, the first from `""`), the bound after
/// that key's range, and the ranges with the keys from `at` up to that bound on `to`.
fn split(ranges: &[RangeRow], at: &str, to: &ShardId) -> (ShardId, Option<String>, Vec<RangeRow>) {
    let holder = ranges.partition_point(|range| range.from.as_str() <= at).saturating_sub(1);
    let owner = ranges.get(holder).map_or_else(|| to.clone(), |range| range.shard.clone());
    let until = ranges.get(holder + 1).map(|next| next.from.clone());
    let mut after = ranges.to_vec();
    let moved = RangeRow { from: at.to_owned(), shard: to.clone() };
    match after.get_mut(holder) {
        Some(range) if range.from == at => *range = moved,
        _ => after.insert(holder + 1, moved),
    }
    (owner, until, after)
}

/// A range move's subject as an operator reads it: `acme/events ["m", "t")`.
fn range_name(tenant: &TenantId, range: &RangeMove) -> String {
    match &range.until {
        Some(until) => format!("{tenant}/{} [{:?}, {until:?})", range.collection, range.from),
        None => format!("{tenant}/{} [{:?}, end)", range.collection, range.from),
    }
}

/// The tables a pass of a move of `subject` copies, with the rows it takes of each: the
/// tenants' home data, and for vshards the records of hash-distributed collections their keys
/// place there.
fn copied_tables(subject: MoveSubject<'_>) -> Vec<(&'static CopyTable, Selection<'_>)> {
    if let MoveSubject::Range(range) = subject {
        return vec![(&SPREAD_RECORDS, Selection::Range(range))];
    }
    let mut tables: Vec<(&'static CopyTable, Selection<'_>)> =
        TENANT_TABLES.iter().map(|t| (*t, Selection::from(subject))).collect();
    let vshards = subject.vshards();
    if !vshards.is_empty() {
        tables.push((&SPREAD_RECORDS, Selection::Vshards(vshards)));
    }
    tables
}

/// The rows and bytes the first copy of `subject` takes from shard `from`, each table's rows
/// in the `window` given, counted in one statement per table ([`copy_size`]).
async fn size_to_copy(
    router: &ShardRouter,
    subject: MoveSubject<'_>,
    from: &ShardId,
    window: Window<'_>,
) -> Result<CopySize, Error> {
    let source = router.shard_db(from)?.working_as(Work::Move);
    let mut total = CopySize::default();
    for (table, selection) in copied_tables(subject) {
        let pass = Pass { selection, window, pace: None };
        total.add(copy_size(table, FencedShard::new(&source, from), &pass).await?);
    }
    Ok(total)
}

/// `vshards` as an operator reads them: `3, 4, 9`.
pub(crate) fn vshard_list(vshards: &[u32]) -> String {
    vshards.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Live uploads of the selected tenants on `target` that no blob shows (copied, then replaced
/// on the source before the blob row was copied) become `superseded`, for the janitor.
async fn retire_orphan_uploads(target: &FencedShard<'_>, selection: Selection<'_>) -> Result<(), Error> {
    let selected = selection.inline_condition();
    sqlx::query(&format!(
        "UPDATE blob_uploads SET state = 'superseded', changed_at = $1 WHERE {selected} AND state = 'live' \
         AND upload_id NOT IN (SELECT upload_id FROM blobs WHERE {selected} AND upload_id IS NOT NULL)"
    ))
    .bind(now_ms())
    .execute(target.pool())
    .on_shard(target)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ranges_of;

    #[test]
    fn a_moves_progress_is_stored_with_its_counters_and_cut_over_as_its_own_fields() {
        let mut progress = MoveProgress::new(&ShardId::parse("s0").unwrap(), &ShardId::parse("s1").unwrap());
        progress.copied.count_pass(3, 40);
        let stored = serde_json::to_string(&progress).unwrap();
        assert_eq!(
            stored,
            r#"{"phase":"copy","from":"s0","to":"s1","rows_copied":3,"bytes_copied":40,"passes":1,"lag_rows":3,"method":null,"pass_started_ms":null,"pass_since":null,"settled":null,"settled_since":null,"checksums":null,"fenced_at_ms":null,"cutover_ms":null,"cutover_steps_ms":[],"epoch":null,"switched_at_ms":null,"rolled_back":null}"#
        );
        let read: MoveProgress = serde_json::from_str(&stored).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), stored);
    }

    #[test]
    fn a_split_gives_the_keys_from_its_key_to_the_next_bound_to_the_shard() {
        let s2 = ShardId::parse("s2").unwrap();
        let before = ranges_of(&[("", "s0"), ("m", "s1")]);
        let (owner, until, after) = split(&before, "f", &s2);
        assert_eq!((owner.as_str(), until.as_deref()), ("s0", Some("m")));
        assert_eq!(after, ranges_of(&[("", "s0"), ("f", "s2"), ("m", "s1")]));
        let (owner, until, after) = split(&before, "t", &s2);
        assert_eq!((owner.as_str(), until), ("s1", None));
        assert_eq!(after, ranges_of(&[("", "s0"), ("m", "s1"), ("t", "s2")]));
        // At a bound, the whole range changes shard.
        let (owner, until, after) = split(&before, "m", &s2);
        assert_eq!((owner.as_str(), until), ("s1", None));
        assert_eq!(after, ranges_of(&[("", "s0"), ("m", "s2")]));
        let (owner, until, after) = split(&before, "", &s2);
        assert_eq!((owner.as_str(), until.as_deref()), ("s0", Some("m")));
        assert_eq!(after, ranges_of(&[("", "s2"), ("m", "s1")]));
    }
}
