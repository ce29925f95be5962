//! The Bulkhead pattern for requests: caps on the requests in progress of each tenant, so that
//! one tenant (or a holder of one of its valet URLs) can never occupy the whole instance.
//!
//! Callers are partitioned into [`Compartment`]s: one per tenant, one per subject of a token
//! without a tenant, and one shared by every request without a valid token. A request takes a
//! [`Slot`] in its caller's compartment once the caller is known (the front door, after the
//! token; the valet service, after the URL's signature) and holds it until its response has been
//! sent ([`crate::server::transfer_watch`] ties the slot to the response body, and takes it back
//! from a transfer that stalls). A full compartment refuses at once, never queues: 429
//! `tenant_concurrency_limit` or `anonymous_concurrency_limit` with `Retry-After`, counted in
//! `shardgate_bulkhead_refusals_total{limit}`.
//!
//! The caps themselves (by tier, `limits.tenant_concurrent_requests`) are the [`crate::app`]'s
//! business; the instance-wide cap (`limits.max_concurrent_requests`, 503 `overloaded`) stays the
//! last line, in [`crate::server::edge`]. Probes and `/metrics` are never counted by either.
//!
//! **Memory.** A compartment is remembered only while it holds a slot, so the table never holds
//! more entries than there are requests in progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashMap;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use shardgate_gatekeeper::{AuthError, Principal};

use crate::wire::error::{ApiError, Code};

/// Whose requests share one cap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Compartment {
    /// A tenant's (from its verified token, or the verified valet URL).
    Tenant(Box<str>),
    /// A verified token without a tenant: its issuer and subject.
    Principal(Box<str>, Box<str>),
    /// Every request without a valid token.
    Anonymous,
}

impl Compartment {
    /// The compartment of a caller as the front door found it: its token's tenant, else its
    /// token's issuer and subject, else (no token, or an invalid one) the anonymous one.
    pub fn of(authenticated: Option<&Result<Arc<Principal>, AuthError>>) -> Self {
        match authenticated {
            Some(Ok(principal)) => match &principal.tenant {
                Some(tenant) => Compartment::Tenant(tenant.as_str().into()),
                None => Compartment::Principal(principal.issuer.as_str().into(), principal.subject.as_str().into()),
            },
            _ => Compartment::Anonymous,
        }
    }

    /// The metric label of refusals in this compartment.
    fn limit(&self) -> Limit {
        match self {
            Compartment::Tenant(_) | Compartment::Principal(..) => Limit::Tenant,
            Compartment::Anonymous => Limit::Anonymous,
        }
    }

    /// The refusal when this compartment is full.
    fn refusal(&self, cap: usize) -> ApiError {
        match self {
            Compartment::Tenant(tenant) => {
                ApiError::concurrency_limited(Code::TenantConcurrencyLimit, &format!("tenant {tenant}"), cap)
            }
            Compartment::Principal(..) => {
                ApiError::concurrency_limited(Code::TenantConcurrencyLimit, "this token's subject", cap)
            }
            Compartment::Anonymous => ApiError::concurrency_limited(
                Code::AnonymousConcurrencyLimit,
                "all requests without a valid token together",
                cap,
            ),
        }
    }
}

/// Which cap refused a request: the label of `shardgate_bulkhead_refusals_total` (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// A tenant's (or a tenantless token's) cap.
    Tenant,
    /// The cap of requests without a valid token.
    Anonymous,
    /// The instance's cap (`limits.max_concurrent_requests`, enforced by the edge).
    Global,
}

impl Limit {
    const ALL: [Limit; 3] = [Limit::Tenant, Limit::Anonymous, Limit::Global];

    fn as_str(self) -> &'static str {
        match self {
            Limit::Tenant => "tenant",
            Limit::Anonymous => "anonymous",
            Limit::Global => "global",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

/// Requests in progress by compartment.
type Occupancy = Mutex<HashMap<Compartment, usize, foldhash::fast::RandomState>>;

/// What a set of bulkheads caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarded {
    /// Requests in progress (the front door's caps).
    Requests,
    /// Listings of distributed collections in progress, which read many shards each
    /// (`limits.tenant_concurrent_fan_outs`), so one tenant's scans cannot starve others' reads.
    FanOuts,
}

/// The instance's compartments, their requests in progress and their refusals.
#[derive(Debug)]
pub struct Bulkheads {
    occupancy: Arc<Occupancy>,
    refused: Family<LimitLabels, Counter>,
    in_progress: Family<LimitLabels, Gauge>,
    guarded: Guarded,
}

impl Bulkheads {
    /// Empty compartments; the refusal counter and the gauge of requests in progress go into
    /// `registry`, every limit shown from the start (at 0).
    pub fn new(registry: &mut Registry) -> Self {
        Self::guarding(Guarded::Requests, registry)
    }

    /// Bulkheads for `guarded`; fan-outs' metrics are prefixed `fan_out_`
    /// (`shardgate_fan_out_bulkhead_refusals_total`).
    pub fn guarding(guarded: Guarded, registry: &mut Registry) -> Self {
        let registry = match guarded {
            Guarded::Requests => registry,
            Guarded::FanOuts => registry.sub_registry_with_prefix("fan_out"),
        };
        let refused = Family::<LimitLabels, Counter>::default();
        for limit in Limit::ALL {
            drop(refused.get_or_create(&LimitLabels { limit: limit.as_str() }));
        }
        registry.register(
            "bulkhead_refusals",
            "Requests refused at once because a cap on requests in progress was reached, by limit \
             (tenant, anonymous, global)",
            refused.clone(),
        );
        let in_progress = Family::<LimitLabels, Gauge>::default();
        for limit in [Limit::Tenant, Limit::Anonymous] {
            drop(in_progress.get_or_create(&LimitLabels { limit: limit.as_str() }));
        }
        registry.register(
            "bulkhead_requests_in_progress",
            "Requests holding a place in a bulkhead, by kind (tenant: all tenants' and tenantless tokens' \
             together; anonymous)",
            in_progress.clone(),
        );
        Self { occupancy: Arc::default(), refused, in_progress, guarded }
    }

