//! A tenant's usage over the fleet: what every shard keeps of it ([`crate::storage::usage`],
//! changed by the shard's own triggers in the same transaction as the rows), summed, with each
//! shard's part.
//!
//! Each part of a shard's usage counts only on the shard the map places it on: the tenant's home
//! data (records and blobs) on its home shard, the rows a vshard places (hashed records, index
//! entries) on that vshard's owner. So a move copying a tenant or a vshard to another shard, or
//! waiting out its clean-up grace before it removes the old copy, never counts it twice, and its
//! usage is on its new shard from the moment the map switched. Records of range-distributed
//! collections count on the shard the map gives their range, and records of a collection whose
//! distribution is being changed only in the layout the map gives it: the copy a range move or
//! a change of distribution makes is taken off on its shard until the switch, and the old copy
//! from the switch until its clean-up ([`Placing`], built here from the map).
//!
//! One statement per shard that may hold some (every shard that is not offline: index entries
//! and hashed records of a tenant may sit on any), in parallel, each within
//! `storage.pool.probe_timeout`; a shard that does not answer is named, and its part is missing.
//! This sits with the router: it reads the map, then each shard's store.
//!
//! Beside it: the quotas ([`quotas`]), the allowances that hold writes to them across instances
//! ([`grants`]), and the collections quota, which counts names rather than rows
//! ([`collections`]), the daily usage kept for billing ([`daily`]), and the background audit of
//! each shard's kept usage against its rows ([`audit`]).

pub mod audit;
pub mod collections;
pub mod daily;
pub mod grants;
pub mod quotas;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::map::{MapSnapshot, RangeBound, ShardState, Spread};
use crate::router::ShardRouter;
use crate::storage::db::Database;
use crate::storage::shard::FencedShard;
use crate::storage::usage::{
    Placement, Placing, SpreadHere, Usage, every_tenant_usage as every_tenant_on_shard, tenant_usage as usage_on_shard,
};

/// One shard's part of a tenant's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardUsage {
    /// The shard.
    pub shard: ShardId,
    /// What of the tenant's data counts there.
    pub usage: Usage,
}

/// A tenant's usage over the fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantUsage {
    /// The sum over the shards that answered.
    pub total: Usage,
    /// The shards holding some of it, in the order of the router's shards.
    pub shards: Vec<ShardUsage>,
    /// Shards that did not answer within the probe timeout, or are offline: their part is
    /// missing from `total`.
    pub unreachable: Vec<ShardId>,
}

/// `tenant`'s usage over every shard. [`Error::TenantNotFound`] if neither the map nor the
/// catalog knows the tenant.
pub async fn tenant_usage(router: &ShardRouter, tenant: &TenantId) -> Result<TenantUsage, Error> {
    router.incarnation(tenant).await?;
    fleet_usage(router, tenant).await
}

/// [`tenant_usage`] of a tenant the map knows (no catalog query: it may run inside a catalog
/// transaction).
pub(crate) async fn fleet_usage(router: &ShardRouter, tenant: &TenantId) -> Result<TenantUsage, Error> {
    let home = router.route_tenant(tenant)?.shard;
    let owners = Owners::of(router);
    let placings: HashMap<ShardId, Placing> = router.with_map(|map| {
        map.shards.iter().map(|shard| (shard.id.clone(), placing_on(map, tenant.as_str(), &shard.id, &home))).collect()
    });
    let placings = &placings;
    let (shards, read) = on_every_shard(router, "a tenant's usage", |id, db| async move {
        let placing = placings.get(&id).cloned().unwrap_or_default();
        usage_on_shard(&FencedShard::new(&db, &id), tenant, &placing).await
    })
    .await;
    let mut usage = TenantUsage::default();
    let mut parts: HashMap<&ShardId, Usage> = HashMap::new();
    for (id, placed) in shards.iter().zip(read) {
        let Some(placed) = placed else {
            usage.unreachable.push(id.clone());
            continue;
        };
        for (_, part) in placed.iter().filter(|(placement, _)| owners.counts(id, *placement, &home)) {
            usage.total.add(part);
            parts.entry(id).or_default().add(part);
        }
    }
    usage.shards = shards
        .iter()
        .filter_map(|id| parts.get(id).map(|part| ShardUsage { shard: id.clone(), usage: *part }))
        .collect();
    Ok(usage)
}

/// Every tenant's usage over the fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetUsage {
    /// Each tenant of the map storing anything, with the sum over the shards that answered.
    pub tenants: BTreeMap<TenantId, Usage>,
    /// Shards that did not answer within the probe timeout, or are offline: their parts are
    /// missing.
    pub unreachable: Vec<ShardId>,
}

