//! What the balancer would do now: the policy ([`super::policy`]) over the load picture of a
//! span (each shard's request statement time per second), with what may not move now held back:
//! shards that are not active or whose breaker is open on this instance, and vshards and tenants
//! a job claims. Read-only: it starts nothing.

use std::collections::HashMap;

use serde::Deserialize;

use super::picture::{Span, picture};
use super::policy::{Decision, Movable, Policy, ShardInput, Subject};
use crate::claims::{tenant_subject, vshard_subject};
use crate::error::Error;
use crate::humantime_serde;
use crate::ids::TenantId;
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::health::BreakerState;
use crate::storage::meter::Counters;

/// The `[balancer]` configuration section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BalancerConfig {
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
}

impl Default for BalancerConfig {
    fn default() -> Self {
        let policy = Policy::default();
        Self {
            window: std::time::Duration::from_secs(600),
            threshold: policy.threshold,
            min_load_ms_per_s: policy.min_load_ms_per_s,
            min_improvement: policy.min_improvement,
            tenant_share: policy.tenant_share,
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
        if !(self.min_load_ms_per_s >= 0.0 && self.min_load_ms_per_s.is_finite()) {
            return Err("balancer.min_load_ms_per_s must be 0 or more".into());
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
    /// The decision.
    pub decision: Decision,
}

/// What the balancer would do now over the load of `span`.
pub async fn plan(router: &ShardRouter, span: Span, policy: &Policy) -> Result<Plan, Error> {
    let load = picture(router, span, usize::MAX).await?;
    let seconds = span.seconds();
    let rate = |c: &Counters| if seconds > 0.0 { c.statement_us as f64 / 1000.0 / seconds } else { 0.0 };
    let pools: HashMap<String, (ShardState, BreakerState)> =
        router.shard_dbs().into_iter().map(|(id, state, db)| (id.to_string(), (state, db.health().state()))).collect();
    let shards: Vec<ShardInput> = load
        .shards
        .iter()
        .filter(|s| s.registered)
        .map(|s| ShardInput {
            shard: s.shard.clone(),
            load: rate(&s.load.request),
            held: match pools.get(&s.shard) {
                None => Some("this instance has no pool for it".to_owned()),
                Some((ShardState::Active, BreakerState::Closed)) => None,
                Some((ShardState::Active, _)) => Some("its breaker is open".to_owned()),
                Some((state, _)) => Some(format!("it is {}", state.as_str())),
            },
        })
        .collect();
    // Only what sits on an overfull shard can be chosen: ask the catalog about those alone.
    let mean = shards.iter().map(|s| s.load).sum::<f64>() / shards.len().max(1) as f64;
    let overfull: Vec<&str> =
        shards.iter().filter(|s| s.load > policy.overfull_above(mean)).map(|s| s.shard.as_str()).collect();
    let mut movables = Vec::new();
    for v in &load.vshards {
        let (Ok(vshard), Some(owner)) = (u32::try_from(v.vshard), &v.owner) else { continue };
        if *owner == v.shard && overfull.contains(&v.shard.as_str()) {
            movables.push((Subject::Vshard { vshard }, vshard_subject(vshard), v.shard.clone(), rate(&v.load)));
        }
    }
    for t in &load.tenants {
        let (Ok(tenant), [shard]) = (TenantId::parse(&t.tenant), t.shards.as_slice()) else { continue };
        if overfull.contains(&shard.as_str()) {
            let subject = Subject::Tenant { tenant: t.tenant.clone() };
            movables.push((subject, tenant_subject(&tenant), shard.clone(), rate(&t.load)));
        }
    }
    let mut held_movables = Vec::with_capacity(movables.len());
    for (subject, claim, shard, load) in movables {
        let held = router.catalog().job_claiming(&claim).await?.map(|job| format!("is claimed by job {job}"));
        held_movables.push(Movable { subject, shard, load, held });
    }
    let decision = policy.decide(&shards, &held_movables);
    Ok(Plan { span, shards, decision })
}
