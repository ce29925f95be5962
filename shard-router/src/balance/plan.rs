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

use super::picture::{LoadPicture, Span, picture};
use super::policy::{Decision, Movable, Policy, ShardInput, Subject};
use crate::claims::{tenant_subject, vshard_subject};
use crate::error::Error;
use crate::humantime_serde;
use crate::ids::TenantId;
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::health::BreakerState;
use crate::storage::meter::Counters;

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

/// The policy's inputs from the load picture `load` (read with a step), attributed to where the
/// load will land (see the module's comment) by what `fleet` says of the map now and the moves
/// in flight of `context`. Pure.
pub fn attribute(load: &LoadPicture, fleet: &FleetNow, context: &Context, policy: &Policy) -> Attributed {
    let span = load.span;
    let step_ms = span.step_ms.filter(|s| *s > 0).unwrap_or((span.until_ms - span.since_ms).max(1));
    let seconds = span.seconds();
    let rate = |c: &Counters| if seconds > 0.0 { c.statement_us as f64 / 1000.0 / seconds } else { 0.0 };
    let step_rate = |c: &Counters| c.statement_us as f64 / step_ms as f64;
    // Each shard's load, attributed to where it will land (see the module's comment), over the
    // span and per step.
    let mut loads: HashMap<String, f64> =
        load.shards.iter().filter(|s| s.registered).map(|s| (s.shard.clone(), rate(&s.load.request))).collect();
    let mut steps: HashMap<String, Vec<f64>> = loads.keys().map(|k| (k.clone(), vec![0.0; span.points()])).collect();
    let mut shift = |from: &str, to: &str, amount: f64| {
        if from != to && loads.contains_key(from) && loads.contains_key(to) {
            *loads.entry(from.to_owned()).or_default() -= amount;
            *loads.entry(to.to_owned()).or_default() += amount;
        }
    };
    let flight_of = |subject: &Subject, shard: &str| {
        context.in_flight.iter().find(|f| f.subject == *subject && f.from == shard).map(|f| f.to.as_str())
    };
    // The vshards and tenants on each shard after those shifts, with their loads.
    let mut vshards: std::collections::BTreeMap<u32, (String, f64)> = std::collections::BTreeMap::new();
    for v in &load.vshards {
        let lands = match (u32::try_from(v.vshard), &v.owner) {
            (Ok(vshard), Some(owner)) => {
                let lands = flight_of(&Subject::Vshard { vshard }, owner).unwrap_or(owner);
                shift(&v.shard, lands, rate(&v.load));
                vshards.entry(vshard).or_insert_with(|| (lands.to_owned(), 0.0)).1 += rate(&v.load);
                lands
            }
            _ => &v.shard,
        };
        if let Some(cells) = steps.get_mut(lands) {
            for (cell, counters) in cells.iter_mut().zip(&v.series) {
                *cell += step_rate(counters);
            }
        }
    }
    let mut on_shards: Vec<(Subject, String, f64)> =
        vshards.into_iter().map(|(vshard, (shard, load))| (Subject::Vshard { vshard }, shard, load)).collect();
    for t in &load.tenants {
        let (Some(place), [shard]) = (fleet.places.get(&t.tenant), t.shards.as_slice()) else { continue };
        let subject = Subject::Tenant { tenant: t.tenant.clone() };
        let now = place.shard.as_str();
        // A tenant placed by its vshard went with it (shifted above); a pinned one moves alone.
        let lands = flight_of(&subject, now).unwrap_or(now).to_owned();
        if place.pinned {
            shift(shard, &lands, rate(&t.load));
        }
        on_shards.push((subject, lands, rate(&t.load)));
    }
    let hot_share = hot_shares(&steps, policy);
    let shards = load
        .shards
        .iter()
        .filter(|s| s.registered)
        .map(|s| ShardInput {
            shard: s.shard.clone(),
            load: loads.get(&s.shard).copied().unwrap_or(0.0).max(0.0),
            hot_share: hot_share.get(&s.shard).copied().unwrap_or(0.0),
            held: match fleet.held.get(&s.shard) {
                None => Some("this instance has no pool for it".to_owned()),
                Some(why) => why.clone(),
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
