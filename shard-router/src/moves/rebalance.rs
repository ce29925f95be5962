//! The vshard rebalance planner: from who owns which vshard, what each shard may do (receive,
//! drain, keep) and, to balance by bytes, how much each vshard stores, it decides which vshards
//! and which pinned tenants move where. It is pure (no I/O, no clock, no randomness) and
//! deterministic: the same input gives the same plan, whatever the order of the shard and pin
//! lists. The jobs that carry a plan out and `POST /v1/admin/vshards/rebalance` live above.
//!
//! ## Roles
//! Every shard index that owns a vshard or holds a pinned tenant is listed with a [`ShardRole`]:
//! an `active` shard [`Receives`](ShardRole::Receives), a `draining` one
//! [`Drains`](ShardRole::Drains) (it ends with no vshard and no pinned tenant), a `read_only` or
//! `offline` one [`Keeps`](ShardRole::Keeps) what it has and takes nothing. Balance is sought
//! over the receiving shards only; a keeping shard's vshards are neither moved nor counted.
//!
//! ## Balancing by count ([`Weights::Count`])
//! Let `T` be the number of vshards on receiving and draining shards and `R` the number of
//! receiving shards. Every receiving shard ends with `⌊T/R⌋` or `⌈T/R⌉` vshards, and the plan
//! is the smallest that achieves it: every vshard of a draining shard moves once, and a receiving
//! shard gives exactly its excess over its target, where the `T mod R` larger targets go to the
//! receiving shards that own the most vshards (ties: lower index). A shard never both gives and
//! takes. A donor gives the highest-numbered vshards it owns (the end of its last run), and the
//! given vshards are handed out in vshard order to the shards short of their target in index
//! order, so runs stay as contiguous as this allows.
//!
//! ## Balancing by bytes ([`Weights::Bytes`])
//! A shard's load is the bytes of its vshards plus those of the tenants pinned to it. Three steps:
//! 1. the vshards of draining shards leave, heaviest first (ties: lower vshard), each to the
//!    least loaded receiving shard (ties: lower index);
//! 2. the pinned tenants of draining shards follow the same way (see below);
//! 3. greedy balancing: take the receiving shards from the most loaded down; the first one that
//!    still has a vshard that has not moved in this plan and weighs strictly between 0 and its
//!    load's excess over the least loaded shard's gives the one that best closes the gap to the
//!    least loaded shard: the weight nearest to the smaller of the donor's excess over the mean
//!    and the receiver's shortfall (so that one of the two lands on the mean), or to half the
//!    gap when the donor is already below the mean (ties: the lighter vshard, then the higher
//!    vshard number). Repeat until no receiving shard has such a vshard.
//!
//! What this achieves: no vshard moves twice (a plan has at most one move per vshard); each
//! move of step 3 lowers the sum of the squared loads and leaves both shards between the old
//! minimum and maximum, so the most loaded receiving shard never gets heavier, the least loaded
//! never lighter, and the largest deviation from the mean never grows. The plan stops at the
//! point where no single further move of an unmoved vshard could lower that largest deviation
//! (any such move would lower the sum of squares too). The bound at that point: for every
//! receiving shard `s`, each vshard it owned before the plan and still owns weighs 0 or at least
//! `load(s) − min_load`. In particular the spread between the most and the least loaded
//! receiving shard is at most the lightest non-empty vshard the most loaded one kept, unless its
//! load is all pinned tenants, vshards it received in this plan and empty vshards.
//! This is a greedy bound, not an optimum (byte balancing is a partition problem).
//!
//! ## Pinned tenants
//! Pins are an operator's choice: only the tenants pinned to a draining shard move. Each goes to
//! the receiving shard with the lowest key `(load, pinned tenants held, index)`, where `pinned
//! tenants held` counts pins it had before and the ones it got in this plan. By bytes the pins
//! are placed heaviest first (ties: tenant id), a pin's bytes count into the load, and they are
//! placed before step 3 so that the balancing can compensate for them. By count a pin weighs 0
//! (the load is the vshard count after the vshard plan), so pins go to the receiving shards with
//! the fewest vshards and are spread among those by how many pins each holds; they are placed in
//! tenant id order.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::map::{ShardIndex, TenantKey};

/// What a rebalance balances: the request's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// The number of vshards per shard; exact to one vshard.
    Count,
    /// The stored bytes per shard (vshards and pinned tenants); greedy, see the module docs.
    Bytes,
}

/// The weight of each vshard, by [`Balance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights<'a> {
    /// Every vshard weighs one; pinned tenants weigh nothing.
    Count,
    /// `Bytes(bytes)`: `bytes[v]` is what vshard `v` stores; one entry per vshard.
    Bytes(&'a [u64]),
}

impl Weights<'_> {
    /// The balance these weights serve.
    pub fn balance(&self) -> Balance {
        match self {
            Weights::Count => Balance::Count,
            Weights::Bytes(_) => Balance::Bytes,
        }
    }
}

/// What a shard may do in a rebalance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardRole {
    /// An `active` shard: may take vshards and pinned tenants, and give vshards.
    Receives,
    /// A `draining` shard: must end with no vshard and no pinned tenant.
    Drains,
    /// A `read_only` or `offline` shard: keeps its vshards and tenants and takes nothing.
    Keeps,
}

/// One shard as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanShard {
    /// The shard's index in the shard map.
    pub index: ShardIndex,
    /// What it may do.
    pub role: ShardRole,
}