    /// A slot in `compartment` if it holds fewer than `cap` (at least one) requests; else the
    /// refusal, counted.
    pub fn enter(&self, compartment: Compartment, cap: usize) -> Result<Slot, ApiError> {
        let cap = cap.max(1);
        let admitted = {
            let mut occupancy = self.occupancy.lock();
            match occupancy.get_mut(&compartment) {
                Some(held) if *held >= cap => false,
                Some(held) => {
                    *held += 1;
                    true
                }
                None => {
                    occupancy.insert(compartment.clone(), 1);
                    true
                }
            }
        };
        if !admitted {
            self.refusals(compartment.limit()).inc();
            return Err(match (self.guarded, &compartment) {
                (Guarded::FanOuts, Compartment::Tenant(tenant)) => ApiError::fan_outs_limited(tenant, cap),
                _ => compartment.refusal(cap),
            });
        }
        let in_progress = self.in_progress.get_or_create(&LimitLabels { limit: compartment.limit().as_str() }).clone();
        in_progress.inc();
        let place =
            Place { occupancy: self.occupancy.clone(), compartment, in_progress, released: AtomicBool::new(false) };
        Ok(Slot(Arc::new(place)))
    }

    /// The refusal counter of `limit` (the edge counts the global cap's refusals in it).
    pub fn refusals(&self, limit: Limit) -> Counter {
        self.refused.get_or_create(&LimitLabels { limit: limit.as_str() }).clone()
    }

    /// Requests in progress in `compartment` right now.
    pub fn occupied(&self, compartment: &Compartment) -> usize {
        self.occupancy.lock().get(compartment).copied().unwrap_or(0)
    }
}

/// A request's place in its compartment. Clones share the place; it is given back when
/// [`Slot::release`] is called or the last clone is dropped, whichever comes first.
#[derive(Debug, Clone)]
pub struct Slot(Arc<Place>);

impl Slot {
    /// Gives the place back now (later calls, and the drop, do nothing).
    pub fn release(&self) {
        self.0.release();
    }
}

#[derive(Debug)]
struct Place {
    occupancy: Arc<Occupancy>,
    compartment: Compartment,
    in_progress: Gauge,
    released: AtomicBool,
}

impl Place {
    fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        self.in_progress.dec();
        let mut occupancy = self.occupancy.lock();
        if let Some(held) = occupancy.get_mut(&self.compartment) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                occupancy.remove(&self.compartment);
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str) -> Compartment {
        Compartment::Tenant(name.into())
    }

    #[test]
    fn a_full_compartment_refuses_at_once_and_others_are_untouched() {
        let bulkheads = Bulkheads::new(&mut Registry::default());
        let held: Vec<Slot> = (0..2).map(|_| bulkheads.enter(tenant("greedy"), 2).unwrap()).collect();
        let refused = bulkheads.enter(tenant("greedy"), 2).unwrap_err();
        assert_eq!(refused.code(), "tenant_concurrency_limit");
        assert!(refused.detail().contains("tenant greedy"), "{}", refused.detail());
        assert_eq!(bulkheads.refusals(Limit::Tenant).get(), 1);
        let other = bulkheads.enter(tenant("other"), 2).unwrap();
        let anonymous = bulkheads.enter(Compartment::Anonymous, 1).unwrap();
        assert_eq!(bulkheads.enter(Compartment::Anonymous, 1).unwrap_err().code(), "anonymous_concurrency_limit");
        assert_eq!(bulkheads.refusals(Limit::Anonymous).get(), 1);
        drop((other, anonymous));
        assert_eq!(bulkheads.occupied(&tenant("greedy")), 2);
        assert_eq!(bulkheads.in_progress.get_or_create(&LimitLabels { limit: "tenant" }).get(), 2);
        drop(held);
        assert_eq!(bulkheads.occupied(&tenant("greedy")), 0);
        assert_eq!(bulkheads.in_progress.get_or_create(&LimitLabels { limit: "tenant" }).get(), 0);
        assert!(bulkheads.occupancy.lock().is_empty(), "empty compartments are forgotten");
    }

    #[test]
    fn a_slot_is_given_back_once_however_often_it_is_released() {
        let bulkheads = Bulkheads::new(&mut Registry::default());
        let first = bulkheads.enter(tenant("acme"), 2).unwrap();
        let second = bulkheads.enter(tenant("acme"), 2).unwrap();
        let copy = first.clone();
        first.release();
        first.release();
        drop(copy);
        drop(first);
        assert_eq!(bulkheads.occupied(&tenant("acme")), 1, "the other slot is still held");
        drop(second);
        assert_eq!(bulkheads.occupied(&tenant("acme")), 0);
    }

    #[test]
    fn a_cap_of_zero_still_admits_one() {
        let bulkheads = Bulkheads::new(&mut Registry::default());
        let only = bulkheads.enter(tenant("acme"), 0).unwrap();
        assert!(bulkheads.enter(tenant("acme"), 0).is_err());
        drop(only);
    }
}
