//! Changing the distribution of a collection that holds records (DESIGN.md §5, "Moving
//! data"): a `collection.redistribute` job, run by the [`crate::moves::mover::Mover`] with the guarantees of a
//! tenant move (crash-safe lease, copy while traffic flows, catch-up, a fence, checksums, a
//! switch with a new epoch, cleanup after a grace period, roll back on failure or cancel).
//!
//! Its rows change table as well as shard: between `tenant` (the `records` table of the
//! tenant's home shard) and `hash` or `range` (`spread_records`, on the shards the vshards or
//! ranges place each key on). `hash` and `range` share `spread_records` and one key's row, so a
//! non-empty collection changes between them by way of `tenant`, in two jobs.
//!
//! # Phases
//!
//! 1. `copy`: the collection's rows in the new layout (left by an earlier, rolled-back attempt)
//!    are removed, then every row of the old layout, tombstones included, is read in key order
//!    from each shard holding part of it and merged into the shard the new distribution places
//!    its key on, with the vshard tag it has there ([`crate::moves::copy::copy_placed`]); a row
//!    replaces an older version of its key and never a newer one, so a pass can be repeated.
//! 2. `catch_up`: passes over the rows each source changed since the previous pass began (a
//!    moment per source shard: [`Since`]), until one finds few. Then the settled rows (not
//!    changed since the last pass began) of both layouts are compared, outside the fence: each
//!    source gives, from one snapshot, the keys it changed since its moment and the count and
//!    sum of each other row's hash (its vshard tag left out); the targets sum their rows
//!    without those keys ([`crate::moves::copy::changed_keys_and_sum`], [`crate::moves::copy::sum_by_keys`]),
//!    and sums add up over the shards of each side.
//! 3. `cut_over`: one more pass, and the rows it took that changed since the last comparison
//!    are compared the same way, still outside the fence. Then the collection's rows in the old
//!    layout are fenced on every source shard (`collection_fences`, state `frozen`: writes
//!    refused there whatever map an instance routes on, reads served); on PostgreSQL the job
//!    waits until no write statement that began before the fence still runs. The last delta is
//!    read once from each source, merged into the targets and compared with what they stored
//!    ([`crate::moves::copy::copy_placed_and_compare`]). If a comparison found a difference (or too
//!    many rows changed), the rest is compared, or everything; a difference then makes a full
//!    pass and a whole comparison, and a difference after that lifts the fence and the step
//!    fails (the job rolls back after three failures). Then fences an earlier change left over
//!    the new layout are lifted on every shard, the old layout is marked `moved` on the sources
//!    (its reads refused too), and one catalog transaction sets the new distribution with a new
//!    epoch and moves the job to `cleanup`. Requests that met the fence wait for that epoch
//!    (`moves.cutover_wait`) and go where the new map routes them.
//! 4. `cleanup`: after `moves.cleanup_grace`, the old layout's rows are removed from the
//!    sources. The `moved` fences stay until the collection comes back to that layout.
//!
//! While the job runs it claims the tenant (no move, split or other change of its collections'
//! distributions starts) and, when `hash` is one side, the rebalance slot (no vshard changes
//! shard, so the new layout's placement holds). Blobs and index entries do not move: an index
//! entry names its record by key, and look-ups read the record where the map places it.

use serde::{Deserialize, Serialize};

use crate::catalog::{Audit, CollectionRow, JobRow, Placement, RangeRow};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::hash::{stable_hash, tenant_vshard, vshard_of};
use crate::map::{Distribution, MapSnapshot, range_of};
use crate::moves::copy::{
    Checksum, CopySize, CopyTable, Owned, Pace, PaceReport, Part, Pass, RECORDS, SPREAD_RECORDS, Selection, Since,
    Window, add_checksums, additive_checksum, changed_keys_and_sum, copy_placed, copy_placed_and_compare, copy_size,
    sum_by_keys,
};
use crate::moves::job::{
    Announce, Checksums, CopyCounters, CutOverRecord, JobHandle, MAX_CATCH_UP_PASSES, Phase, PhasedJob,
    SMALL_DELTA_ROWS, VSHARD_MOVE_JOB, copy_pace, drive, encoded, wait_for_statements_before_the_fence,
};
use crate::storage::db::Database;
use crate::storage::meter::Work;
use crate::storage::shard::{FenceLayout, FencedShard, OnShard, TenantFence};

