//! The shard map: the in-memory copy of the catalog's routing state (vshard table, tenant
//! directory with pins, shard states, and the quotas set through the admin API, [`quotas`]) and
//! the routing decision made from it.
//!
//! Routing a tenant's data is one hash-map look-up (does the tenant exist, is it pinned?) and, for
//! unpinned tenants, one hash and one array index. [`MapSnapshot::route_tenant`] returns a [`Route`]
//! that says which strategy decided and why, so `/v1/admin/route` can print it.
//!
//! The lowest room of the crate: values and pure functions only. It knows no database, no
//! clock and no pool (the catalog loads a [`MapSnapshot`], the router keeps it), and nothing of
//! the stores, the router or the jobs above it.

pub mod hash;
pub mod quotas;
mod tier;

pub use tier::Tier;

use std::collections::HashMap;

use foldhash::fast::RandomState;
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::ids::{ShardId, TenantId};
use crate::map::hash::{stable_hash, tenant_vshard, vshard_of};
use crate::map::quotas::MapQuotas;

/// Operational state of a shard, enforced on every request that routes to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    /// Serves reads and writes.
    Active,
    /// Serves reads; writes get 503 `shard_read_only`.
    ReadOnly,
    /// Serves reads and writes while a drain moves its vshards and pinned tenants to other
    /// shards; takes no new vshard, pin or tenant.
    Draining,
    /// Serves nothing; every request gets 503 `shard_offline`.
    Offline,
}

impl ShardState {
    /// The name stored in the catalog and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ShardState::Active => "active",
            ShardState::ReadOnly => "read_only",
            ShardState::Draining => "draining",
            ShardState::Offline => "offline",
        }
    }

    /// Parses a catalog value.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "active" => Some(ShardState::Active),
            "read_only" => Some(ShardState::ReadOnly),
            "draining" => Some(ShardState::Draining),
            "offline" => Some(ShardState::Offline),
            _ => None,
        }
    }
}

/// How a collection's records are spread over shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// The whole collection lives on the tenant's home shard (the default).
    Tenant,
    /// Each record on `vshard_table[h(tenant, collection, key) mod V]`.
    Hash,
    /// Each record on the shard of the greatest range bound `<=` its key.
    Range,
}

impl Distribution {
    /// The name used in the catalog and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Distribution::Tenant => "tenant",
            Distribution::Hash => "hash",
            Distribution::Range => "range",
        }
    }
}

/// Where a distributed collection's records live (collections distributed `tenant` have none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// By the vshard `h(tenant, collection, key)` picks.
    Hash,
    /// By range of keys: ascending bounds, the first `""`; a key lives on the shard of the
    /// greatest bound `<=` it.
    Range(Arc<[RangeBound]>),
}

impl Spread {
    /// The distribution this spread implements.
    pub fn distribution(&self) -> Distribution {
        match self {
            Spread::Hash => Distribution::Hash,
            Spread::Range(_) => Distribution::Range,
        }
    }
}

/// One bound of a range-distributed collection: keys from `from` (inclusive) up to the next
/// bound (exclusive) live on `shard`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeBound {
    /// The smallest key of the range.
    pub from: String,
    /// The shard holding it.
    pub shard: ShardIndex,
}

/// The index of the bound a key falls in: the greatest bound `<=` key (bounds ascending, the
/// first `""`, so there always is one).
pub fn range_of(bounds: &[RangeBound], key: &str) -> usize {
    bounds.partition_point(|b| b.from.as_str() <= key).saturating_sub(1)
}

/// Which strategy picked the shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The tenant is pinned to a shard (`tenant_pins`).
    Lookup,
    /// `vshard_table[h(tenant) mod V]`.
    Hash,
    /// A record of a hash-distributed collection: `vshard_table[h(tenant, collection, key) mod V]`.
    RecordHash,
    /// A record of a range-distributed collection: the shard of the greatest bound `<=` its key.
    Range,
}

impl Strategy {
    /// Whether the route places a record of a distributed collection (stored in
    /// `spread_records`) rather than a tenant's home data.
    pub fn is_spread(self) -> bool {
        matches!(self, Strategy::RecordHash | Strategy::Range)
    }
}

/// A tenant id as stored in the directory (inline up to 24 bytes).
pub type TenantKey = compact_str::CompactString;

/// Index of a shard inside one [`MapSnapshot`]'s shard list; small so the tenant directory stays
/// compact.
pub type ShardIndex = u16;

