//! Quotas enforced before a write, across instances: a write that would grow a tenant's usage
//! past a quota is refused before it changes anything; one that shrinks it always passes.
//!
//! A tenant's usage is kept by the shards (summed over the fleet in [`super::fleet_usage`]), but
//! reading it on every write would cost a fan-out per request, and two instances reading it at
//! once would both let the last free record through. So each instance spends an **allowance**:
//! before a write that grows a limited part, the instance takes the write's worst-case growth
//! (a new record, its whole value's bytes, one entry per index) from what it holds for the
//! tenant; only when that does not cover it does it **decide** a new allowance, holding the
//! tenant's turn in the catalog ([`crate::catalog::Catalog::decide_quota_grant`]):
//!
//! - what is free = the quota − the usage read from every shard now − every other instance's live
//!   allowance − what this instance has let through that is still being written;
//! - the write's growth must fit what is free, or it is refused with 409 `quota_exceeded`
//!   (naming the quota, its limit, what is taken and what the write asked for);
//! - the new allowance is the write's growth plus a quarter of what is left free, so far from the
//!   limit an instance decides rarely, and near it every instance gets a share of what remains.
//!
//! Everything an allowance lets through is counted twice until the next decision (in the
//! allowance, and in the usage once written): instances together never let through more than the
//! quota, so concurrent writers on any number of instances do not overshoot it, as long as an
//! instance's writes finish within its allowance's life ([`ALLOWANCE_LIFE`]; a write still in
//! flight when its instance's allowance lapses, because its instance decided no new one, is not
//! counted by other instances' decisions: statement deadlines are far shorter).
//!
//! An allowance is reserved at the worst case; what a write did not use of it (an update of a
//! record that existed: no new record) is given back to the instance's allowance. A refusal is
//! remembered for [`REFUSAL_MEMORY`] (writes that would not fit are refused without a decision)
//! or until this instance sees the tenant shrink.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::router::ShardRouter;
use crate::storage::usage::Usage;
use crate::usage::quotas::{QuotaKind, Quotas};

/// How long an allowance lives: other instances count it this long (and [`CLOCK_SKEW_MS`] more)
/// unless its instance decides a new one or stops.
///
/// [`CLOCK_SKEW_MS`]: crate::catalog::quota_grants::CLOCK_SKEW_MS
pub const ALLOWANCE_LIFE: Duration = Duration::from_secs(30);

/// How long a refusal is remembered.
pub const REFUSAL_MEMORY: Duration = Duration::from_millis(500);

/// The part of an allowance a decision hands out beyond the write's own growth: what is left free,
/// divided by this.
const SHARE: u64 = 4;

/// Spends and decides this instance's allowances.
#[derive(Debug)]
pub struct QuotaGate {
    router: Arc<ShardRouter>,
    instance: String,
    tenants: Mutex<HashMap<TenantId, Arc<Allowance>>>,
}

/// This instance's allowance for one tenant.
#[derive(Debug, Default)]
struct Allowance {
    state: Mutex<State>,
    /// Held while deciding: one decision per tenant at a time on this instance.
    deciding: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    /// What may still be let through without a decision.
    left: Usage,
    /// What was let through and is still being written.
    in_flight: Usage,
    /// When `left` lapses.
    until: Option<Instant>,
    /// The quotas `left` and `refused` were decided under: when the tenant's change, both are
    /// decided again.
    quotas: Quotas,
    /// The last refusal, while it is remembered: when it lapses, and what counted against the
    /// quotas then.
    refused: Option<(Instant, Usage)>,
    /// Each shard's part of the tenant's usage when it was last read: stands in for a shard that
    /// does not answer.
    known: HashMap<ShardId, Usage>,
}

/// A write let through: holds its growth as in flight until dropped (the write finished, written
/// or not).
#[derive(Debug)]
#[must_use = "the growth is in flight until the admission is dropped"]
pub struct Admission {
    allowance: Option<Arc<Allowance>>,
    growth: Usage,
}

impl Admission {
    /// An admission that holds nothing (no quota applies).
    pub fn unlimited() -> Self {
        Admission { allowance: None, growth: Usage::default() }
    }

    /// Gives `part` of the reserved growth back to the allowance: the write did not add it (it
    /// failed, or replaced what existed).
    pub fn give_back(&mut self, part: Usage) {
        let Some(allowance) = &self.allowance else { return };
        let part = part.capped(&self.growth);
        let mut state = allowance.state.lock();
        state.left.add(&part);
        state.in_flight = state.in_flight.less(&part);
        self.growth = self.growth.less(&part);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some(allowance) = &self.allowance {
            let mut state = allowance.state.lock();
            state.in_flight = state.in_flight.less(&self.growth);
        }
    }
}