pub use crate::moves::job::REDISTRIBUTE_JOB;

/// What a change of a collection's distribution did.
#[derive(Debug, Clone)]
pub enum Redistribution {
    /// The collection held no record (or the change moves none): the catalog alone changed,
    /// in effect at this map epoch.
    Switched(u64),
    /// Its records move to the new layout: the job doing it.
    Moving(JobRow),
}

/// A distribution as a job stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistributionSpec {
    /// `tenant`, `hash` or `range`.
    pub distribution: Distribution,
    /// The ranges of a `range` distribution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<RangeRow>,
}

/// A redistribution's progress, stored as the job's `progress` (and shown by
/// `GET /v1/admin/jobs/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RedistributeProgress {
    /// The phase.
    pub phase: Phase,
    /// The collection.
    pub collection: CollectionName,
    /// The distribution it leaves.
    pub from: DistributionSpec,
    /// The distribution it takes.
    pub to: DistributionSpec,
    /// The shards holding the old layout's rows.
    pub sources: Vec<String>,
    /// The shards the new layout places rows on.
    pub targets: Vec<String>,
    /// Rows and bytes copied, passes made.
    #[serde(flatten)]
    pub copied: CopyCounters,
    /// The rows the first pass takes, counted on the sources as it begins: with `rows_copied`,
    /// how far the copy phase is (the catch-up passes copy more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_to_copy: Option<u64>,
    /// The bytes of those rows, as `bytes_copied` counts them, counted with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_to_copy: Option<u64>,
    /// Per source, the moment the last pass began at there: the next pass takes the rows
    /// changed since.
    pub pass_since: Vec<Since>,
    /// The checksums of the settled rows (not changed since `settled_since`) of the old and the
    /// new layout, compared before the fence.
    #[serde(default)]
    pub settled: Option<Checksums>,
    /// Per source, where the compared rows end: the cut-over compares the rows changed since;
    /// `null` when the settled comparison found a difference (the cut-over then compares all).
    #[serde(default)]
    pub settled_since: Option<Vec<Since>>,
    /// The old and the new layout's checksums compared under the fence, the fence, the switch
    /// of the distribution, and why the job rolled back, if it did.
    #[serde(flatten)]
    pub cut_over: CutOverRecord,
    /// The pace of the passes and its changes, stored after each pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceReport>,
}

/// Runs redistribution `job` here (`handle` holds its lease); `announce` tells every instance
/// of the switch.
pub(crate) async fn run(handle: JobHandle<'_>, announce: &Announce, job: &JobRow) -> Result<(), Error> {
    let progress: RedistributeProgress = serde_json::from_str(&job.progress)
        .map_err(|e| Error::Corrupt(format!("redistribution job {} progress: {e}", job.id)))?;
    let tenant = TenantId::parse(job.tenant.as_deref().unwrap_or_default())
        .map_err(|e| Error::Corrupt(format!("redistribution job {}: {e}", job.id)))?;
    let pace = copy_pace(handle.router);
    let mut run = Run { handle, announce, tenant, progress, pace };
    drive(&mut run).await
}

impl RedistributeProgress {
    /// A change of `collection` from `from` to `to` that has not begun.
    pub fn new(collection: &CollectionName, from: DistributionSpec, to: DistributionSpec) -> Self {
        Self {
            phase: Phase::Copy,
            collection: collection.clone(),
            from,
            to,
            sources: Vec::new(),
            targets: Vec::new(),
            copied: CopyCounters::default(),
            rows_to_copy: None,
            bytes_to_copy: None,
            pass_since: Vec::new(),
            settled: None,
            settled_since: None,
            cut_over: CutOverRecord::default(),
            pace: None,
        }
    }
}

/// Where a collection's rows live in one distribution, on one map: the shards, and which of
/// them each row goes to.
struct Layout {
    table: &'static CopyTable,
    fence: FenceLayout,
    shards: Vec<(ShardId, Database)>,
    /// Per shard, which of the collection's rows it holds.
    owned: Vec<OwnedRows>,
    place: Placing,
}