/// A routing decision, printable as-is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Which strategy decided.
    pub strategy: Strategy,
    /// The vshard the tenant hashes to (the one its rows are tagged with, pinned or not); for
    /// a record of a distributed collection, the vshard `h(tenant, collection, key)` picks.
    pub vshard: u32,
    /// The physical shard.
    pub shard: ShardId,
    /// The shard's state at the time of the decision.
    pub shard_state: ShardState,
    /// The map epoch the decision was made on.
    pub epoch: u64,
}

/// One tenant as the router sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantEntry {
    /// The shard the tenant is pinned to, if any.
    pub pin: Option<ShardIndex>,
    /// The tenant's tier.
    pub tier: Tier,
    /// The tenant's own rate limit, overriding its tier's.
    pub rate_limit: Option<TenantRateLimit>,
    /// Which life of the tenant id this is.
    pub incarnation: Incarnation,
    /// Whether any of its collections is distributed `hash` or `range` (then
    /// [`MapSnapshot::spread`] has them); routing a record of a tenant without looks no further.
    pub spread: bool,
}

/// One life of a tenant id, from its creation to its deletion. A tenant deleted and created
/// again under the same id is a new incarnation: tokens issued before its creation, valet grants
/// and index definitions of an earlier one do not reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Incarnation {
    /// The map epoch of the change that created the tenant: never given to two creations.
    /// (0 for tenants created before incarnations were recorded.)
    pub id: u64,
    /// When the tenant was created (ms since the Unix epoch, by the clock of the instance that
    /// created it).
    pub created_at_ms: i64,
}

impl Incarnation {
    /// Whether a token issued at `iat` (unix seconds, the token's claim) may act on this
    /// incarnation: not if it was issued in a second before the one the tenant was created in.
    /// `iat` has a resolution of one second, so a token issued in the creation's second is
    /// accepted (it may predate the creation by less than a second).
    pub fn admits_token_issued_at(self, iat: u64) -> bool {
        let created_secs = self.created_at_ms.div_euclid(1000);
        i64::try_from(iat).map_or(true, |iat| iat >= created_secs)
    }
}

/// A tenant's own request rate limit (the gatekeeper's throttle enforces it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantRateLimit {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests admitted at once.
    pub burst: u32,
}

/// A registered shard as the router sees it (no URL: the router never needs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardEntry {
    /// The shard's id.
    pub id: ShardId,
    /// Its state.
    pub state: ShardState,
}

/// Why a routing decision could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The tenant is not in the directory.
    #[error("tenant not found")]
    UnknownTenant,
    /// The vshard table is empty: no shard has been registered yet.
    #[error("no shard owns vshard {0}: register a shard first")]
    NoShards(u32),
}

/// The whole routing state at one epoch.
#[derive(Debug, Clone)]
pub struct MapSnapshot {
    /// Increases on every change of shards, vshards, pins or tenants.
    pub epoch: u64,
    /// Registered shards; [`ShardIndex`] values point into this list.
    pub shards: Vec<ShardEntry>,
    /// `vshards[v]` is the shard owning vshard `v`; empty until a shard exists.
    pub vshards: Vec<ShardIndex>,
    /// Every tenant, pinned or not. Keys are stored inline (up to 24 bytes) so a look-up touches
    /// one bucket rather than a bucket and a heap string.
    pub tenants: HashMap<TenantKey, TenantEntry, RandomState>,
    /// The number of vshards (fixed for the life of the catalog).
    pub vshard_count: u32,
    /// The distributed collections of each tenant that has any (by collection name).
    pub spread: HashMap<TenantKey, HashMap<String, Spread>, RandomState>,
    /// The tiers' quotas set through the admin API and the tenants' own overrides.
    pub quotas: MapQuotas,
}

impl MapSnapshot {
    /// An empty map with `vshard_count` vshards and no shards.
    pub fn empty(vshard_count: u32) -> Self {
        Self {
            epoch: 0,
            shards: Vec::new(),
            vshards: Vec::new(),
            tenants: HashMap::default(),
            vshard_count,
            spread: HashMap::default(),
            quotas: MapQuotas::default(),
        }
    }

    /// The spread of `tenant`'s `collection`, if it is distributed `hash` or `range`.
    pub fn spread_of(&self, tenant: &str, collection: &str) -> Option<&Spread> {
        self.spread.get(tenant)?.get(collection)
    }