/// A tenant pinned to a shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedTenant {
    /// The tenant.
    pub tenant: TenantKey,
    /// The shard it is pinned to.
    pub shard: ShardIndex,
    /// What it stores on that shard; read only when balancing by bytes.
    pub bytes: u64,
}

/// Everything the planner decides from.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    /// `owners[v]` is the shard owning vshard `v` (the map's vshard table).
    pub owners: &'a [ShardIndex],
    /// What each vshard weighs.
    pub weights: Weights<'a>,
    /// Every shard that owns a vshard or holds a pinned tenant, each once, in any order. Shards
    /// that own nothing yet (a newly registered one) take part by being listed as receiving.
    pub shards: &'a [PlanShard],
    /// Every pinned tenant, in any order.
    pub pinned: &'a [PinnedTenant],
}

/// A vshard changing owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VshardMove {
    /// The vshard.
    pub vshard: u32,
    /// Its owner now.
    pub from: ShardIndex,
    /// Its owner after the move.
    pub to: ShardIndex,
}

/// A pinned tenant changing shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantMove {
    /// The tenant.
    pub tenant: TenantKey,
    /// The shard it is pinned to now.
    pub from: ShardIndex,
    /// The shard it is pinned to after the move.
    pub to: ShardIndex,
}

/// What a rebalance moves, and the loads before and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What was balanced: the unit of [`before`](Plan::before) and [`after`](Plan::after).
    pub balance: Balance,
    /// The vshards that move, in vshard order; each at most once.
    pub vshards: Vec<VshardMove>,
    /// The pinned tenants that move, in tenant id order.
    pub tenants: Vec<TenantMove>,
    /// The load of each shard index (up to the highest one listed) before the plan: vshards
    /// owned by count, bytes of vshards and pinned tenants by bytes.
    pub before: Vec<u64>,
    /// The load of each shard index after the plan, in the same unit.
    pub after: Vec<u64>,
}

impl Plan {
    /// Whether the plan moves nothing.
    pub fn is_empty(&self) -> bool {
        self.vshards.is_empty() && self.tenants.is_empty()
    }
}

/// Why no plan could be made. `NoReceivingShard` is the operator's to fix (409 `no_receiving_shard`
/// when the API maps it); the others mean the caller built an inconsistent input (500).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Draining shards hold vshards or pinned tenants but no shard may receive them.
    #[error("no active shard can receive the {vshards} vshards and {tenants} pinned tenants of draining shards")]
    NoReceivingShard {
        /// vshards that must leave draining shards.
        vshards: usize,
        /// Pinned tenants that must leave draining shards.
        tenants: usize,
    },
    /// The byte weights do not cover the vshard table one for one.
    #[error("{weights} vshard weights for {owners} vshards")]
    WeightCount {
        /// Length of the vshard table.
        owners: usize,
        /// Number of weights given.
        weights: usize,
    },
    /// A shard index is listed twice.
    #[error("shard index {0} is listed twice")]
    DuplicateShard(ShardIndex),
    /// A vshard's owner is not listed.
    #[error("vshard {vshard} is owned by shard index {shard}, which is not listed")]
    UnlistedOwner {
        /// The vshard.
        vshard: u32,
        /// Its owner.
        shard: ShardIndex,
    },
    /// A pinned tenant's shard is not listed.
    #[error("tenant {tenant} is pinned to shard index {shard}, which is not listed")]
    UnlistedPin {
        /// The tenant.
        tenant: TenantKey,
        /// The shard it is pinned to.
        shard: ShardIndex,
    },
    /// The vshard table has more entries than a `u32` can number.
    #[error("{0} vshards: more than a u32 can number")]
    TooManyVshards(usize),
    /// The bytes of all vshards and pinned tenants add up to more than a `u64` holds.
    #[error("the stored bytes add up to more than u64::MAX")]
    LoadOverflow,
}

/// Plans a rebalance: see the module documentation for what it guarantees.
pub fn plan(input: &PlanInput<'_>) -> Result<Plan, PlanError> {
    let roles = roles_by_index(input)?;
    let receivers: Vec<ShardIndex> = shards_with(&roles, ShardRole::Receives);
    require_receiver(input, &roles, &receivers)?;
    let before = loads(input, input.owners, roles.len());
    let mut owners = input.owners.to_vec();
    let (tenants, after) = match input.weights {
        Weights::Count => {
            balance_counts(&mut owners, &roles, &receivers);
            place_pins(input, &roles, &receivers, loads(input, &owners, roles.len()))
        }
        Weights::Bytes(bytes) => {
            let mut load = before.clone();
            let mut moved = vec![false; owners.len()];
            evacuate(&mut owners, bytes, &mut load, &mut moved, &roles, &receivers);
            let (tenants, load) = place_pins(input, &roles, &receivers, load);
            (tenants, balance_bytes(&mut owners, bytes, load, &moved, &receivers))
        }
    };
    let vshards = input
        .owners
        .iter()
        .zip(&owners)
        .enumerate()
        .filter(|(_, (from, to))| from != to)
        .map(|(v, (&from, &to))| VshardMove { vshard: vshard_number(v), from, to })
        .collect();
    Ok(Plan { balance: input.weights.balance(), vshards, tenants, before, after })
}