/// [`tenant_usage`] of every tenant of the map at once: one statement per shard (a scan of its
/// `tenant_usage`), each part counted where the map places it. For the admin API's listings and
/// the daily export; a tenant the map does not know (deleted since) is left out.
pub async fn every_tenant_usage(router: &ShardRouter) -> Result<FleetUsage, Error> {
    let owners = Owners::of(router);
    // How the map places each tenant with a spread collection, seen from each shard.
    let placings: HashMap<ShardId, HashMap<String, Placing>> = router.with_map(|map| {
        let spread: Vec<(&str, ShardId)> = map
            .spread
            .keys()
            .filter_map(|tenant| Some((tenant.as_str(), map.route_tenant(tenant).ok()?.shard)))
            .collect();
        map.shards
            .iter()
            .map(|shard| {
                let placed = spread
                    .iter()
                    .map(|(tenant, home)| ((*tenant).to_owned(), placing_on(map, tenant, &shard.id, home)))
                    .collect();
                (shard.id.clone(), placed)
            })
            .collect()
    });
    let (placings, none) = (&placings, HashMap::new());
    let none = &none;
    let (shards, read) = on_every_shard(router, "the tenants' usage", |id, db| async move {
        every_tenant_on_shard(&FencedShard::new(&db, &id), placings.get(&id).unwrap_or(none)).await
    })
    .await;
    let mut usage = FleetUsage::default();
    let mut homes: HashMap<String, Option<(TenantId, ShardId)>> = HashMap::new();
    for (id, tenants) in shards.iter().zip(read) {
        let Some(tenants) = tenants else {
            usage.unreachable.push(id.clone());
            continue;
        };
        for (tenant, placed) in tenants {
            let known = homes.entry(tenant).or_insert_with_key(|tenant| {
                let tenant = TenantId::parse(tenant).ok()?;
                let home = router.route_tenant(&tenant).ok()?.shard;
                Some((tenant, home))
            });
            let Some((tenant, home)) = known else { continue };
            for (_, part) in placed.iter().filter(|(placement, _)| owners.counts(id, *placement, home)) {
                usage.tenants.entry(tenant.clone()).or_default().add(part);
            }
        }
    }
    Ok(usage)
}

/// How `map` places `tenant`'s data seen from the shard `here`, the tenant's home being `home`.
fn placing_on(map: &MapSnapshot, tenant: &str, here: &ShardId, home: &ShardId) -> Placing {
    let mut spread: Vec<(String, SpreadHere)> = map
        .spread
        .get(tenant)
        .map(|collections| {
            collections
                .iter()
                .map(|(name, spread)| {
                    let here = match spread {
                        Spread::Hash => SpreadHere::Hash,
                        Spread::Range(bounds) => SpreadHere::Range(elsewhere(map, bounds, here)),
                    };
                    (name.clone(), here)
                })
                .collect()
        })
        .unwrap_or_default();
    spread.sort_by(|a, b| a.0.cmp(&b.0));
    Placing { home: here == home && !spread.is_empty(), spread }
}

/// The key intervals of a range-distributed collection (`bounds`) that `map` places on shards
/// other than `here`, neighbours joined: from (inclusive) until (exclusive; `None`: to the end).
fn elsewhere(map: &MapSnapshot, bounds: &[RangeBound], here: &ShardId) -> Vec<(String, Option<String>)> {
    let mut intervals = Vec::new();
    let mut open: Option<&str> = None;
    for bound in bounds {
        let is_here = map.shards.get(usize::from(bound.shard)).is_some_and(|shard| shard.id == *here);
        match (is_here, open) {
            (false, None) => open = Some(&bound.from),
            (true, Some(from)) => {
                intervals.push((from.to_owned(), Some(bound.from.clone())));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(from) = open {
        intervals.push((from.to_owned(), None));
    }
    intervals
}

/// The owner of each vshard in the map, to tell where a placed part counts.
struct Owners(Vec<ShardId>);

impl Owners {
    fn of(router: &ShardRouter) -> Self {
        Owners(
            router.with_map(|map| map.vshards.iter().map(|&index| map.shards[usize::from(index)].id.clone()).collect()),
        )
    }

    /// Whether a part placed by `placement` on `shard` counts there, for a tenant whose home
    /// shard is `home`.
    fn counts(&self, shard: &ShardId, placement: Placement, home: &ShardId) -> bool {
        match placement {
            Placement::Home => shard == home,
            // The rows of ranges placed elsewhere were taken off on the shard ([`Placing`]).
            Placement::Range => true,
            Placement::Vshard(vshard) => self.0.get(vshard as usize) == Some(shard),
        }
    }
}

/// Runs `read` on every shard that is not offline, in parallel, each within
/// `storage.pool.probe_timeout` ([`ShardRouter::within_probe`]): the shards, and what each
/// answered (`None`: offline, failed or late, logged as not reading `what`).
async fn on_every_shard<T, F, Fut>(router: &ShardRouter, what: &str, read: F) -> (Vec<ShardId>, Vec<Option<T>>)
where
    F: Fn(ShardId, Database) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let what = format!("read {what}");
    let shards = router.shard_dbs();
    let answers = futures::future::join_all(shards.iter().map(|(id, state, db)| {
        let (read, what) = (&read, &what);
        async move {
            if *state == ShardState::Offline {
                return None;
            }
            router.within_probe(id, what, read(id.clone(), db.clone())).await
        }
    }))
    .await;
    (shards.into_iter().map(|(id, _, _)| id).collect(), answers)
}