    /// Where the record `key` of `tenant`'s `collection` lives: on the tenant's home shard, or
    /// where the collection's distribution puts it.
    pub fn route_record(&self, tenant: &str, collection: &str, key: &str) -> Result<Route, RouteError> {
        let entry = self.tenants.get(tenant).ok_or(RouteError::UnknownTenant)?;
        if !entry.spread {
            return self.route_entry(tenant, entry);
        }
        let Some(spread) = self.spread_of(tenant, collection) else { return self.route_entry(tenant, entry) };
        let vshard = vshard_of(stable_hash(&[tenant, collection, key]), self.vshard_count);
        let (strategy, index) = match spread {
            Spread::Hash => {
                (Strategy::RecordHash, *self.vshards.get(vshard as usize).ok_or(RouteError::NoShards(vshard))?)
            }
            Spread::Range(bounds) => (Strategy::Range, bounds[range_of(bounds, key)].shard),
        };
        let shard = &self.shards[usize::from(index)];
        Ok(Route { strategy, vshard, shard: shard.id.clone(), shard_state: shard.state, epoch: self.epoch })
    }

    /// The physical shards that may hold records of a distributed collection with keys in
    /// `[from, to)` (`to` open if `None`), each once, in shard-list order: every shard owning a
    /// vshard for `hash`, the shards of the overlapping ranges for `range`.
    pub fn spread_shards(&self, spread: &Spread, from: &str, to: Option<&str>) -> Vec<ShardIndex> {
        let mut shards: Vec<ShardIndex> = match spread {
            Spread::Hash => self.vshards.clone(),
            Spread::Range(bounds) => {
                let first = range_of(bounds, from);
                bounds[first..]
                    .iter()
                    .take_while(|b| to.is_none_or(|to| b.from.as_str() < to) || b.from.as_str() <= from)
                    .map(|b| b.shard)
                    .collect()
            }
        };
        shards.sort_unstable();
        shards.dedup();
        shards
    }

    /// Where `tenant`'s home data lives.
    pub fn route_tenant(&self, tenant: &str) -> Result<Route, RouteError> {
        let entry = self.tenants.get(tenant).ok_or(RouteError::UnknownTenant)?;
        self.route_entry(tenant, entry)
    }

    /// Where a tenant with directory entry `entry` lives (also used to place new tenants).
    pub fn route_entry(&self, tenant: &str, entry: &TenantEntry) -> Result<Route, RouteError> {
        let (strategy, vshard, index) = self.place(tenant, entry)?;
        let shard = &self.shards[usize::from(index)];
        Ok(Route { strategy, vshard, shard: shard.id.clone(), shard_state: shard.state, epoch: self.epoch })
    }

    /// The routing decision as indexes: strategy, vshard and the shard's index.
    fn place(&self, tenant: &str, entry: &TenantEntry) -> Result<(Strategy, u32, ShardIndex), RouteError> {
        let vshard = tenant_vshard(tenant, self.vshard_count);
        match entry.pin {
            Some(index) => Ok((Strategy::Lookup, vshard, index)),
            None => {
                let index = *self.vshards.get(vshard as usize).ok_or(RouteError::NoShards(vshard))?;
                Ok((Strategy::Hash, vshard, index))
            }
        }
    }

    /// The index of shard `id`, if registered.
    pub fn shard_index(&self, id: &str) -> Option<ShardIndex> {
        self.shards.iter().position(|s| s.id.as_str() == id).and_then(|i| ShardIndex::try_from(i).ok())
    }

    /// The shard entry for `id`, if registered.
    pub fn shard(&self, id: &str) -> Option<&ShardEntry> {
        self.shards.iter().find(|s| s.id.as_str() == id)
    }

    /// How many vshards each shard owns, in shard-list order.
    pub fn vshards_per_shard(&self) -> Vec<usize> {
        let mut counts = vec![0; self.shards.len()];
        for &index in &self.vshards {
            counts[usize::from(index)] += 1;
        }
        counts
    }

    /// How many tenants have their home on each shard, in shard-list order.
    pub fn tenants_per_shard(&self) -> Vec<usize> {
        let mut counts = vec![0; self.shards.len()];
        for (tenant, entry) in &self.tenants {
            if let Ok((_, _, index)) = self.place(tenant.as_str(), entry) {
                counts[usize::from(index)] += 1;
            }
        }
        counts
    }