/// Which rows of the collection a shard holds (owned form of [`Owned`]).
enum OwnedRows {
    All,
    Vshards(Vec<u32>),
    Keys(Vec<(String, Option<String>)>),
}

impl OwnedRows {
    fn borrowed(&self) -> Owned<'_> {
        match self {
            OwnedRows::All => Owned::All,
            OwnedRows::Vshards(vshards) => Owned::Vshards(vshards),
            OwnedRows::Keys(intervals) => Owned::Keys(intervals),
        }
    }
}

/// How a key finds its shard (an index into [`Layout::shards`]) and its vshard tag.
enum Placing {
    /// One shard; every row tagged with the tenant's vshard.
    Home { tag: i64 },
    /// The shard owning the vshard `h(tenant, collection, key)` picks, tagged with it.
    Hash { owner: Vec<usize>, vshard_count: u32 },
    /// The shard of the key's range, tagged -1.
    Range { bounds: Vec<crate::map::RangeBound>, shard_of: Vec<usize> },
}

impl Layout {
    /// `spec` on `map` for `tenant`'s collection.
    fn new(
        router: &crate::router::ShardRouter,
        map: &MapSnapshot,
        tenant: &TenantId,
        spec: &DistributionSpec,
    ) -> Result<Self, Error> {
        let db = |id: &ShardId| Ok::<_, Error>((id.clone(), router.shard_db(id)?.working_as(Work::Move)));
        match spec.distribution {
            Distribution::Tenant => {
                let home = map.route_tenant(tenant.as_str()).map_err(|_| Error::TenantNotFound)?;
                Ok(Self {
                    table: &RECORDS,
                    fence: FenceLayout::Home,
                    shards: vec![db(&home.shard)?],
                    owned: vec![OwnedRows::All],
                    place: Placing::Home { tag: i64::from(tenant_vshard(tenant.as_str(), map.vshard_count)) },
                })
            }
            Distribution::Hash => {
                let mut indexes: Vec<u16> = map.vshards.clone();
                indexes.sort_unstable();
                indexes.dedup();
                let shards =
                    indexes.iter().map(|&i| db(&map.shards[usize::from(i)].id)).collect::<Result<Vec<_>, _>>()?;
                let position = |index: u16| indexes.binary_search(&index).unwrap_or(0);
                let owner: Vec<usize> = map.vshards.iter().map(|&i| position(i)).collect();
                let owned = (0..shards.len())
                    .map(|s| OwnedRows::Vshards((0..owner.len() as u32).filter(|&v| owner[v as usize] == s).collect()))
                    .collect();
                let place = Placing::Hash { owner, vshard_count: map.vshard_count };
                Ok(Self { table: &SPREAD_RECORDS, fence: FenceLayout::Spread, shards, owned, place })
            }
            Distribution::Range => {
                let mut ids: Vec<ShardId> = spec.ranges.iter().map(|r| r.shard.clone()).collect();
                ids.sort();
                ids.dedup();
                let shards = ids.iter().map(db).collect::<Result<Vec<_>, _>>()?;
                let shard_of: Vec<usize> =
                    spec.ranges.iter().map(|r| ids.binary_search(&r.shard).unwrap_or(0)).collect();
                let bounds = spec
                    .ranges
                    .iter()
                    .enumerate()
                    .map(|(i, r)| crate::map::RangeBound { from: r.from.clone(), shard: i as u16 })
                    .collect();
                let owned = (0..shards.len())
                    .map(|s| {
                        OwnedRows::Keys(
                            spec.ranges
                                .iter()
                                .enumerate()
                                .filter(|(i, _)| shard_of[*i] == s)
                                .map(|(i, r)| (r.from.clone(), spec.ranges.get(i + 1).map(|n| n.from.clone())))
                                .collect(),
                        )
                    })
                    .collect();
                Ok(Self {
                    table: &SPREAD_RECORDS,
                    fence: FenceLayout::Spread,
                    shards,
                    owned,
                    place: Placing::Range { bounds, shard_of },
                })
            }
        }
    }