/// The role of each shard index (`None`: not listed), after checking that the input is
/// consistent.
fn roles_by_index(input: &PlanInput<'_>) -> Result<Vec<Option<ShardRole>>, PlanError> {
    u32::try_from(input.owners.len()).map_err(|_| PlanError::TooManyVshards(input.owners.len()))?;
    let len = input.shards.iter().map(|s| usize::from(s.index) + 1).max().unwrap_or(0);
    let mut roles = vec![None; len];
    for shard in input.shards {
        let slot = &mut roles[usize::from(shard.index)];
        if slot.is_some() {
            return Err(PlanError::DuplicateShard(shard.index));
        }
        *slot = Some(shard.role);
    }
    let listed = |index: ShardIndex| roles.get(usize::from(index)).is_some_and(Option::is_some);
    if let Some((v, &shard)) = input.owners.iter().enumerate().find(|(_, s)| !listed(**s)) {
        return Err(PlanError::UnlistedOwner { vshard: vshard_number(v), shard });
    }
    if let Some(pin) = input.pinned.iter().find(|p| !listed(p.shard)) {
        return Err(PlanError::UnlistedPin { tenant: pin.tenant.clone(), shard: pin.shard });
    }
    if let Weights::Bytes(bytes) = input.weights {
        if bytes.len() != input.owners.len() {
            return Err(PlanError::WeightCount { owners: input.owners.len(), weights: bytes.len() });
        }
        let pins = input.pinned.iter().map(|p| p.bytes);
        bytes.iter().copied().chain(pins).try_fold(0u64, u64::checked_add).ok_or(PlanError::LoadOverflow)?;
    }
    Ok(roles)
}

/// The shard indexes with `role`, ascending.
fn shards_with(roles: &[Option<ShardRole>], role: ShardRole) -> Vec<ShardIndex> {
    (0..roles.len()).filter(|&i| roles[i] == Some(role)).map(shard_index).collect()
}

/// Fails when draining shards hold something and nobody can take it.
fn require_receiver(
    input: &PlanInput<'_>,
    roles: &[Option<ShardRole>],
    receivers: &[ShardIndex],
) -> Result<(), PlanError> {
    if !receivers.is_empty() {
        return Ok(());
    }
    let drains = |index: ShardIndex| roles[usize::from(index)] == Some(ShardRole::Drains);
    let vshards = input.owners.iter().filter(|&&s| drains(s)).count();
    let tenants = input.pinned.iter().filter(|p| drains(p.shard)).count();
    if vshards == 0 && tenants == 0 {
        return Ok(());
    }
    Err(PlanError::NoReceivingShard { vshards, tenants })
}

/// The load of shard indexes `0..len` for the vshard table `owners`, pins where they are now:
/// vshard counts by count, bytes of vshards and pins by bytes. The input was checked not to
/// overflow.
fn loads(input: &PlanInput<'_>, owners: &[ShardIndex], len: usize) -> Vec<u64> {
    let mut load = vec![0u64; len];
    match input.weights {
        Weights::Count => owners.iter().for_each(|&s| load[usize::from(s)] += 1),
        Weights::Bytes(bytes) => {
            owners.iter().zip(bytes).for_each(|(&s, &b)| load[usize::from(s)] += b);
            input.pinned.iter().for_each(|p| load[usize::from(p.shard)] += p.bytes);
        }
    }
    load
}

/// Balancing by count: moves the fewest vshards that leave every draining shard empty and every
/// receiving shard with `⌊T/R⌋` or `⌈T/R⌉` vshards.
fn balance_counts(owners: &mut [ShardIndex], roles: &[Option<ShardRole>], receivers: &[ShardIndex]) {
    if receivers.is_empty() {
        return;
    }
    let mut owned: Vec<Vec<u32>> = vec![Vec::new(); roles.len()];
    for (v, &s) in owners.iter().enumerate() {
        owned[usize::from(s)].push(vshard_number(v));
    }
    let targets = count_targets(&owned, roles, receivers);
    let mut given: Vec<u32> = Vec::new();
    for (i, vshards) in owned.iter().enumerate() {
        let keep = match roles[i] {
            Some(ShardRole::Drains) => 0,
            Some(ShardRole::Receives) => targets[i].min(vshards.len()),
            Some(ShardRole::Keeps) | None => vshards.len(),
        };
        given.extend_from_slice(&vshards[keep..]);
    }
    given.sort_unstable();
    let mut given = given.into_iter();
    for &r in receivers {
        let short = targets[usize::from(r)].saturating_sub(owned[usize::from(r)].len());
        for v in given.by_ref().take(short) {
            owners[v as usize] = r;
        }
    }
}

/// The vshard count each receiving shard ends with (indexed by shard index; 0 elsewhere): the
/// larger targets go to the shards that own the most, so that the fewest vshards move.
fn count_targets(owned: &[Vec<u32>], roles: &[Option<ShardRole>], receivers: &[ShardIndex]) -> Vec<usize> {
    let total: usize = (0..roles.len())
        .filter(|&i| matches!(roles[i], Some(ShardRole::Receives | ShardRole::Drains)))
        .map(|i| owned[i].len())
        .sum();
    let (floor, larger) = (total / receivers.len(), total % receivers.len());
    let mut by_size = receivers.to_vec();
    by_size.sort_by_key(|&r| (Reverse(owned[usize::from(r)].len()), r));
    let mut targets = vec![0; roles.len()];
    for (rank, &r) in by_size.iter().enumerate() {
        targets[usize::from(r)] = floor + usize::from(rank < larger);
    }
    targets
}

/// Balancing by bytes, step 1: every vshard of a draining shard goes, heaviest first, to the
/// least loaded receiving shard.
fn evacuate(
    owners: &mut [ShardIndex],
    bytes: &[u64],
    load: &mut [u64],
    moved: &mut [bool],
    roles: &[Option<ShardRole>],
    receivers: &[ShardIndex],
) {
    let mut leaving: Vec<usize> =
        (0..owners.len()).filter(|&v| roles[usize::from(owners[v])] == Some(ShardRole::Drains)).collect();
    leaving.sort_by_key(|&v| (Reverse(bytes[v]), v));
    for v in leaving {
        let Some(to) = least_loaded(receivers, load, |_| 0) else { return };
        load[usize::from(owners[v])] -= bytes[v];
        load[usize::from(to)] += bytes[v];
        owners[v] = to;
        moved[v] = true;
    }
}