/// `growth` without the parts `quotas` does not limit.
fn limited(quotas: &Quotas, growth: Usage) -> Usage {
    let keep = |kind: QuotaKind, amount: u64| if quotas.limit(kind).is_some() { amount } else { 0 };
    Usage {
        records: keep(QuotaKind::Records, growth.records),
        record_bytes: keep(QuotaKind::RecordBytes, growth.record_bytes),
        blobs: keep(QuotaKind::Blobs, growth.blobs),
        blob_bytes: keep(QuotaKind::BlobBytes, growth.blob_bytes),
        index_entries: keep(QuotaKind::IndexEntries, growth.index_entries),
    }
}

impl QuotaGate {
    /// A gate deciding allowances on `router`'s catalog as `instance` (its name in the registry).
    pub fn new(router: Arc<ShardRouter>, instance: String) -> Self {
        QuotaGate { router, instance, tenants: Mutex::new(HashMap::new()) }
    }

    /// Lets a write of `tenant` that may add `growth` through, or refuses it
    /// ([`Error::QuotaExceeded`]; [`Error::UsageUnknown`] when a shard's part of the usage
    /// cannot be read for a decision). Growth of parts `quotas` does not limit is not counted.
    pub async fn admit(&self, tenant: &TenantId, quotas: &Quotas, growth: Usage) -> Result<Admission, Error> {
        let growth = limited(quotas, growth);
        if growth.is_empty() {
            return Ok(Admission::unlimited());
        }
        let allowance = self.allowance(tenant);
        if let Some(admitted) = spend(&allowance, quotas, growth)? {
            return Ok(admitted);
        }
        let _turn = allowance.deciding.lock().await;
        // Another write of the tenant may have decided while this one waited.
        if let Some(admitted) = spend(&allowance, quotas, growth)? {
            return Ok(admitted);
        }
        // Boxed: a decision's future (a catalog transaction around a read of every shard) is
        // large, and would make every caller's future as large.
        Box::pin(self.decide(tenant, quotas, &allowance, growth)).await
    }

    /// Notes that `tenant`'s usage shrank (a delete on this instance): a remembered refusal is
    /// forgotten, so the next write decides again.
    pub fn shrank(&self, tenant: &TenantId) {
        let allowance = self.tenants.lock().get(tenant).cloned();
        if let Some(allowance) = allowance {
            allowance.state.lock().refused = None;
        }
    }

    /// Gives every allowance of this instance up (it stops): other instances may use at once
    /// what they held back.
    pub async fn release(&self) -> Result<(), Error> {
        self.tenants.lock().clear();
        self.router.catalog().release_quota_grants(&self.instance).await
    }

    /// This instance's allowance for `tenant` (made empty on first use). Allowances that lapsed
    /// with nothing in flight are dropped as the table grows.
    fn allowance(&self, tenant: &TenantId) -> Arc<Allowance> {
        let mut tenants = self.tenants.lock();
        if let Some(allowance) = tenants.get(tenant) {
            return allowance.clone();
        }
        if tenants.len() >= 4096 {
            let now = Instant::now();
            tenants.retain(|_, allowance| {
                let state = allowance.state.lock();
                !state.in_flight.is_empty() || state.until.is_some_and(|until| until > now)
            });
        }
        tenants.entry(tenant.clone()).or_default().clone()
    }

    /// Decides a new allowance for `tenant` holding its turn (see the module's documentation),
    /// and lets `growth` through from it.
    async fn decide(
        &self,
        tenant: &TenantId,
        quotas: &Quotas,
        allowance: &Arc<Allowance>,
        growth: Usage,
    ) -> Result<Admission, Error> {
        let started = Instant::now();
        let now_ms = crate::clock::now_ms();
        let life_ms = i64::try_from(ALLOWANCE_LIFE.as_millis()).unwrap_or(i64::MAX);
        // What is left of the old allowance is given up now: nothing is let through from it
        // while the new one is decided, and what is in flight is in the new one.
        let in_flight = {
            let mut state = allowance.state.lock();
            state.left = Usage::default();
            state.until = None;
            state.in_flight
        };
        let taken_then = Mutex::new(Usage::default());
        let refused_now = Mutex::new(None);
        let (taken_now, refusal_now, gate) = (&taken_then, &refused_now, self);
        let decided = self
            .router
            .catalog()
            .decide_quota_grant(tenant.as_str(), &self.instance, (now_ms, now_ms + life_ms), |others| async move {
                let used = gate.usage_now(tenant, allowance).await?;
                let mut grant = in_flight;
                let mut refusal = None;
                let mut taken_all = Usage::default();
                for kind in QuotaKind::ALL {
                    let Some(limit) = quotas.limit(kind) else { continue };
                    let taken = kind.of(&used).saturating_add(kind.of(&others)).saturating_add(kind.of(&in_flight));
                    let left = limit.saturating_sub(taken);
                    let wanted = kind.of(&growth);
                    set(&mut taken_all, kind, taken);
                    if wanted > left {
                        refusal.get_or_insert(Error::QuotaExceeded {
                            quota: kind.as_str(),
                            limit,
                            used: taken,
                            requested: wanted,
                        });
                        continue;
                    }
                    let share = wanted + (left - wanted) / SHARE;
                    let granted = kind.of(&grant).saturating_add(share);
                    set(&mut grant, kind, granted);
                }
                *taken_now.lock() = taken_all;
                // A refused instance keeps only what it has in flight: the share it held goes
                // back to the other instances.
                if let Some(refused) = refusal {
                    *refusal_now.lock() = Some(refused);
                    return Ok(in_flight);
                }
                Ok(grant)
            })
            .await;
        let decided = match (decided, refused_now.into_inner()) {
            (Ok(_), Some(refused)) => Err(refused),
            (decided, _) => decided,
        };
        let mut state = allowance.state.lock();
        match decided {
            Ok(grant) => {
                // What the instance holds beyond what is in flight now (some of what was in flight
                // when the decision began may have finished since: it is in the usage now).
                state.left = grant.less(&in_flight).less(&growth);
                state.in_flight.add(&growth);
                state.until = Some(started + ALLOWANCE_LIFE);
                state.quotas = *quotas;
                state.refused = None;
                Ok(Admission { allowance: Some(allowance.clone()), growth })
            }
            Err(refused @ Error::QuotaExceeded { .. }) => {
                state.quotas = *quotas;
                state.refused = Some((Instant::now() + REFUSAL_MEMORY, *taken_then.lock()));
                Err(refused)
            }
            Err(e) => Err(e),
        }
    }

