//! The load picture read back: the fleet's windows (every instance's, summed) over a span of
//! time, by shard, by vshard and by tenant, as totals and as time series, and the heat map of
//! vshards by time. Only windows wholly inside the span count, so a span of whole windows is
//! counted exactly; the open windows (not yet stored) are not in it.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::{LoadRow, LoadScope};
use crate::error::Error;
use crate::router::ShardRouter;
use crate::storage::meter::{Counters, NO_VSHARD, Work};

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// From (ms since the Unix epoch, included).
    pub since_ms: i64,
    /// To (excluded).
    pub until_ms: i64,
    /// The width of a series' point (ms); no series when `None`.
    pub step_ms: Option<i64>,
}

impl Span {
    /// The span of `length_ms` that ends at the last end of a window of width `window_ms` before
    /// `now_ms` (so that every window in it has closed).
    pub fn ending_before(now_ms: i64, window_ms: i64, length_ms: i64, step_ms: Option<i64>) -> Self {
        let until_ms = now_ms - now_ms.rem_euclid(window_ms.max(1));
        Self { since_ms: until_ms - length_ms, until_ms, step_ms }
    }

    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        (self.until_ms - self.since_ms) as f64 / 1000.0
    }

    fn contains(&self, row: &LoadRow) -> bool {
        row.start_ms >= self.since_ms && row.start_ms + row.width_ms <= self.until_ms
    }

    /// The number of points of a series.
    pub fn points(&self) -> usize {
        match self.step_ms {
            Some(step) if step > 0 => usize::try_from((self.until_ms - self.since_ms + step - 1) / step).unwrap_or(0),
            _ => 0,
        }
    }

    fn point_of(&self, row: &LoadRow) -> Option<usize> {
        let step = self.step_ms.filter(|s| *s > 0)?;
        usize::try_from((row.start_ms - self.since_ms) / step).ok()
    }
}

/// The load of each kind of work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkLoad {
    /// Requests.
    pub request: Counters,
    /// Moves.
    pub moves: Counters,
    /// Maintenance.
    pub maintenance: Counters,
}

impl WorkLoad {
    fn add(&mut self, work: &str, counters: &Counters) {
        match Work::parse(work) {
            Some(Work::Request) => self.request.add(counters),
            Some(Work::Move) => self.moves.add(counters),
            Some(Work::Maintenance) | None => self.maintenance.add(counters),
        }
    }

    /// Every kind summed.
    pub fn all(&self) -> Counters {
        let mut all = self.request;
        all.add(&self.moves);
        all.add(&self.maintenance);
        all
    }
}

/// A shard's load over the span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLoad {
    /// The shard.
    pub shard: String,
    /// Whether the map still has it.
    pub registered: bool,
    /// Its load by kind of work.
    pub load: WorkLoad,
    /// Its load of every kind per step (when a step was asked for).
    pub series: Vec<Counters>,
}

/// A vshard's request load on one shard over the span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VshardLoad {
    /// The vshard; [`NO_VSHARD`] for load no vshard placed (pinned tenants, ranges).
    pub vshard: i32,
    /// The shard the load landed on.
    pub shard: String,
    /// The shard that owns the vshard now (`None` for [`NO_VSHARD`]).
    pub owner: Option<String>,
    /// Its request load.
    pub load: Counters,
    /// Per step.
    pub series: Vec<Counters>,
}

/// A tenant's request load over the span, as far as the windows kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantLoad {
    /// The tenant.
    pub tenant: String,
    /// The shards its load landed on.
    pub shards: Vec<String>,
    /// Its request load, in the windows that kept it.
    pub load: Counters,
    /// Statement time (µs) its ranks inherited from tenants they displaced: its true statement
    /// time is at least its counted one; a window that did not keep it counted none of it.
    pub overcount_us: u64,
    /// Per step.
    pub series: Vec<Counters>,
    /// Its load on each shard it landed on, in shard order.
    pub by_shard: Vec<TenantShare>,
}

/// A tenant's request load on one shard over the span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantShare {
    /// The shard.
    pub shard: String,
    /// Its load there.
    pub load: Counters,
    /// Per step.
    pub series: Vec<Counters>,
}

