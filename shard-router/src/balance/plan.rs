//! What the balancer would do now: the policy ([`super::policy`]) over the load picture of a
//! span (each shard's request statement time per second), with what may not move now held back:
//! shards that are not active or whose breaker is open on this instance, vshards and tenants a
//! job claims, and those cooling down after a move.
//!
//! The picture lags behind the map: a window of ten minutes still shows, for minutes after a
//! move, the load the moved vshard put on its old shard. Read as it is, it would make the
//! balancer move more off a shard that is cool already (over-correction). So the load is
//! attributed to where it will land: a vshard's load to the shard that owns it now, a pinned
//! tenant's load to the shard it is pinned to now, and the load of what a move is carrying (in
//! flight) to that move's target. Read-only: it starts nothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::picture::{LoadPicture, ShardLoad, Span, TenantLoad, picture};
use super::policy::{Decision, Movable, Policy, ShardInput, Subject};
use crate::claims::{tenant_subject, vshard_subject};
use crate::error::Error;
use crate::humantime_serde;
use crate::ids::TenantId;
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::health::BreakerState;
use crate::storage::meter::{Counters, NO_VSHARD};

/// What the balancer does with its decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// It does not run.
    Off,
    /// It records its decisions as proposals; an operator approves them.
    Propose,
    /// It starts the moves it decides on.
    Apply,
}

impl Mode {
    /// Its name in the configuration, the catalog and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Propose => "propose",
            Mode::Apply => "apply",
        }
    }

    /// The mode named `name`.
    pub fn parse(name: &str) -> Option<Mode> {
        [Mode::Off, Mode::Propose, Mode::Apply].into_iter().find(|m| m.as_str() == name)
    }
}

/// The `[balancer]` configuration section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BalancerConfig {
    /// The mode it starts in, until an operator switches it (`PUT /v1/admin/balancer/mode`,
    /// kept in the catalog). Default `off`.
    pub mode: Mode,
    /// How often it runs (each run jittered by up to a tenth). Default 60 s.
    #[serde(with = "humantime_serde")]
    pub interval: std::time::Duration,
    /// A vshard or tenant it moved does not move again within this. Default 30 min.
    #[serde(with = "humantime_serde")]
    pub cooldown: std::time::Duration,
    /// The most moves it has running at once. Default 2.
    pub max_concurrent_moves: u32,
    /// The span the load is averaged over, so that a burst never moves data. Default 10 min.
    #[serde(with = "humantime_serde")]
    pub window: std::time::Duration,
    /// How far above the mean a shard may be before it is overfull (0.1: 10%). Default 0.1.
    pub threshold: f64,
    /// ... and at least this far (statement time, ms per second). Default 50.
    pub min_load_ms_per_s: f64,
    /// The share of the hottest excess a move must remove to be made. Default 0.1.
    pub min_improvement: f64,
    /// A tenant carrying more than this share of its shard's load is moved alone. Default 0.5.
    pub tenant_share: f64,
    /// The share of the window a shard must have been overfull for to send anything, so that a
    /// burst shorter than that moves nothing however strong it is. Default 0.8.
    pub sustained: f64,
}

impl Default for BalancerConfig {
    fn default() -> Self {
        let policy = Policy::default();
        Self {
            mode: Mode::Off,
            interval: std::time::Duration::from_secs(60),
            cooldown: std::time::Duration::from_secs(1800),
            max_concurrent_moves: 2,
            window: std::time::Duration::from_secs(600),
            threshold: policy.threshold,
            min_load_ms_per_s: policy.min_load_ms_per_s,
            min_improvement: policy.min_improvement,
            tenant_share: policy.tenant_share,
            sustained: policy.sustained,
        }
    }
}