/// Moves the tenants pinned to draining shards to the receiving shard with the lowest
/// `(load, pins held, index)`, and returns the moves (in tenant id order) and the loads after
/// them. `load` is in the plan's unit; a pin adds its bytes by bytes and nothing by count.
fn place_pins(
    input: &PlanInput<'_>,
    roles: &[Option<ShardRole>],
    receivers: &[ShardIndex],
    mut load: Vec<u64>,
) -> (Vec<TenantMove>, Vec<u64>) {
    let mut held = vec![0usize; roles.len()];
    input.pinned.iter().for_each(|p| held[usize::from(p.shard)] += 1);
    let weight = |pin: &PinnedTenant| match input.weights {
        Weights::Count => 0,
        Weights::Bytes(_) => pin.bytes,
    };
    let mut leaving: Vec<&PinnedTenant> =
        input.pinned.iter().filter(|p| roles[usize::from(p.shard)] == Some(ShardRole::Drains)).collect();
    leaving.sort_by(|a, b| weight(b).cmp(&weight(a)).then_with(|| a.tenant.cmp(&b.tenant)));
    let mut moves = Vec::with_capacity(leaving.len());
    for pin in leaving {
        let Some(to) = least_loaded(receivers, &load, |s| held[usize::from(s)]) else { break };
        load[usize::from(pin.shard)] -= weight(pin);
        load[usize::from(to)] += weight(pin);
        held[usize::from(to)] += 1;
        moves.push(TenantMove { tenant: pin.tenant.clone(), from: pin.shard, to });
    }
    moves.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    (moves, load)
}

/// Balancing by bytes, step 3: the greedy described in the module documentation; returns the
/// loads after it. Vshards marked in `moved` (and those received here) do not move again.
fn balance_bytes(
    owners: &mut [ShardIndex],
    bytes: &[u64],
    mut load: Vec<u64>,
    moved: &[bool],
    receivers: &[ShardIndex],
) -> Vec<u64> {
    let mut movable: Vec<BTreeSet<(u64, u32)>> = vec![BTreeSet::new(); load.len()];
    for &r in receivers {
        let mine = (0..owners.len()).filter(|&v| owners[v] == r && !moved[v]);
        movable[usize::from(r)] = mine.map(|v| (bytes[v], vshard_number(v))).collect();
    }
    let total: u64 = receivers.iter().map(|&r| load[usize::from(r)]).sum();
    let mut donors = receivers.to_vec();
    while let Some(to) = least_loaded(receivers, &load, |_| 0) {
        donors.sort_by_key(|&s| (Reverse(load[usize::from(s)]), s));
        let pick = donors.iter().find_map(|&from| {
            let gap = Gap::new(load[usize::from(from)], load[usize::from(to)], total, receivers.len());
            gap.best(&movable[usize::from(from)]).map(|vshard| (from, vshard))
        });
        let Some((from, (weight, v))) = pick else { break };
        movable[usize::from(from)].remove(&(weight, v));
        load[usize::from(from)] -= weight;
        load[usize::from(to)] += weight;
        owners[v as usize] = to;
    }
    load
}

/// The gap between a donor and the least loaded receiving shard, and the vshard weight that
/// would best close it. Weights are compared scaled by `2R` so the mean stays an integer.
#[derive(Debug, Clone, Copy)]
struct Gap {
    /// `donor − least`: a move must weigh strictly less than this (and more than 0).
    gap: u64,
    /// The ideal weight times `2R`.
    ideal_scaled: u128,
    /// `2R`.
    scale: u128,
}

impl Gap {
    /// The gap from a donor with load `donor` to the least loaded shard (`least`), among `r`
    /// receiving shards that hold `total` together.
    fn new(donor: u64, least: u64, total: u64, r: usize) -> Self {
        let r = r as u128;
        let (donor_r, least_r, total) = (u128::from(donor) * r, u128::from(least) * r, u128::from(total));
        let gap = donor.saturating_sub(least);
        let ideal_scaled = if donor_r > total {
            // Land whichever of the two is nearer the mean exactly on it.
            2 * (donor_r - total).min(total.saturating_sub(least_r))
        } else {
            // Both are at or below the mean: even them out.
            u128::from(gap) * r
        };
        Self { gap, ideal_scaled, scale: 2 * r }
    }

    /// The vshard `(weight, number)` in `movable` that best closes the gap, if one weighs
    /// strictly between 0 and the gap: nearest to the ideal weight, then lighter, then the
    /// higher vshard number.
    fn best(self, movable: &BTreeSet<(u64, u32)>) -> Option<(u64, u32)> {
        if self.gap < 2 {
            return None;
        }
        let cap = self.gap - 1;
        // The ideal weight is at most half the gap, so its floor fits in a u64.
        let floor = u64::try_from(self.ideal_scaled / self.scale).unwrap_or(u64::MAX).min(cap);
        let below = (floor >= 1).then(|| movable.range((1, 0)..=(floor, u32::MAX)).next_back()).flatten();
        let above = (floor < cap)
            .then(|| movable.range((floor + 1, 0)..=(cap, u32::MAX)).next())
            .flatten()
            .and_then(|&(w, _)| movable.range((w, 0)..=(w, u32::MAX)).next_back());
        let distance = |w: u64| (u128::from(w) * self.scale).abs_diff(self.ideal_scaled);
        match (below, above) {
            (Some(&b), Some(&a)) => Some(if distance(a.0) < distance(b.0) { a } else { b }),
            (b, a) => b.or(a).copied(),
        }
    }
}