/// The fleet's load over a span.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPicture {
    /// The span.
    pub span: Span,
    /// The instances that stored windows in it.
    pub instances: Vec<String>,
    /// The fleet's load by kind of work.
    pub fleet: WorkLoad,
    /// Every shard of the map, in the map's order, then shards the map no longer has.
    pub shards: Vec<ShardLoad>,
    /// The vshards with the most request statement time, heaviest first (at most `top`).
    pub vshards: Vec<VshardLoad>,
    /// The tenants with the most request statement time, heaviest first (at most `top`).
    pub tenants: Vec<TenantLoad>,
}

/// The heat map: per row (a vshard, or a shard's load no vshard placed), one value per step.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatMap {
    /// The span (its step is set).
    pub span: Span,
    /// The rows: every vshard in order, then one row per shard for its load no vshard placed.
    pub rows: Vec<HeatRow>,
}

/// One row of the heat map.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatRow {
    /// The vshard, or [`NO_VSHARD`].
    pub vshard: i32,
    /// The shard that owns the vshard now (for [`NO_VSHARD`], the shard the load landed on).
    pub shard: String,
    /// Its counters per step.
    pub cells: Vec<Counters>,
}

impl Span {
    fn series(&self) -> Vec<Counters> {
        vec![Counters::default(); self.points()]
    }

    fn add_to(&self, series: &mut [Counters], row: &LoadRow) {
        if let Some(cell) = self.point_of(row).and_then(|i| series.get_mut(i)) {
            cell.add(&row.counters);
        }
    }
}

/// Reads the load picture of `span` from `router`'s catalog, keeping the `top` heaviest
/// vshards and tenants.
pub async fn picture(router: &ShardRouter, span: Span, top: usize) -> Result<LoadPicture, Error> {
    let catalog = router.catalog();
    let vshard_rows = catalog.load_rows(LoadScope::Vshard, span.since_ms, span.until_ms).await?;
    let tenant_rows = catalog.load_rows(LoadScope::Tenant, span.since_ms, span.until_ms).await?;
    let (map_shards, owners) = shards_and_owners(router);
    Ok(picture_of(span, &vshard_rows, &tenant_rows, &map_shards, &owners, top))
}

/// The load picture of `span` from the stored rows (`vshard_rows` and `tenant_rows`), given the
/// map's shards in order and each vshard's owner (`owners[v]`), keeping the `top` heaviest
/// vshards and tenants. Pure: [`picture`] reads its inputs.
pub fn picture_of(
    span: Span,
    vshard_rows: &[LoadRow],
    tenant_rows: &[LoadRow],
    map_shards: &[String],
    owners: &[String],
    top: usize,
) -> LoadPicture {
    let mut instances = BTreeSet::new();
    let mut fleet = WorkLoad::default();
    let mut shards: BTreeMap<String, ShardLoad> = BTreeMap::new();
    let mut vshards: BTreeMap<(i32, String), VshardLoad> = BTreeMap::new();
    for row in vshard_rows.iter().filter(|r| span.contains(r)) {
        instances.insert(row.instance.clone());
        fleet.add(&row.work, &row.counters);
        let shard = shards.entry(row.shard.clone()).or_insert_with(|| ShardLoad {
            shard: row.shard.clone(),
            registered: map_shards.contains(&row.shard),
            load: WorkLoad::default(),
            series: span.series(),
        });
        shard.load.add(&row.work, &row.counters);
        span.add_to(&mut shard.series, row);
        if Work::parse(&row.work) != Some(Work::Request) {
            continue;
        }
        let vshard: i32 = row.subject.parse().unwrap_or(NO_VSHARD);
        let entry = vshards.entry((vshard, row.shard.clone())).or_insert_with(|| VshardLoad {
            vshard,
            shard: row.shard.clone(),
            owner: usize::try_from(vshard).ok().and_then(|v| owners.get(v).cloned()),
            load: Counters::default(),
            series: span.series(),
        });
        entry.load.add(&row.counters);
        span.add_to(&mut entry.series, row);
    }
    let mut tenants: BTreeMap<String, TenantLoad> = BTreeMap::new();
    for row in tenant_rows.iter().filter(|r| span.contains(r)) {
        instances.insert(row.instance.clone());
        let entry = tenants.entry(row.subject.clone()).or_insert_with(|| TenantLoad {
            tenant: row.subject.clone(),
            shards: Vec::new(),
            load: Counters::default(),
            overcount_us: 0,
            series: span.series(),
            by_shard: Vec::new(),
        });
        if !entry.shards.contains(&row.shard) {
            entry.shards.push(row.shard.clone());
            entry.shards.sort();
        }
        entry.load.add(&row.counters);
        entry.overcount_us += row.overcount_us;
        span.add_to(&mut entry.series, row);
        let at = match entry.by_shard.binary_search_by(|s| s.shard.cmp(&row.shard)) {
            Ok(at) => at,
            Err(at) => {
                let share = TenantShare { shard: row.shard.clone(), load: Counters::default(), series: span.series() };
                entry.by_shard.insert(at, share);
                at
            }
        };
        entry.by_shard[at].load.add(&row.counters);
        span.add_to(&mut entry.by_shard[at].series, row);
    }
    let mut ordered: Vec<ShardLoad> = map_shards
        .iter()
        .map(|id| {
            shards.remove(id).unwrap_or_else(|| ShardLoad {
                shard: id.clone(),
                registered: true,
                load: WorkLoad::default(),
                series: span.series(),
            })
        })
        .collect();
    ordered.extend(shards.into_values());
    LoadPicture {
        span,
        instances: instances.into_iter().collect(),
        fleet,
        shards: ordered,
        vshards: heaviest(vshards.into_values().collect(), top, |v| &v.load),
        tenants: heaviest(tenants.into_values().collect(), top, |t| &t.load),
    }
}