impl BalancerConfig {
    /// What is wrong with it, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let fraction = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) { Ok(()) } else { Err(format!("balancer.{name} must be from 0 to 1")) }
        };
        fraction("threshold", self.threshold)?;
        fraction("min_improvement", self.min_improvement)?;
        fraction("tenant_share", self.tenant_share)?;
        fraction("sustained", self.sustained)?;
        if !(self.min_load_ms_per_s >= 0.0 && self.min_load_ms_per_s.is_finite()) {
            return Err("balancer.min_load_ms_per_s must be 0 or more".into());
        }
        if self.interval < std::time::Duration::from_secs(1) {
            return Err("balancer.interval must be at least 1s".into());
        }
        if self.max_concurrent_moves == 0 {
            return Err("balancer.max_concurrent_moves must be at least 1".into());
        }
        Ok(())
    }

    /// The policy it sets.
    pub fn policy(&self) -> Policy {
        Policy {
            threshold: self.threshold,
            min_load_ms_per_s: self.min_load_ms_per_s,
            min_improvement: self.min_improvement,
            tenant_share: self.tenant_share,
            sustained: self.sustained,
        }
    }
}

/// A plan: the inputs the policy saw and what it decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The span of the load read.
    pub span: Span,
    /// Each shard's load and whether it is held.
    pub shards: Vec<ShardInput>,
    /// What may move off the overfull shards, with its load and whether it is held.
    pub movables: Vec<Movable>,
    /// The decision.
    pub decision: Decision,
}

/// A move under way: what it carries, from where, to where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// What it moves.
    pub subject: Subject,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
}

/// What the balancer knows beyond the picture: the moves under way, until when each job claim
/// (`vshard:7`, `tenant:acme`) cools down after a move (ms since the Unix epoch), and the step
/// over which it tells how much of the span a shard was overfull for.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The step (ms): a whole number of load windows; 0: the whole span is one step.
    pub step_ms: i64,
    /// The moves under way.
    pub in_flight: Vec<InFlight>,
    /// Claims cooling down, with when they may move again.
    pub cooling: HashMap<String, i64>,
}

/// Where a tenant is now, as the map says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantPlace {
    /// The shard its home data is on.
    pub shard: String,
    /// The vshard it hashes to.
    pub vshard: u32,
    /// Whether it is pinned to its shard (a tenant move pins it) rather than placed by its vshard.
    pub pinned: bool,
}

/// What the plan knows of the map and of this instance's pools, as values.
#[derive(Debug, Clone, Default)]
pub struct FleetNow {
    /// Where each tenant of the picture is now.
    pub places: HashMap<String, TenantPlace>,
    /// Why each shard may neither send nor receive now (`None`: it may); a shard missing here
    /// has no pool on this instance.
    pub held: HashMap<String, Option<String>>,
}

/// The policy's inputs: each shard as the policy sees it, and what sits on each shard with its
/// load, attributed to where it will land.
#[derive(Debug, Clone, PartialEq)]
pub struct Attributed {
    /// The registered shards, in the map's order.
    pub shards: Vec<ShardInput>,
    /// The vshards and tenants, each with the shard it lands on and its load there (ms/s).
    pub on_shards: Vec<(Subject, String, f64)>,
}

/// What the balancer would do now over the load of `span`, knowing `context`.
pub async fn plan(router: &ShardRouter, span: Span, policy: &Policy, context: &Context) -> Result<Plan, Error> {
    let length = span.until_ms - span.since_ms;
    let step_ms = if context.step_ms > 0 { context.step_ms.min(length.max(1)) } else { length.max(1) };
    let stepped = Span { step_ms: Some(step_ms), ..span };
    let load = picture(router, stepped, usize::MAX).await?;
    let held = router
        .shard_dbs()
        .into_iter()
        .map(|(id, state, db)| {
            let why = match (state, db.health().state()) {
                (ShardState::Active, BreakerState::Closed) => None,
                (ShardState::Active, _) => Some("its breaker is open".to_owned()),
                (state, _) => Some(format!("it is {}", state.as_str())),
            };
            (id.to_string(), why)
        })
        .collect();
    let mut places = HashMap::new();
    for t in &load.tenants {
        let Ok(tenant) = TenantId::parse(&t.tenant) else { continue };
        let Ok(route) = router.route_tenant(&tenant) else { continue };
        let pinned = route.strategy != crate::map::Strategy::Hash;
        places.insert(t.tenant.clone(), TenantPlace { shard: route.shard.to_string(), vshard: route.vshard, pinned });
    }
    let Attributed { shards, on_shards } = attribute(&load, &FleetNow { places, held }, context, policy);
    // Only what sits on an overfull shard can be chosen: ask the catalog about those alone.
    let mean = shards.iter().map(|s| s.load).sum::<f64>() / shards.len().max(1) as f64;
    let overfull: Vec<&str> =
        shards.iter().filter(|s| s.load > policy.overfull_above(mean)).map(|s| s.shard.as_str()).collect();
    let now = crate::clock::now_ms();
    let mut movables = Vec::new();
    for (subject, shard, load) in on_shards {
        if !overfull.contains(&shard.as_str()) {
            continue;
        }
        let claim = match &subject {
            Subject::Vshard { vshard } => vshard_subject(*vshard),
            Subject::Tenant { tenant } => match TenantId::parse(tenant) {
                Ok(id) => tenant_subject(&id),
                Err(_) => continue,
            },
        };
        let held = match context.cooling.get(&claim) {
            Some(&until) if until > now => {
                Some(format!("moved recently: cools down for {} s more", (until - now + 999) / 1000))
            }
            _ => router.catalog().job_claiming(&claim).await?.map(|job| format!("is claimed by job {job}")),
        };
        movables.push(Movable { subject, shard, load, held });
    }
    let decision = policy.decide(&shards, &movables);
    Ok(Plan { span, shards, movables, decision })
}