    /// The unpinned tenants whose home vshard is one of `vshards`, in id order: the tenants a
    /// move of the vshards takes along.
    pub fn unpinned_tenants_of(&self, vshards: &[u32]) -> Vec<TenantId> {
        let mut tenants: Vec<TenantId> = self
            .tenants
            .iter()
            .filter(|(id, entry)| {
                entry.pin.is_none() && vshards.contains(&tenant_vshard(id.as_str(), self.vshard_count))
            })
            .filter_map(|(id, _)| TenantId::parse(id.as_str()).ok())
            .collect();
        tenants.sort();
        tenants
    }

    /// The vshard table as runs: `(first_vshard, last_vshard, shard_index)`.
    pub fn vshard_runs(&self) -> Vec<(u32, u32, ShardIndex)> {
        let mut runs: Vec<(u32, u32, ShardIndex)> = Vec::new();
        for (v, &index) in self.vshards.iter().enumerate() {
            let v = v as u32;
            match runs.last_mut() {
                Some(last) if last.2 == index && last.1 + 1 == v => last.1 = v,
                _ => runs.push((v, v, index)),
            }
        }
        runs
    }
}

/// Spreads `vshard_count` vshards evenly over `shard_count` shards in contiguous runs: shard `i`
/// owns vshards `[i*V/n, (i+1)*V/n)`.
pub fn spread_vshards(vshard_count: u32, shard_count: usize) -> Vec<ShardIndex> {
    assert!(shard_count > 0, "at least one shard");
    let n = shard_count as u64;
    (0..u64::from(vshard_count)).map(|v| (v * n / u64::from(vshard_count)) as ShardIndex).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_with(shards: usize, tenants: &[(&str, Option<ShardIndex>)]) -> MapSnapshot {
        let mut map = MapSnapshot::empty(1024);
        map.epoch = 7;
        map.shards = (0..shards)
            .map(|i| ShardEntry { id: ShardId::parse(&format!("shard-{i}")).unwrap(), state: ShardState::Active })
            .collect();
        map.vshards = spread_vshards(1024, shards);
        for (t, pin) in tenants {
            map.tenants.insert(
                TenantKey::from(*t),
                TenantEntry {
                    pin: *pin,
                    tier: Tier::Standard,
                    rate_limit: None,
                    incarnation: Incarnation::default(),
                    spread: false,
                },
            );
        }
        map
    }

    #[test]
    fn spread_is_even_and_contiguous() {
        let table = spread_vshards(1024, 4);
        assert_eq!(table.len(), 1024);
        for shard in 0..4u16 {
            assert_eq!(table.iter().filter(|&&s| s == shard).count(), 256);
        }
        assert!(table.windows(2).all(|w| w[0] <= w[1]));
        let three = spread_vshards(1024, 3);
        let counts: Vec<usize> = (0..3u16).map(|s| three.iter().filter(|&&x| x == s).count()).collect();
        assert!(counts.iter().all(|&c| c == 341 || c == 342), "{counts:?}");
    }

    #[test]
    fn pins_override_the_hash() {
        let map = map_with(4, &[("acme", None), ("globex", Some(2))]);
        let hashed = map.route_tenant("acme").unwrap();
        assert_eq!(hashed.strategy, Strategy::Hash);
        assert_eq!(hashed.vshard, tenant_vshard("acme", 1024));
        assert_eq!(
            usize::from(map.vshards[hashed.vshard as usize]),
            map.shard_index(hashed.shard.as_str()).unwrap() as usize
        );
        let pinned = map.route_tenant("globex").unwrap();
        assert_eq!(pinned.strategy, Strategy::Lookup);
        assert_eq!(pinned.shard.as_str(), "shard-2");
        assert_eq!(pinned.epoch, 7);
        assert_eq!(map.route_tenant("nobody"), Err(RouteError::UnknownTenant));
    }

    #[test]
    fn ten_thousand_tenants_spread_within_ten_percent() {
        let names: Vec<String> = (0..10_000).map(|i| format!("tenant-{i}")).collect();
        let entries: Vec<(&str, Option<ShardIndex>)> = names.iter().map(|n| (n.as_str(), None)).collect();
        let map = map_with(4, &entries);
        let counts = map.tenants_per_shard();
        assert_eq!(counts.iter().sum::<usize>(), 10_000);
        for count in counts {
            assert!((2_250..=2_750).contains(&count), "a shard got {count} of 10,000 tenants");
        }
    }

    #[test]
    fn unsharded_map_reports_no_shards() {
        let mut map = MapSnapshot::empty(1024);
        map.tenants.insert(
            TenantKey::from("acme"),
            TenantEntry {
                pin: None,
                tier: Tier::Free,
                rate_limit: None,
                incarnation: Incarnation::default(),
                spread: false,
            },
        );
        assert!(matches!(map.route_tenant("acme"), Err(RouteError::NoShards(_))));
    }

    #[test]
    fn a_token_from_a_second_before_the_creation_is_refused() {
        let incarnation = Incarnation { id: 9, created_at_ms: 1_700_000_000_750 };
        assert!(!incarnation.admits_token_issued_at(1_699_999_999));
        assert!(incarnation.admits_token_issued_at(1_700_000_000), "iat has whole seconds only");
        assert!(incarnation.admits_token_issued_at(1_700_000_001));
        assert!(incarnation.admits_token_issued_at(u64::MAX));
    }

    #[test]
    fn a_vshard_takes_its_unpinned_tenants_only() {
        let map = map_with(4, &[("acme", None), ("globex", Some(2))]);
        let acme = tenant_vshard("acme", 1024);
        assert_eq!(map.unpinned_tenants_of(&[acme]), vec![TenantId::parse("acme").unwrap()]);
        assert!(map.unpinned_tenants_of(&[tenant_vshard("globex", 1024)]).iter().all(|t| t.as_str() != "globex"));
    }

    #[test]
    fn records_of_distributed_collections_route_by_key() {
        let mut map = map_with(4, &[("acme", Some(3))]);
        map.tenants.get_mut("acme").unwrap().spread = true;
        let bounds: Arc<[RangeBound]> = Arc::from(vec![
            RangeBound { from: String::new(), shard: 0 },
            RangeBound { from: "m".to_owned(), shard: 2 },
        ]);
        let collections = map.spread.entry(TenantKey::from("acme")).or_default();
        collections.insert("events".to_owned(), Spread::Hash);
        collections.insert("names".to_owned(), Spread::Range(bounds.clone()));

        let hashed = map.route_record("acme", "events", "k1").unwrap();
        assert_eq!(hashed.strategy, Strategy::RecordHash);
        assert_eq!(hashed.vshard, vshard_of(stable_hash(&["acme", "events", "k1"]), 1024));
        assert_eq!(Some(map.vshards[hashed.vshard as usize]), map.shard_index(hashed.shard.as_str()));
        for (key, shard) in [("", "shard-0"), ("a", "shard-0"), ("lzz", "shard-0"), ("m", "shard-2"), ("zz", "shard-2")]
        {
            let route = map.route_record("acme", "names", key).unwrap();
            assert_eq!((route.strategy, route.shard.as_str()), (Strategy::Range, shard), "{key}");
        }
        // Other collections stay with the (pinned) tenant.
        assert_eq!(map.route_record("acme", "notes", "k1").unwrap().strategy, Strategy::Lookup);

        let range = Spread::Range(bounds);
        assert_eq!(map.spread_shards(&range, "a", Some("c")), vec![0]);
        assert_eq!(map.spread_shards(&range, "a", Some("m")), vec![0], "`to` is exclusive");
        assert_eq!(map.spread_shards(&range, "a", Some("m0")), vec![0, 2]);
        assert_eq!(map.spread_shards(&range, "n", None), vec![2]);
        assert_eq!(map.spread_shards(&Spread::Hash, "", None), vec![0, 1, 2, 3], "each shard once");
    }

    #[test]
    fn a_hash_collection_of_100_000_records_spreads_evenly_over_8_shards() {
        let mut map = map_with(8, &[("acme", None)]);
        map.tenants.get_mut("acme").unwrap().spread = true;
        map.spread.entry(TenantKey::from("acme")).or_default().insert("events".to_owned(), Spread::Hash);
        let mut counts = [0usize; 8];
        for i in 0..100_000 {
            let route = map.route_record("acme", "events", &format!("event-{i}")).unwrap();
            counts[usize::from(map.shard_index(route.shard.as_str()).unwrap())] += 1;
        }
        for count in counts {
            assert!((11_250..=13_750).contains(&count), "within 10% of 12,500 each: {counts:?}");
        }
    }

    #[test]
    fn runs_compress_the_vshard_table() {
        let map = map_with(4, &[]);
        assert_eq!(map.vshard_runs(), vec![(0, 255, 0), (256, 511, 1), (512, 767, 2), (768, 1023, 3)]);
    }
}