/// The map's shards in order, and each vshard's owner.
fn shards_and_owners(router: &ShardRouter) -> (Vec<String>, Vec<String>) {
    router.with_map(|map| {
        let shards = map.shards.iter().map(|s| s.id.to_string()).collect();
        let owners = map.vshards.iter().map(|i| map.shards[usize::from(*i)].id.to_string()).collect();
        (shards, owners)
    })
}

/// The `top` items of `items` by statement time (then by statements), heaviest first.
fn heaviest<T>(mut items: Vec<T>, top: usize, load: impl Fn(&T) -> &Counters) -> Vec<T> {
    items.sort_by_key(|item| {
        let l = load(item);
        std::cmp::Reverse((l.statement_us, l.reads + l.writes))
    });
    items.truncate(top);
    items
}

/// Reads the heat map of `span` (its step set) for `work`: every vshard of the map in order,
/// labelled with its owner, then one row per shard for load no vshard placed.
pub async fn heat_map(router: &ShardRouter, span: Span, work: Work) -> Result<HeatMap, Error> {
    let rows = router.catalog().load_rows(LoadScope::Vshard, span.since_ms, span.until_ms).await?;
    let (map_shards, owners) = shards_and_owners(router);
    let mut heat: Vec<HeatRow> = owners
        .iter()
        .enumerate()
        .map(|(v, owner)| HeatRow {
            vshard: i32::try_from(v).unwrap_or(NO_VSHARD),
            shard: owner.clone(),
            cells: span.series(),
        })
        .collect();
    let mut unplaced: BTreeMap<String, HeatRow> = map_shards
        .iter()
        .map(|s| (s.clone(), HeatRow { vshard: NO_VSHARD, shard: s.clone(), cells: span.series() }))
        .collect();
    for row in rows.iter().filter(|r| span.contains(r) && Work::parse(&r.work) == Some(work)) {
        let vshard: i32 = row.subject.parse().unwrap_or(NO_VSHARD);
        let target = match usize::try_from(vshard).ok().and_then(|v| heat.get_mut(v)) {
            Some(target) => target,
            None => unplaced.entry(row.shard.clone()).or_insert_with(|| HeatRow {
                vshard: NO_VSHARD,
                shard: row.shard.clone(),
                cells: span.series(),
            }),
        };
        span.add_to(&mut target.cells, row);
    }
    let mut tail: Vec<HeatRow> = map_shards.iter().filter_map(|s| unplaced.remove(s)).collect();
    tail.extend(unplaced.into_values());
    heat.extend(tail);
    Ok(HeatMap { span, rows: heat })
}