/// The share of a step's statements on a shard that must have failed (errors of the database,
/// missed deadlines, refusals by an open breaker) for the step to count as an outage of it.
const OUTAGE_ERROR_SHARE: f64 = 0.1;

/// Why a shard that had an outage within the window is held.
const RECOVERING: &str = "it had an outage (failed statements or an open breaker) within the window: it neither \
                          sends nor receives until a whole window has passed without one";

/// The policy's inputs from the load picture `load` (read with a step), attributed to where the
/// load will land (see the module's comment) by what `fleet` says of the map now and the moves
/// in flight of `context`. Pure.
///
/// - A vshard's load counts on the shard that owns it now (or that its move in flight goes to);
/// - a tenant that left its vshard (pinned by a tenant move, or moving alone now) takes its load
///   along to where it is now, also from windows before its move: that load comes off its
///   vshard's windows on the shards it was on, so a vshard never carries a load that has left it;
/// - a shard's steps in which it had an outage (at least [`OUTAGE_ERROR_SHARE`] of its
///   statements failed) do not count as cool: its load is its average over the other steps,
///   and it is held (neither sends nor receives) until the window has no such step.
pub fn attribute(load: &LoadPicture, fleet: &FleetNow, context: &Context, policy: &Policy) -> Attributed {
    let span = load.span;
    let step_ms = span.step_ms.filter(|s| *s > 0).unwrap_or((span.until_ms - span.since_ms).max(1));
    let points = span.points();
    let seconds = span.seconds();
    let rate = |c: &Counters| if seconds > 0.0 { c.statement_us as f64 / 1000.0 / seconds } else { 0.0 };
    let step_rates = |series: &[Counters]| -> Vec<f64> {
        let mut cells: Vec<f64> = series.iter().map(|c| c.statement_us as f64 / step_ms as f64).collect();
        cells.resize(points, 0.0);
        cells
    };
    let registered: Vec<&ShardLoad> = load.shards.iter().filter(|s| s.registered).collect();
    // Each registered shard's load where it lands, over the span and per step.
    let mut loads: HashMap<String, (f64, Vec<f64>)> =
        registered.iter().map(|s| (s.shard.clone(), (0.0, vec![0.0; points]))).collect();
    let mut add = |shard: &str, amount: f64, cells: &[f64], sign: f64| {
        if let Some((total, steps)) = loads.get_mut(shard) {
            *total += sign * amount;
            for (step, cell) in steps.iter_mut().zip(cells) {
                *step += sign * cell;
            }
        }
    };
    let flight_of = |subject: &Subject, shard: &str| {
        context.in_flight.iter().find(|f| f.subject == *subject && f.from == shard).map(|f| f.to.clone())
    };
    // The tenants that move alone (pinned, or in a tenant move now): where each lands, and the
    // load that came off their vshards, by (vshard, shard it landed on).
    let mut alone: Vec<(&TenantLoad, String)> = Vec::new();
    let mut leaving: HashMap<(i32, &str), (f64, Vec<f64>)> = HashMap::new();
    let mut on_shards: Vec<(Subject, String, f64)> = Vec::new();
    for t in &load.tenants {
        let Some(place) = fleet.places.get(&t.tenant) else { continue };
        let subject = Subject::Tenant { tenant: t.tenant.clone() };
        let in_flight = flight_of(&subject, &place.shard);
        let lands = match &in_flight {
            Some(to) => to.clone(),
            None if place.pinned => place.shard.clone(),
            // A tenant placed by its vshard goes with it.
            None => flight_of(&Subject::Vshard { vshard: place.vshard }, &place.shard)
                .unwrap_or_else(|| place.shard.clone()),
        };
        on_shards.push((subject, lands.clone(), rate(&t.load)));
        if !place.pinned && in_flight.is_none() {
            continue;
        }
        let vshard = i32::try_from(place.vshard).unwrap_or(NO_VSHARD);
        for share in &t.by_shard {
            // Load a pinned tenant put on its own shard never was its vshard's.
            if place.pinned && share.shard == place.shard {
                continue;
            }
            let entry = leaving.entry((vshard, share.shard.as_str())).or_insert_with(|| (0.0, vec![0.0; points]));
            entry.0 += rate(&share.load);
            for (cell, more) in entry.1.iter_mut().zip(step_rates(&share.series)) {
                *cell += more;
            }
        }
        alone.push((t, lands));
    }
    let mut vshards: std::collections::BTreeMap<u32, (String, f64)> = std::collections::BTreeMap::new();
    for v in &load.vshards {
        let (total, cells) = (rate(&v.load), step_rates(&v.series));
        let (Ok(vshard), Some(owner)) = (u32::try_from(v.vshard), &v.owner) else {
            add(&v.shard, total, &cells, 1.0);
            continue;
        };
        let lands = flight_of(&Subject::Vshard { vshard }, owner).unwrap_or_else(|| owner.clone());
        // What tenants that left it put on it stays where it landed (they take it along below).
        let (gone, gone_cells) = match leaving.get(&(v.vshard, v.shard.as_str())) {
            Some((gone, gone_cells)) => {
                (gone.min(total), cells.iter().zip(gone_cells).map(|(c, g)| g.min(*c)).collect())
            }
            None => (0.0, vec![0.0; points]),
        };
        let kept: Vec<f64> = cells.iter().zip(&gone_cells).map(|(c, g)| c - g).collect();
        add(&lands, total - gone, &kept, 1.0);
        add(&v.shard, gone, &gone_cells, 1.0);
        vshards.entry(vshard).or_insert_with(|| (lands.clone(), 0.0)).1 += total - gone;
    }
    for (t, lands) in alone {
        for share in t.by_shard.iter().filter(|s| s.shard != lands) {
            let (total, cells) = (rate(&share.load), step_rates(&share.series));
            add(&share.shard, total, &cells, -1.0);
            add(&lands, total, &cells, 1.0);
        }
    }
    on_shards
        .splice(0..0, vshards.into_iter().map(|(vshard, (shard, load))| (Subject::Vshard { vshard }, shard, load)));
    // A shard's outage steps read as its average over the others, and hold it.
    let mut recovering = Vec::new();
    for s in &registered {
        let outage: Vec<bool> = (0..points)
            .map(|i| {
                s.series.get(i).is_some_and(|c| {
                    c.errors > 0 && c.errors as f64 >= OUTAGE_ERROR_SHARE * (c.reads + c.writes).max(1) as f64
                })
            })
            .collect();
        if !outage.contains(&true) {
            continue;
        }
        recovering.push(s.shard.clone());
        let Some((total, steps)) = loads.get_mut(&s.shard) else { continue };
        let served: Vec<f64> = steps.iter().zip(&outage).filter(|(_, out)| !**out).map(|(c, _)| *c).collect();
        if served.is_empty() {
            continue;
        }
        let average = served.iter().sum::<f64>() / served.len() as f64;
        *total = total.max(average);
        for (step, _) in steps.iter_mut().zip(&outage).filter(|(_, out)| **out) {
            *step = average;
        }
    }
    let steps: HashMap<String, Vec<f64>> = loads.iter().map(|(k, (_, steps))| (k.clone(), steps.clone())).collect();
    let hot_share = hot_shares(&steps, policy);
    let shards = registered
        .iter()
        .map(|s| ShardInput {
            shard: s.shard.clone(),
            load: loads.get(&s.shard).map_or(0.0, |(total, _)| *total).max(0.0),
            hot_share: hot_share.get(&s.shard).copied().unwrap_or(0.0),
            held: match fleet.held.get(&s.shard) {
                None => Some("this instance has no pool for it".to_owned()),
                Some(Some(why)) => Some(why.clone()),
                Some(None) if recovering.contains(&s.shard) => Some(RECOVERING.to_owned()),
                Some(None) => None,
            },
        })
        .collect();
    Attributed { shards, on_shards }
}