    /// The shard (index into `shards`) and vshard tag of the row at `key`.
    fn place(&self, tenant: &TenantId, collection: &CollectionName, key: &str) -> (usize, i64) {
        match &self.place {
            Placing::Home { tag } => (0, *tag),
            Placing::Hash { owner, vshard_count } => {
                let vshard = vshard_of(stable_hash(&[tenant.as_str(), collection.as_str(), key]), *vshard_count);
                (owner[vshard as usize], i64::from(vshard))
            }
            Placing::Range { bounds, shard_of } => (shard_of[range_of(bounds, key)], -1),
        }
    }

    fn fenced(&self) -> Vec<FencedShard<'_>> {
        self.shards.iter().map(|(id, db)| FencedShard::new(db, id)).collect()
    }

    fn ids(&self) -> Vec<String> {
        self.shards.iter().map(|(id, _)| id.to_string()).collect()
    }

    /// The rows shard `i` holds of the collection, changed since `since` if given.
    fn pass<'a>(
        &'a self,
        i: usize,
        (tenant, collection): (&'a TenantId, &'a CollectionName),
        since: Option<&'a Since>,
        pace: Option<&'a Pace>,
    ) -> Pass<'a> {
        Pass {
            selection: Selection::Collection { tenant, collection, owned: self.owned[i].borrowed() },
            window: since.map_or(Window::All, Window::ChangedSince),
            pace,
        }
    }

    /// Whether every shard of the layout is PostgreSQL.
    fn all_postgres(&self) -> bool {
        self.shards.iter().all(|(_, db)| db.postgres().is_some())
    }
}

/// The checksum of the collection's rows in `layout`, added over its shards (read at once).
async fn layout_sum(
    layout: &Layout,
    subject: (&TenantId, &CollectionName),
    in_postgres: bool,
) -> Result<Checksum, Error> {
    let shards = layout.fenced();
    let parts = futures::future::try_join_all(shards.iter().enumerate().map(|(i, shard)| {
        let pass = layout.pass(i, subject, None, None);
        async move { additive_checksum(layout.table, *shard, &pass, in_postgres).await }
    }))
    .await?;
    add_checksums(&parts)
}

/// Which part of the rows [`Run::compare_part`] compares, split at a moment per source.
#[derive(Debug, Clone, Copy)]
enum Split<'a> {
    /// Not changed since.
    Settled,
    /// Changed since.
    Changed,
    /// Changed since, and not since these later moments (one per source).
    Until(&'a [Since]),
}

/// One run of one redistribution job.
struct Run<'m> {
    handle: JobHandle<'m>,
    announce: &'m Announce,
    tenant: TenantId,
    progress: RedistributeProgress,
    pace: Pace,
}