    /// The tenant's usage over the fleet now; a shard that does not answer counts with its part
    /// as last read ([`Error::UsageUnknown`] if it never was).
    async fn usage_now(&self, tenant: &TenantId, allowance: &Allowance) -> Result<Usage, Error> {
        let read = super::fleet_usage(&self.router, tenant).await?;
        let mut state = allowance.state.lock();
        let mut total = read.total;
        for part in &read.shards {
            state.known.insert(part.shard.clone(), part.usage);
        }
        // A shard that answered with nothing of the tenant holds nothing now.
        let answered: Vec<ShardId> = state
            .known
            .keys()
            .filter(|shard| !read.unreachable.contains(shard) && !read.shards.iter().any(|p| &p.shard == *shard))
            .cloned()
            .collect();
        for shard in answered {
            state.known.remove(&shard);
        }
        for shard in &read.unreachable {
            match state.known.get(shard) {
                Some(part) => total.add(part),
                None => return Err(Error::UsageUnknown(shard.clone())),
            }
        }
        Ok(total)
    }
}

/// Lets `growth` through from what `allowance` holds, if it covers it and has not lapsed;
/// refuses at once what a remembered refusal says would not fit.
fn spend(allowance: &Arc<Allowance>, quotas: &Quotas, growth: Usage) -> Result<Option<Admission>, Error> {
    let mut state = allowance.state.lock();
    if state.quotas != *quotas {
        return Ok(None);
    }
    let now = Instant::now();
    if let Some((until, taken)) = &state.refused
        && *until > now
        && let Some(refused) = crossing(quotas, taken, &growth)
    {
        return Err(refused);
    }
    if state.until.is_some_and(|until| until > now) && growth.fits_in(&state.left) {
        state.left = state.left.less(&growth);
        state.in_flight.add(&growth);
        return Ok(Some(Admission { allowance: Some(allowance.clone()), growth }));
    }
    Ok(None)
}

/// Sets `kind`'s part of `usage`.
fn set(usage: &mut Usage, kind: QuotaKind, amount: u64) {
    let part = match kind {
        QuotaKind::Records => &mut usage.records,
        QuotaKind::RecordBytes => &mut usage.record_bytes,
        QuotaKind::Blobs => &mut usage.blobs,
        QuotaKind::BlobBytes => &mut usage.blob_bytes,
        QuotaKind::IndexEntries => &mut usage.index_entries,
    };
    *part = amount;
}

/// The refusal of `growth` when `taken` is what counts against `quotas`: the first quota it
/// crosses.
fn crossing(quotas: &Quotas, taken: &Usage, growth: &Usage) -> Option<Error> {
    QuotaKind::ALL.into_iter().find_map(|kind| {
        let (limit, wanted, used) = (quotas.limit(kind)?, kind.of(growth), kind.of(taken));
        (wanted > limit.saturating_sub(used)).then(|| Error::QuotaExceeded {
            quota: kind.as_str(),
            limit,
            used,
            requested: wanted,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_of_unlimited_parts_is_not_counted() {
        let quotas = Quotas { records: Some(10), blob_bytes: Some(5), ..Quotas::default() };
        let growth = Usage { records: 1, record_bytes: 100, blobs: 1, blob_bytes: 7, index_entries: 3 };
        assert_eq!(limited(&quotas, growth), Usage { records: 1, blob_bytes: 7, ..Usage::default() });
        assert!(limited(&Quotas::default(), growth).is_empty());
    }
}