/// Per shard, the share of the steps in which it was overfull (above that step's line).
fn hot_shares(steps: &HashMap<String, Vec<f64>>, policy: &Policy) -> HashMap<String, f64> {
    let points = steps.values().map(Vec::len).max().unwrap_or(0);
    let mut hot: HashMap<String, usize> = steps.keys().map(|k| (k.clone(), 0)).collect();
    for i in 0..points {
        let mean = steps.values().map(|cells| cells[i]).sum::<f64>() / steps.len().max(1) as f64;
        let line = policy.overfull_above(mean);
        for (shard, cells) in steps {
            if cells[i] > line {
                *hot.entry(shard.clone()).or_default() += 1;
            }
        }
    }
    hot.into_iter().map(|(shard, n)| (shard, if points == 0 { 0.0 } else { n as f64 / points as f64 })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::picture::picture_of;
    use crate::catalog::{LoadRow, LoadScope};

    /// The load windows' width (ms); a span of ten of them.
    const WINDOW: i64 = 1_000;
    const SPAN: Span = Span { since_ms: 0, until_ms: 10 * WINDOW, step_ms: Some(WINDOW) };

    /// A request row of window `w`: `statement_ms` of statement time over `statements`, of which
    /// `errors` failed.
    fn row(w: i64, shard: &str, scope: LoadScope, subject: &str, statement_ms: u64, errors: u64) -> LoadRow {
        let counters = Counters { reads: 100, statement_us: statement_ms * 1000, errors, ..Counters::default() };
        LoadRow {
            start_ms: w * WINDOW,
            width_ms: WINDOW,
            instance: "i1".to_owned(),
            shard: shard.to_owned(),
            scope,
            subject: subject.to_owned(),
            work: "request".to_owned(),
            counters,
            overcount_us: 0,
        }
    }

    fn vshard(w: i64, shard: &str, vshard: i32, statement_ms: u64) -> LoadRow {
        row(w, shard, LoadScope::Vshard, &vshard.to_string(), statement_ms, 0)
    }

    fn tenant(w: i64, shard: &str, tenant: &str, statement_ms: u64) -> LoadRow {
        row(w, shard, LoadScope::Tenant, tenant, statement_ms, 0)
    }

    /// Every shard active, its breaker closed.
    fn fleet(shards: &[&str], places: &[(&str, TenantPlace)]) -> FleetNow {
        FleetNow {
            places: places.iter().map(|(t, p)| ((*t).to_owned(), p.clone())).collect(),
            held: shards.iter().map(|s| ((*s).to_owned(), None)).collect(),
        }
    }

    fn load_of(attributed: &Attributed, shard: &str) -> f64 {
        attributed.shards.iter().find(|s| s.shard == shard).unwrap().load
    }

    /// What the policy decides over `attributed` (everything on an overfull shard may move).
    fn decide(policy: &Policy, attributed: &Attributed) -> Decision {
        let movables: Vec<Movable> = attributed
            .on_shards
            .iter()
            .map(|(subject, shard, load)| Movable {
                subject: subject.clone(),
                shard: shard.clone(),
                load: *load,
                held: None,
            })
            .collect();
        policy.decide(&attributed.shards, &movables)
    }

    /// Shards a, b, c; vshards 3 and 7 on a, 4 on b, 5 on c. Tenant `hot` hashes to vshard 7.
    const SHARDS: [&str; 3] = ["a", "b", "c"];

    fn owners() -> Vec<String> {
        ["a", "a", "a", "a", "b", "c", "a", "a"].map(str::to_owned).to_vec()
    }

    #[test]
    fn a_tenant_moved_off_its_vshard_takes_its_load_along_also_from_windows_before_its_move() {
        let policy = Policy { min_load_ms_per_s: 0.0, ..Policy::default() };
        let moved = TenantPlace { shard: "b".to_owned(), vshard: 7, pinned: true };
        let shards: Vec<String> = SHARDS.map(str::to_owned).to_vec();
        // `hot` (39 ms/s) was on vshard 7 of a, then an approved proposal pinned it to b: at
        // first every window is from before its move; later, half of them are.
        for moved_at in [10, 5] {
            let (mut vshard_rows, mut tenant_rows) = (Vec::new(), Vec::new());
            for w in 0..10 {
                vshard_rows.extend([vshard(w, "a", 3, 100), vshard(w, "b", 4, 20), vshard(w, "c", 5, 20)]);
                if w < moved_at {
                    vshard_rows.push(vshard(w, "a", 7, 40));
                    tenant_rows.push(tenant(w, "a", "hot", 39));
                } else {
                    vshard_rows.extend([vshard(w, "a", 7, 1), vshard(w, "b", -1, 39)]);
                    tenant_rows.push(tenant(w, "b", "hot", 39));
                }
            }
            let load = picture_of(SPAN, &vshard_rows, &tenant_rows, &shards, &owners(), usize::MAX);
            let attributed = attribute(&load, &fleet(&SHARDS, &[("hot", moved.clone())]), &Context::default(), &policy);
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
            assert!(close(load_of(&attributed, "a"), 101.0), "moved at {moved_at}: {attributed:?}");
            assert!(close(load_of(&attributed, "b"), 59.0), "moved at {moved_at}: {attributed:?}");
            let seven = attributed.on_shards.iter().find(|(s, _, _)| *s == Subject::Vshard { vshard: 7 }).unwrap();
            assert!(close(seven.2, 1.0), "vshard 7 carries what is left on it, not `hot`'s load: {seven:?}");
            let hot = attributed.on_shards.iter().find(|(s, _, _)| matches!(s, Subject::Tenant { .. })).unwrap();
            assert_eq!((hot.1.as_str(), hot.2), ("b", 39.0));
            // a is overfull (101, the mean 60), but moving vshard 7 would move nothing.
            let decision = decide(&policy, &attributed);
            assert!(
                decision.choice.as_ref().is_none_or(|c| c.subject != Subject::Vshard { vshard: 7 }),
                "moved at {moved_at}: {decision:?}"
            );
        }
    }

    #[test]
    fn a_shards_outage_does_not_read_as_cool_and_it_receives_nothing_for_a_window() {
        let policy = Policy { min_load_ms_per_s: 0.0, sustained: 0.5, ..Policy::default() };
        let shards: Vec<String> = SHARDS.map(str::to_owned).to_vec();
        // a carries 120 ms/s, but for six of the ten windows it was frozen: its statements
        // failed, and took little statement time each. b carries 80 (vshards 4 and 6), c 60.
        let owners: Vec<String> = ["a", "a", "a", "a", "b", "c", "b", "a"].map(str::to_owned).to_vec();
        let mut rows = Vec::new();
        for w in 0..10 {
            let frozen = (2..8).contains(&w);
            rows.push(if frozen { row(w, "a", LoadScope::Vshard, "1", 2, 60) } else { vshard(w, "a", 1, 120) });
            rows.extend([vshard(w, "b", 4, 70), vshard(w, "b", 6, 10), vshard(w, "c", 5, 60)]);
        }
        let load = picture_of(SPAN, &rows, &[], &shards, &owners, usize::MAX);
        let attributed = attribute(&load, &fleet(&SHARDS, &[]), &Context::default(), &policy);
        let a = attributed.shards.iter().find(|s| s.shard == "a").unwrap();
        assert!(a.load >= 120.0 - 1e-9, "its load over the windows it served, not 49: {a:?}");
        assert!(a.held.as_deref().is_some_and(|why| why.contains("outage")), "{a:?}");
        let decision = decide(&policy, &attributed);
        assert!(decision.choice.as_ref().is_none_or(|c| c.to != "a"), "a move onto a: {decision:?}");
    }
}