impl PhasedJob for Run<'_> {
    fn id(&self) -> &str {
        self.handle.id
    }

    fn phase(&self) -> Phase {
        self.progress.phase
    }

    async fn heartbeat(&self) -> Result<bool, Error> {
        self.job().heartbeat(&self.progress).await
    }

    async fn pause(&self) {
        self.job().pause(&self.progress, self.progress.phase).await;
    }

    async fn copy(&mut self) -> Result<(), Error> {
        let (tenant, collection) = self.subject();
        let now = self.router().catalog().get_distribution(tenant, collection).await?;
        let now = now.map_or(Distribution::Tenant, |row| row.distribution);
        if now != self.progress.from.distribution {
            return Err(Error::MoveRefused(format!(
                "the distribution of collection {collection} changed before the job began"
            )));
        }
        let running = self.router().catalog().running_jobs().await?;
        if let Some(step) = running.iter().find(|job| job.kind == VSHARD_MOVE_JOB) {
            return Err(Error::MoveRefused(format!("vshard move {} is still running; it ends first", step.id)));
        }
        let (from, to) = self.layouts()?;
        // What an earlier attempt left in the new layout is not the collection's data.
        self.purge(&to).await?;
        self.progress.sources = from.ids();
        self.progress.targets = to.ids();
        let mut total = CopySize::default();
        for (i, source) in from.fenced().into_iter().enumerate() {
            total.add(copy_size(from.table, source, &from.pass(i, self.subject(), None, None)).await?);
        }
        self.progress.rows_to_copy = Some(total.rows);
        self.progress.bytes_to_copy = Some(total.bytes);
        self.heartbeat().await?;
        self.pass(&from, &to, false).await?;
        // How far behind the new layout is now: the rows changed on the sources since the pass
        // began (the first catch-up pass takes them), not the rows the pass took.
        let mut changed = 0;
        for (i, source) in from.fenced().into_iter().enumerate() {
            let since = self.progress.pass_since.get(i);
            changed += copy_size(from.table, source, &from.pass(i, self.subject(), since, None)).await?.rows;
        }
        self.progress.copied.lag_rows = changed;
        self.progress.phase = Phase::CatchUp;
        Ok(())
    }

    async fn catch_up(&mut self) -> Result<(), Error> {
        let (from, to) = self.layouts()?;
        while self.progress.copied.passes < MAX_CATCH_UP_PASSES + 1 {
            self.pass(&from, &to, true).await?;
            if self.progress.copied.lag_rows <= SMALL_DELTA_ROWS {
                break;
            }
            if self.heartbeat().await? {
                return Err(Error::MoveRefused("cancelled".to_owned()));
            }
        }
        // The settled part (rows not changed since the last pass began) is compared now,
        // outside the fence; the cut-over then compares only the rest.
        let since = self.progress.pass_since.clone();
        let settled = self.compare_part(&from, &to, &since, Split::Settled).await?;
        let matched = settled.as_ref().is_some_and(|settled| settled.matched);
        self.progress.settled_since = matched.then_some(since);
        self.progress.settled = settled;
        self.progress.phase = Phase::CutOver;
        Ok(())
    }

    async fn cut_over(&mut self) -> Result<(), Error> {
        let (from, to) = self.layouts()?;
        let (tenant, collection) = (self.tenant.clone(), self.progress.collection.clone());
        let fenced = (&tenant, &collection, from.fence);
        // A pass just before the fence leaves the one under it little to copy, and what it
        // copied is compared now, outside the fence.
        let compared = self.progress.settled_since.clone();
        self.pass(&from, &to, true).await?;
        if let Some(compared) = compared {
            let until = self.progress.pass_since.clone();
            let between = self.compare_part(&from, &to, &compared, Split::Until(&until)).await?;
            // If they differ, the cut-over compares everything.
            self.progress.settled_since = between.is_some_and(|between| between.matched).then_some(until);
        }
        let fenced_at = now_ms();
        for source in from.fenced() {
            source.fence_collection(fenced, TenantFence::Frozen, self.handle.id, fenced_at).await?;
        }
        let mut steps = self.progress.cut_over.fenced(fenced_at);
        let waits =
            from.fenced().into_iter().map(|source| async move { wait_for_statements_before_the_fence(&source).await });
        if let Err(e) = futures::future::try_join_all(waits).await {
            return Err(self.thaw_after(&from, e).await);
        }
        steps.took(&mut self.progress.cut_over, "wait_for_statements");
        // A test stopping an instance between the fence and the switch stops it here.
        self.job().pause(&self.progress, self.progress.phase).await;
        let checked = async {
            // The last delta. Where everything up to its moment has been compared, it is
            // compared as it is copied (one read of each source).
            let delta = match &self.progress.settled_since {
                Some(since) if *since == self.progress.pass_since => self.last_delta(&from, &to).await?,
                _ => None,
            };
            let delta = match delta {
                Some(delta) => Some(delta),
                None => {
                    self.pass(&from, &to, true).await?;
                    match self.progress.settled_since.clone() {
                        Some(since) => self.compare_part(&from, &to, &since, Split::Changed).await?,
                        None => None,
                    }
                }
            };
            steps.took(&mut self.progress.cut_over, "last_delta");
            let mut checksums = match delta {
                Some(checked) => checked,
                None => self.compare(&from, &to).await?,
            };
            if !checksums.matched {
                tracing::warn!(
                    job = self.handle.id,
                    "checksums differ after the last delta; copying and comparing everything"
                );
                self.pass(&from, &to, false).await?;
                checksums = self.compare(&from, &to).await?;
            }
            steps.took(&mut self.progress.cut_over, "compare");
            Ok::<_, Error>(checksums)
        };
        let checksums = match checked.await {
            Ok(checksums) => checksums,
            Err(e) => return Err(self.thaw_after(&from, e).await),
        };
        let matched = checksums.matched;
        self.progress.cut_over.checksums = Some(checksums);
        if !matched {
            let e = Error::MoveRefused("the old and the new layout differ after a full copy".to_owned());
            return Err(self.thaw_after(&from, e).await);
        }
        // Fences an earlier change left over the new layout, on any shard: the collection
        // lives there from the switch on.
        let shards: Vec<ShardId> = self.router().with_map(|map| map.shards.iter().map(|s| s.id.clone()).collect());
        for id in &shards {
            let db = self.router().shard_db(id)?;
            FencedShard::new(&db, id).unfence_collection(&tenant, &collection, Some(to.fence), false).await?;
        }
        for source in from.fenced() {
            source.fence_collection(fenced, TenantFence::Moved, self.handle.id, now_ms()).await?;
        }
        steps.took(&mut self.progress.cut_over, "mark");
        // From here the job only goes forward: the old layout serves the collection no more.
        let switched_at = now_ms();
        let cutover_ms = self.progress.cut_over.switched(switched_at, fenced_at);
        self.progress.phase = Phase::Cleanup;
        let row = CollectionRow {
            tenant: tenant.clone(),
            collection: collection.clone(),
            distribution: self.progress.to.distribution,
            ranges: self.progress.to.ranges.clone(),
            created_at_ms: switched_at,
            updated_at_ms: switched_at,
        };
        let audit = Audit {
            actor: "system".to_owned(),
            tenant: Some(tenant.to_string()),
            action: "collection.redistribute.switch",
            target: format!("collection:{collection} distribution:{}", row.distribution.as_str()),
            request_id: format!("job-{}", self.handle.id),
            client_request_id: None,
            client_address: None,
        };
        let progress = encoded(&self.progress)?;
        let catalog = self.router().catalog();
        let epoch = catalog
            .switch_placement(Placement::Distribution(&row), self.handle.id, self.handle.owner, &progress, &audit)
            .await?;
        self.progress.cut_over.epoch = Some(epoch);
        if let Err(e) = self.router().refresh().await {
            tracing::warn!(job = self.handle.id, error = %e, "cannot refresh the map after a distribution switch");
        }
        (self.announce)(epoch).await;
        tracing::info!(job = self.handle.id, tenant = %tenant, collection = %collection, epoch, cutover_ms, "redistributed");
        Ok(())
    }

    async fn cleanup(&mut self) -> Result<(), Error> {
        self.job().cleanup_grace(&self.progress, self.progress.cut_over.switched_at_ms).await?;
        // The sources as they were: the map now places the collection the new way.
        let router = self.router();
        let old = self.progress.from.distribution;
        let table = if old == Distribution::Tenant { &RECORDS } else { &SPREAD_RECORDS };
        let (tenant, collection) = self.subject();
        for id in &self.progress.sources {
            let id = ShardId::parse(id).map_err(|e| Error::Corrupt(format!("redistribution source: {e}")))?;
            let db = router.shard_db(&id)?.working_as(Work::Move);
            let shard = FencedShard::new(&db, &id);
            sqlx::query(&format!("DELETE FROM {} WHERE tenant = $1 AND collection = $2", table.name))
                .bind(tenant.as_str())
                .bind(collection.as_str())
                .execute(shard.pool())
                .on_shard(&shard)
                .await?;
        }
        self.progress.phase = Phase::Done;
        self.job().end(&self.progress, "done", None).await
    }

    async fn roll_back(&mut self, why: &str) -> Result<(), Error> {
        tracing::warn!(job = self.handle.id, tenant = %self.tenant, collection = %self.progress.collection, why, "rolling a redistribution back");
        let (from, to) = self.layouts()?;
        let (tenant, collection) = self.subject();
        // The catalog has not switched (it switches with the job's move to `cleanup`): the old
        // layout is the collection's, whether a failed cut-over left it frozen or marked moved.
        for source in from.fenced() {
            source.unfence_collection(tenant, collection, Some(from.fence), false).await?;
        }
        self.purge(&to).await?;
        self.progress.phase = Phase::RolledBack;
        self.progress.cut_over.rolled_back = Some(why.to_owned());
        let state = if why.starts_with("cancelled") { "cancelled" } else { "failed" };
        self.job().end(&self.progress, state, Some(why)).await
    }
}