/// The receiving shard with the lowest `(load, tie(shard), index)`, if any.
fn least_loaded(receivers: &[ShardIndex], load: &[u64], tie: impl Fn(ShardIndex) -> usize) -> Option<ShardIndex> {
    receivers.iter().copied().min_by_key(|&s| (load[usize::from(s)], tie(s), s))
}

/// A vshard position as its number: positions were checked to fit a `u32`.
fn vshard_number(position: usize) -> u32 {
    u32::try_from(position).expect("the vshard table was checked to have at most u32::MAX entries")
}

/// A position in the role table as a shard index: the table is indexed by `ShardIndex` values.
fn shard_index(position: usize) -> ShardIndex {
    ShardIndex::try_from(position).expect("the role table has one entry per ShardIndex value at most")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::map::spread_vshards;

    use ShardRole::{Drains, Keeps, Receives};

    fn listed(roles: &[ShardRole]) -> Vec<PlanShard> {
        roles.iter().enumerate().map(|(i, &role)| PlanShard { index: i as ShardIndex, role }).collect()
    }

    fn pinned(tenant: &str, shard: ShardIndex, bytes: u64) -> PinnedTenant {
        PinnedTenant { tenant: TenantKey::from(tenant), shard, bytes }
    }

    fn role_of(input: &PlanInput<'_>, shard: ShardIndex) -> ShardRole {
        input.shards.iter().find(|s| s.index == shard).expect("listed").role
    }

    /// The vshard table after the plan, checking each move against the input on the way.
    fn owners_after(input: &PlanInput<'_>, plan: &Plan) -> Vec<ShardIndex> {
        let mut owners = input.owners.to_vec();
        let mut previous = None;
        for m in &plan.vshards {
            assert!(previous < Some(m.vshard), "moves are in vshard order, each vshard once: {m:?}");
            previous = Some(m.vshard);
            assert_eq!(input.owners[m.vshard as usize], m.from, "{m:?} starts at the vshard's owner");
            assert_ne!(m.from, m.to, "{m:?} moves somewhere");
            assert_eq!(role_of(input, m.to), Receives, "{m:?} goes to a receiving shard");
            assert_ne!(role_of(input, m.from), Keeps, "{m:?} takes from a keeping shard");
            owners[m.vshard as usize] = m.to;
        }
        owners
    }

    /// The loads recomputed from scratch, pins moved as `moves` say.
    fn loads_of(input: &PlanInput<'_>, owners: &[ShardIndex], moves: &[TenantMove]) -> Vec<u64> {
        let len = input.shards.iter().map(|s| usize::from(s.index) + 1).max().unwrap_or(0);
        let mut load = vec![0u64; len];
        for (v, &s) in owners.iter().enumerate() {
            load[usize::from(s)] += match input.weights {
                Weights::Count => 1,
                Weights::Bytes(bytes) => bytes[v],
            };
        }
        if let Weights::Bytes(_) = input.weights {
            for pin in input.pinned {
                let moved = moves.iter().find(|m| m.tenant == pin.tenant);
                load[usize::from(moved.map_or(pin.shard, |m| m.to))] += pin.bytes;
            }
        }
        load
    }

    fn receivers_of(input: &PlanInput<'_>) -> Vec<ShardIndex> {
        let mut receivers: Vec<ShardIndex> =
            input.shards.iter().filter(|s| s.role == Receives).map(|s| s.index).collect();
        receivers.sort_unstable();
        receivers
    }

    /// The fewest vshard moves that can balance by count, computed from the counts alone.
    fn fewest_count_moves(input: &PlanInput<'_>) -> usize {
        let count = |s: ShardIndex| input.owners.iter().filter(|&&o| o == s).count();
        let receivers: Vec<usize> = receivers_of(input).into_iter().map(count).collect();
        let drained: usize = input.shards.iter().filter(|s| s.role == Drains).map(|s| count(s.index)).sum();
        if receivers.is_empty() {
            return 0;
        }
        let total = receivers.iter().sum::<usize>() + drained;
        let (floor, larger) = (total / receivers.len(), total % receivers.len());
        let excess: usize = if larger == 0 {
            receivers.iter().map(|&c| c.saturating_sub(floor)).sum()
        } else {
            let over: Vec<usize> = receivers.iter().copied().filter(|&c| c > floor).collect();
            over.iter().map(|c| c - floor - 1).sum::<usize>() + over.len().saturating_sub(larger)
        };
        drained + excess
    }

    /// Everything every plan must satisfy, whatever the input; returns the vshard table after it.
    fn check_plan(input: &PlanInput<'_>, plan: &Plan) -> Vec<ShardIndex> {
        let owners = owners_after(input, plan);
        for (v, &s) in owners.iter().enumerate() {
            match role_of(input, s) {
                Receives => {}
                Keeps => assert_eq!(input.owners[v], s, "vshard {v} reached a keeping shard"),
                Drains => panic!("vshard {v} stays on draining shard {s}"),
            }
        }
        let leaving: BTreeMap<&str, ShardIndex> = input
            .pinned
            .iter()
            .filter(|p| role_of(input, p.shard) == Drains)
            .map(|p| (p.tenant.as_str(), p.shard))
            .collect();
        let moved: BTreeMap<&str, ShardIndex> = plan.tenants.iter().map(|m| (m.tenant.as_str(), m.from)).collect();
        assert_eq!(moved, leaving, "exactly the tenants pinned to draining shards move");
        assert!(plan.tenants.windows(2).all(|w| w[0].tenant < w[1].tenant), "tenant moves in id order");
        assert!(plan.tenants.iter().all(|m| role_of(input, m.to) == Receives), "{:?}", plan.tenants);
        assert_eq!(plan.balance, input.weights.balance());
        assert_eq!(plan.before, loads_of(input, input.owners, &[]));
        assert_eq!(plan.after, loads_of(input, &owners, &plan.tenants));
        owners
    }

    /// By count: every receiving shard within one of the others, and no more moves than needed.
    fn check_count_plan(input: &PlanInput<'_>, plan: &Plan) {
        let receivers = receivers_of(input);
        let ends: Vec<u64> = receivers.iter().map(|&r| plan.after[usize::from(r)]).collect();
        if let (Some(min), Some(max)) = (ends.iter().min(), ends.iter().max()) {
            assert!(max - min <= 1, "receiving shards end with {ends:?}");
        }
        assert_eq!(plan.vshards.len(), fewest_count_moves(input), "{plan:?}");
    }

    /// By bytes: the bound the module documents.
    fn check_bytes_bound(input: &PlanInput<'_>, plan: &Plan, owners: &[ShardIndex]) {
        let Weights::Bytes(bytes) = input.weights else { panic!("bytes only") };
        let receivers = receivers_of(input);
        let Some(least) = receivers.iter().map(|&r| plan.after[usize::from(r)]).min() else { return };
        for v in 0..owners.len() {
            let s = owners[v];
            if input.owners[v] == s && role_of(input, s) == Receives {
                let gap = plan.after[usize::from(s)] - least;
                assert!(
                    bytes[v] == 0 || bytes[v] >= gap,
                    "vshard {v} ({} bytes) could still close a gap of {gap}",
                    bytes[v]
                );
            }
        }
    }

    /// `R·load − total` at its largest over the receiving shards: the largest deviation from the
    /// mean, times `R`.
    fn deviation(loads: &[u64], receivers: &[ShardIndex]) -> u128 {
        let r = receivers.len() as u128;
        let total: u128 = receivers.iter().map(|&s| u128::from(loads[usize::from(s)])).sum();
        receivers.iter().map(|&s| (u128::from(loads[usize::from(s)]) * r).abs_diff(total)).max().unwrap_or(0)
    }

    #[test]
    fn a_fifth_shard_takes_its_share_and_nothing_else_moves() {
        let mut owners = spread_vshards(1024, 4);
        let shards = listed(&[Receives; 5]);
        let input = PlanInput { owners: &owners, weights: Weights::Count, shards: &shards, pinned: &[] };
        let plan = plan(&input).unwrap();
        check_plan(&input, &plan);
        check_count_plan(&input, &plan);
        assert_eq!(plan.before, vec![256, 256, 256, 256, 0]);
        assert_eq!(plan.after, vec![205, 205, 205, 205, 204]);
        assert_eq!(plan.vshards.len(), 204, "exactly what the new shard needs");
        assert!(plan.vshards.iter().all(|m| m.to == 4), "only the new shard takes");
        assert!(plan.tenants.is_empty());
        // Each donor gives the end of its run and keeps a single run.
        for m in &plan.vshards {
            owners[m.vshard as usize] = m.to;
        }
        let map = crate::map::MapSnapshot { vshards: owners, ..crate::map::MapSnapshot::empty(1024) };
        let kept: Vec<(u32, u32, ShardIndex)> = map.vshard_runs().into_iter().filter(|r| r.2 != 4).collect();
        assert_eq!(kept, vec![(0, 204, 0), (256, 460, 1), (512, 716, 2), (768, 972, 3)]);
    }

    #[test]
    fn a_draining_shard_is_emptied_and_its_pins_go_to_the_least_loaded() {
        let owners = spread_vshards(1024, 4);
        let shards = listed(&[Receives, Drains, Receives, Receives]);
        let pins = [pinned("globex", 1, 0), pinned("acme", 1, 0), pinned("initech", 2, 0), pinned("hooli", 0, 0)];
        let input = PlanInput { owners: &owners, weights: Weights::Count, shards: &shards, pinned: &pins };
        let plan = plan(&input).unwrap();
        check_plan(&input, &plan);
        check_count_plan(&input, &plan);
        assert_eq!(plan.vshards.len(), 256, "only the draining shard's vshards move");
        assert!(plan.vshards.iter().all(|m| m.from == 1));
        assert_eq!(plan.after, vec![342, 0, 341, 341]);
        // Both shards with the fewest vshards hold one pin at the start (initech on 2, none on
        // 3): acme (first by id) goes to 3, then globex to 2 (equal pins, lower index).
        let moves: Vec<(&str, ShardIndex, ShardIndex)> =
            plan.tenants.iter().map(|m| (m.tenant.as_str(), m.from, m.to)).collect();
        assert_eq!(moves, vec![("acme", 1, 3), ("globex", 1, 2)]);
        // The vshards go in contiguous pieces, the first next to shard 0's run.
        let runs: Vec<(u32, u32, ShardIndex)> = plan.vshards.iter().fold(Vec::new(), |mut runs, m| {
            match runs.last_mut() {
                Some((_, last, to)) if *to == m.to && *last + 1 == m.vshard => *last = m.vshard,
                _ => runs.push((m.vshard, m.vshard, m.to)),
            }
            runs
        });
        assert_eq!(runs, vec![(256, 341, 0), (342, 426, 2), (427, 511, 3)]);
    }

    #[test]
    fn a_keeping_shard_neither_gives_nor_takes() {
        let owners = spread_vshards(1024, 4);
        let shards = listed(&[Receives, Receives, Receives, Keeps, Receives]);
        let input = PlanInput { owners: &owners, weights: Weights::Count, shards: &shards, pinned: &[] };
        let plan = plan(&input).unwrap();
        check_plan(&input, &plan);
        check_count_plan(&input, &plan);
        assert_eq!(plan.after, vec![192, 192, 192, 256, 192]);
    }

    #[test]
    fn a_balanced_map_gives_an_empty_plan() {
        let owners = spread_vshards(1024, 3);
        let bytes = vec![4096; 1024];
        let shards = listed(&[Receives, Receives, Receives, Keeps]);
        let pins = [pinned("acme", 3, 1 << 30)];
        for weights in [Weights::Count, Weights::Bytes(&bytes)] {
            let input = PlanInput { owners: &owners, weights, shards: &shards, pinned: &pins };
            let plan = plan(&input).unwrap();
            assert!(plan.is_empty(), "{plan:?}");
            assert_eq!(plan.before, plan.after);
        }
    }

    #[test]
    fn skewed_bytes_even_out_without_moving_a_vshard_twice() {
        let owners = spread_vshards(256, 4);
        let bytes: Vec<u64> =
            (0..256u64).map(|v| if v < 64 { 10_000 + v * 97 } else { 500 + (v * 31) % 700 }).collect();
        let shards = listed(&[Receives; 4]);
        let input = PlanInput { owners: &owners, weights: Weights::Bytes(&bytes), shards: &shards, pinned: &[] };
        let plan = plan(&input).unwrap();
        let after = check_plan(&input, &plan);
        check_bytes_bound(&input, &plan, &after);
        let receivers = [0, 1, 2, 3];
        let (before, after) = (deviation(&plan.before, &receivers), deviation(&plan.after, &receivers));
        assert!(after * 20 < before, "deviation ×4 went from {before} to only {after}: {:?}", plan.after);
        // Shard 0 holds 835,552 of 1,000,164 bytes: it must shed 585,511, at least 37 of its
        // heaviest vshards (16,111 at most); the rest of the moves fine-tune.
        let shed = plan.before[0] - plan.before.iter().sum::<u64>() / 4;
        let fewest = shed.div_ceil(*bytes.iter().max().unwrap()) as usize;
        assert_eq!(fewest, 37);
        assert!(plan.vshards.len() <= fewest + fewest / 4, "{} moves", plan.vshards.len());
        let spread = plan.after.iter().max().unwrap() - plan.after.iter().min().unwrap();
        assert!(spread < 1_000, "loads after: {:?}", plan.after);
    }

    #[test]
    fn a_heavy_pin_from_a_draining_shard_is_compensated_by_vshards() {
        let owners = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2];
        let bytes = [100; 22];
        let shards = listed(&[Receives, Receives, Drains]);
        let pins = [pinned("acme", 2, 1000), pinned("hooli", 1, 0)];
        let input = PlanInput { owners: &owners, weights: Weights::Bytes(&bytes), shards: &shards, pinned: &pins };
        let plan = plan(&input).unwrap();
        let after = check_plan(&input, &plan);
        check_bytes_bound(&input, &plan, &after);
        assert_eq!(plan.before, vec![1000, 1000, 1200]);
        // The two vshards go one each way (1100, 1100), the pin to shard 0 (fewer pins held),
        // then shard 0 gives five vshards to shard 1.
        assert_eq!(plan.tenants, vec![TenantMove { tenant: "acme".into(), from: 2, to: 0 }]);
        assert_eq!(plan.after, vec![1600, 1600, 0]);
        assert_eq!(plan.vshards.len(), 7);
    }

    #[test]
    fn the_same_input_in_any_order_gives_the_same_plan() {
        let owners = spread_vshards(1024, 5);
        let bytes: Vec<u64> = (0..1024u64).map(|v| (v * 7919) % 10_007).collect();
        let shards = listed(&[Receives, Drains, Receives, Keeps, Receives, Receives]);
        let pins = [pinned("b", 1, 50_000), pinned("a", 1, 50_000), pinned("c", 1, 7), pinned("d", 3, 9)];
        let mut shuffled_shards = shards.clone();
        shuffled_shards.reverse();
        let mut shuffled_pins = pins.to_vec();
        shuffled_pins.rotate_left(1);
        for weights in [Weights::Count, Weights::Bytes(&bytes)] {
            let input = PlanInput { owners: &owners, weights, shards: &shards, pinned: &pins };
            let first = plan(&input).unwrap();
            assert_eq!(plan(&input).unwrap(), first);
            let shuffled = PlanInput { shards: &shuffled_shards, pinned: &shuffled_pins, ..input };
            assert_eq!(plan(&shuffled).unwrap(), first);
        }
    }

    #[test]
    fn inconsistent_inputs_are_refused() {
        let owners = [0, 0, 1, 1];
        let shards = listed(&[Keeps, Drains]);
        let pins = [pinned("acme", 1, 0)];
        let input = PlanInput { owners: &owners, weights: Weights::Count, shards: &shards, pinned: &pins };
        assert_eq!(plan(&input), Err(PlanError::NoReceivingShard { vshards: 2, tenants: 1 }));
        let empty_drain = PlanInput { owners: &[0, 0], pinned: &[], ..input };
        assert!(plan(&empty_drain).unwrap().is_empty(), "nothing to move needs no receiver");
        let short = PlanInput { weights: Weights::Bytes(&[1, 2, 3]), ..input };
        assert_eq!(plan(&short), Err(PlanError::WeightCount { owners: 4, weights: 3 }));
        let stranger = PlanInput { owners: &[0, 2], ..input };
        assert_eq!(plan(&stranger), Err(PlanError::UnlistedOwner { vshard: 1, shard: 2 }));
        let twice = [PlanShard { index: 0, role: Receives }, PlanShard { index: 0, role: Keeps }];
        assert_eq!(plan(&PlanInput { shards: &twice, ..input }), Err(PlanError::DuplicateShard(0)));
        let lost_pin = [pinned("acme", 7, 0)];
        assert_eq!(
            plan(&PlanInput { pinned: &lost_pin, ..input }),
            Err(PlanError::UnlistedPin { tenant: "acme".into(), shard: 7 })
        );
        let huge = [u64::MAX, 1, 0, 0];
        assert_eq!(plan(&PlanInput { weights: Weights::Bytes(&huge), ..input }), Err(PlanError::LoadOverflow));
    }

    /// xorshift64: deterministic, dependency-free randomness for the property test.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn shuffle<T>(&mut self, items: &mut [T]) {
            for i in (1..items.len()).rev() {
                items.swap(i, self.below(i as u64 + 1) as usize);
            }
        }
    }

    /// A random input: up to 7 shards at scattered indexes with random roles, up to 300 vshards
    /// spread randomly or in runs, weights uniform, skewed by owner, sparse or huge, a few pins.
    fn random_input(rng: &mut XorShift) -> (Vec<ShardIndex>, Vec<u64>, Vec<PlanShard>, Vec<PinnedTenant>) {
        let mut indexes: Vec<ShardIndex> = (0..10).collect();
        rng.shuffle(&mut indexes);
        indexes.truncate(1 + rng.below(7) as usize);
        let shards: Vec<PlanShard> = indexes
            .iter()
            .map(|&index| {
                let role = match rng.below(10) {
                    0..6 => Receives,
                    6..8 => Drains,
                    _ => Keeps,
                };
                PlanShard { index, role }
            })
            .collect();
        let vshards = rng.below(301) as usize;
        let in_runs = rng.below(2) == 0;
        let owners: Vec<ShardIndex> = (0..vshards)
            .map(|v| {
                if in_runs {
                    indexes[v * indexes.len() / vshards]
                } else {
                    indexes[rng.below(indexes.len() as u64) as usize]
                }
            })
            .collect();
        let style = rng.below(4);
        let bytes: Vec<u64> = owners
            .iter()
            .map(|&s| match style {
                0 => 1 + rng.below(100),
                1 => (1 + u64::from(s) * 10) * (50 + rng.below(50)),
                2 => rng.below(4).saturating_sub(2) * rng.below(1000),
                _ => rng.below(1 << 40),
            })
            .collect();
        let pins = (0..rng.below(6))
            .map(|i| pinned(&format!("t{i}"), indexes[rng.below(indexes.len() as u64) as usize], rng.below(20_000)))
            .collect();
        (owners, bytes, shards, pins)
    }

    #[test]
    fn random_inputs_give_valid_minimal_deterministic_plans() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for round in 0..3000 {
            let (owners, bytes, mut shards, mut pins) = random_input(&mut rng);
            for weights in [Weights::Count, Weights::Bytes(&bytes)] {
                let input = PlanInput { owners: &owners, weights, shards: &shards, pinned: &pins };
                let must_leave = owners.iter().any(|&s| role_of(&input, s) == Drains)
                    || pins.iter().any(|p| role_of(&input, p.shard) == Drains);
                let plan = match plan(&input) {
                    Err(PlanError::NoReceivingShard { .. }) if receivers_of(&input).is_empty() && must_leave => {
                        continue;
                    }
                    other => other.unwrap_or_else(|e| panic!("round {round}: {e} for {input:?}")),
                };
                let after = check_plan(&input, &plan);
                match weights {
                    Weights::Count => check_count_plan(&input, &plan),
                    Weights::Bytes(_) => {
                        check_bytes_bound(&input, &plan, &after);
                        if !shards.iter().any(|s| s.role == Drains) {
                            let receivers = receivers_of(&input);
                            let ends = |loads: &[u64]| {
                                let of_receivers = receivers.iter().map(|&r| loads[usize::from(r)]);
                                (of_receivers.clone().min(), of_receivers.max())
                            };
                            let ((min_before, max_before), (min_after, max_after)) =
                                (ends(&plan.before), ends(&plan.after));
                            assert!(max_after <= max_before && min_after >= min_before, "round {round}: {plan:?}");
                        }
                    }
                }
            }
            // The same input, listed in another order, gives the same plans.
            let before: Vec<Plan> = [Weights::Count, Weights::Bytes(&bytes)]
                .into_iter()
                .filter_map(|weights| {
                    plan(&PlanInput { owners: &owners, weights, shards: &shards, pinned: &pins }).ok()
                })
                .collect();
            rng.shuffle(&mut shards);
            rng.shuffle(&mut pins);
            let after: Vec<Plan> = [Weights::Count, Weights::Bytes(&bytes)]
                .into_iter()
                .filter_map(|weights| {
                    plan(&PlanInput { owners: &owners, weights, shards: &shards, pinned: &pins }).ok()
                })
                .collect();
            assert_eq!(before, after, "round {round}");
        }
    }
}