impl Run<'_> {
    fn job(&self) -> &JobHandle<'_> {
        &self.handle
    }

    fn router(&self) -> &crate::router::ShardRouter {
        self.handle.router
    }

    /// The old and the new layout on the current map (the job's claims keep the parts it
    /// relies on from changing).
    fn layouts(&self) -> Result<(Layout, Layout), Error> {
        let router = self.router();
        let map = router.with_map(Clone::clone);
        let from = Layout::new(router, &map, &self.tenant, &self.progress.from)?;
        let to = Layout::new(router, &map, &self.tenant, &self.progress.to)?;
        Ok((from, to))
    }

    fn subject(&self) -> (&TenantId, &CollectionName) {
        (&self.tenant, &self.progress.collection)
    }

    /// One pass from every source: the rows changed since the last pass began there
    /// (`catching_up`), or all of them.
    async fn pass(&mut self, from: &Layout, to: &Layout, catching_up: bool) -> Result<(), Error> {
        let (tenant, collection) = (&self.tenant, &self.progress.collection);
        let margin = self.router().move_config().clock_margin;
        let targets = to.fenced();
        let mut watched: Vec<ShardId> = from.shards.iter().map(|(id, _)| id.clone()).collect();
        watched
            .extend(to.shards.iter().map(|(id, _)| id.clone()).filter(|id| !from.shards.iter().any(|(f, _)| f == id)));
        self.pace.watch(&watched);
        let (mut rows, mut bytes, mut began) = (0, 0, Vec::with_capacity(from.shards.len()));
        for (i, source) in from.fenced().into_iter().enumerate() {
            began.push(Since::now(source, margin).await?);
            let since = self.progress.pass_since.get(i).filter(|_| catching_up);
            let pass = from.pass(i, (tenant, collection), since, Some(&self.pace));
            let copied =
                copy_placed((from.table, to.table), source, &targets, &pass, |key| to.place(tenant, collection, key))
                    .await?;
            rows += copied.read;
            bytes += copied.bytes;
        }
        self.progress.copied.count_pass(rows, bytes);
        self.handle.count_copied(bytes);
        self.progress.pace = Some(self.pace.report());
        self.progress.pass_since = began;
        Ok(())
    }

    /// The old and the new layout's rows of the collection, compared whole.
    async fn compare(&self, from: &Layout, to: &Layout) -> Result<Checksums, Error> {
        let subject = self.subject();
        let in_postgres = from.all_postgres() && to.all_postgres();
        let (ours, theirs): (Checksum, Checksum) =
            futures::try_join!(layout_sum(from, subject, in_postgres), layout_sum(to, subject, in_postgres))?;
        let matched = ours == theirs;
        let name = format!("{} -> {}", from.table.name, to.table.name);
        Ok(Checksums { tables: vec![(name, ours, theirs)], matched })
    }

    /// One part of the old and the new layout's rows compared, split at the moments `since`
    /// (one per source): each source gives, from one snapshot, the keys it changed since its
    /// moment and its checksum of the part; the targets' checksum takes the rows with those keys
    /// ([`Part::Changed`]) or the others ([`Part::Settled`]). `None` when too many keys
    /// changed, or the sources are not those the moments belong to.
    async fn compare_part(
        &self,
        from: &Layout,
        to: &Layout,
        since: &[Since],
        split: Split<'_>,
    ) -> Result<Option<Checksums>, Error> {
        let sources = from.shards.len();
        if since.len() != sources || matches!(split, Split::Until(until) if until.len() != sources) {
            return Ok(None);
        }
        let subject = self.subject();
        let in_postgres = from.all_postgres() && to.all_postgres();
        let (mut keys, mut ours) = (Vec::new(), Vec::new());
        for (i, source) in from.fenced().into_iter().enumerate() {
            let selection = from.pass(i, subject, None, None).selection;
            let part = match split {
                Split::Settled => Part::Settled,
                Split::Changed => Part::Changed,
                Split::Until(until) => Part::Until(&until[i]),
            };
            match changed_keys_and_sum(from.table, source, selection, (&since[i], part), in_postgres).await? {
                Some((changed, sum)) => {
                    keys.extend(changed);
                    ours.push(sum);
                }
                None => return Ok(None),
            }
        }
        let inside = !matches!(split, Split::Settled);
        let targets = to.fenced();
        let theirs = futures::future::try_join_all(targets.iter().enumerate().map(|(j, target)| {
            let selection = to.pass(j, subject, None, None).selection;
            sum_by_keys(to.table, *target, selection, (&keys, inside), in_postgres)
        }))
        .await?;
        let (ours, theirs) = (add_checksums(&ours)?, add_checksums(&theirs)?);
        let matched = ours == theirs;
        let name = format!("{} -> {}", from.table.name, to.table.name);
        Ok(Some(Checksums { tables: vec![(name, ours, theirs)], matched }))
    }

    /// The last delta under the fence, every row changed since the moment the last pass began
    /// at (up to which everything has been compared), copied and compared in one read of each
    /// source ([`copy_placed_and_compare`]); `None` when a source changed too many rows.
    async fn last_delta(&mut self, from: &Layout, to: &Layout) -> Result<Option<Checksums>, Error> {
        let since = self.progress.pass_since.clone();
        let subject = self.subject();
        let targets = to.fenced();
        let (mut ours, mut theirs, mut rows, mut bytes) = (Vec::new(), Vec::new(), 0, 0);
        for (i, source) in from.fenced().into_iter().enumerate() {
            let selection = from.pass(i, subject, None, None).selection;
            let place = |key: &str| to.place(subject.0, subject.1, key);
            let tables = (from.table, to.table);
            match copy_placed_and_compare(tables, source, &targets, (selection, &since[i]), place).await? {
                Some((copied, read, stored)) => {
                    rows += copied.read;
                    bytes += copied.bytes;
                    ours.push(read);
                    theirs.push(stored);
                }
                None => return Ok(None),
            }
        }
        self.progress.copied.count_pass(rows, bytes);
        self.handle.count_copied(bytes);
        let (ours, theirs) = (add_checksums(&ours)?, add_checksums(&theirs)?);
        let matched = ours == theirs;
        let name = format!("{} -> {} (last delta)", from.table.name, to.table.name);
        Ok(Some(Checksums { tables: vec![(name, ours, theirs)], matched }))
    }

    /// Lifts the old layout's fence after a failed cut-over (the collection stays as it was),
    /// returning `e`.
    async fn thaw_after(&self, from: &Layout, e: Error) -> Error {
        let (tenant, collection) = self.subject();
        for source in from.fenced() {
            if let Err(thaw) = source.unfence_collection(tenant, collection, Some(from.fence), true).await {
                tracing::warn!(job = self.handle.id, error = %thaw, "cannot lift the fence after a failed cut-over");
            }
        }
        e
    }

    /// Removes the collection's rows from `layout`'s table on its shards.
    async fn purge(&self, layout: &Layout) -> Result<(), Error> {
        let (tenant, collection) = self.subject();
        for shard in layout.fenced() {
            sqlx::query(&format!("DELETE FROM {} WHERE tenant = $1 AND collection = $2", layout.table.name))
                .bind(tenant.as_str())
                .bind(collection.as_str())
                .execute(shard.pool())
                .on_shard(&shard)
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redistributions_progress_is_stored_with_its_counters_and_cut_over_as_its_own_fields() {
        let spec = |distribution| DistributionSpec { distribution, ranges: Vec::new() };
        let collection = CollectionName::parse("events").unwrap();
        let mut progress = RedistributeProgress::new(&collection, spec(Distribution::Tenant), spec(Distribution::Hash));
        progress.copied.count_pass(3, 40);
        let stored = serde_json::to_string(&progress).unwrap();
        assert_eq!(
            stored,
            r#"{"phase":"copy","collection":"events","from":{"distribution":"tenant"},"to":{"distribution":"hash"},"sources":[],"targets":[],"rows_copied":3,"bytes_copied":40,"passes":1,"lag_rows":3,"pass_since":[],"settled":null,"settled_since":null,"checksums":null,"fenced_at_ms":null,"cutover_ms":null,"cutover_steps_ms":[],"epoch":null,"switched_at_ms":null,"rolled_back":null}"#
        );
        let read: RedistributeProgress = serde_json::from_str(&stored).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), stored);
    }
}
