//! Each tenant's budget of shard reads for listings of distributed collections, per instance
//! (`limits.tenant_fan_out_shard_reads_per_second`): a listing costs one unit per shard it
//! reads, so a tenant flooding fan-outs is held to a bounded share of the shards whatever the
//! number of shards and however short each listing is (the concurrency cap,
//! `limits.tenant_concurrent_fan_outs`, bounds only the listings in progress at once). A token
//! bucket per tenant holding one second's worth.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The tenants' budgets on this instance.
#[derive(Debug)]
pub struct FanOutBudget {
    per_second: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    units: f64,
    at: Instant,
}

impl FanOutBudget {
    /// Budgets of `per_second` shard reads per tenant (0: no budget).
    pub fn new(per_second: u32) -> Self {
        Self { per_second, buckets: Mutex::new(HashMap::new()) }
    }

    /// The budget per tenant, in shard reads per second (0: none).
    pub fn per_second(&self) -> u32 {
        self.per_second
    }

    /// Takes `cost` shard reads from `tenant`'s budget, or says how long until it holds them.
    /// A listing costing more than a whole second's budget takes a full bucket.
    pub fn take(&self, tenant: &str, cost: u32, now: Instant) -> Result<(), Duration> {
        if self.per_second == 0 {
            return Ok(());
        }
        let rate = f64::from(self.per_second);
        let cost = f64::from(cost.min(self.per_second));
        let mut buckets = self.buckets.lock();
        let bucket = buckets.entry(tenant.to_owned()).or_insert(Bucket { units: rate, at: now });
        let refilled = bucket.units + now.saturating_duration_since(bucket.at).as_secs_f64() * rate;
        bucket.units = refilled.min(rate);
        bucket.at = now;
        if bucket.units >= cost {
            bucket.units -= cost;
            return Ok(());
        }
        Err(Duration::from_secs_f64((cost - bucket.units) / rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_spends_a_seconds_worth_then_waits_for_the_refill() {
        let budget = FanOutBudget::new(100);
        let start = Instant::now();
        for _ in 0..25 {
            assert_eq!(budget.take("flood", 4, start), Ok(()));
        }
        let wait = budget.take("flood", 4, start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(40));
        // Another tenant's budget is its own.
        assert_eq!(budget.take("quiet", 16, start), Ok(()));
        // 40 ms later the four units are back.
        assert_eq!(budget.take("flood", 4, start + Duration::from_millis(40)), Ok(()));
        assert!(budget.take("flood", 4, start + Duration::from_millis(40)).is_err());
        // A listing dearer than the whole budget takes a full bucket.
        assert_eq!(budget.take("wide", 500, start), Ok(()));
        assert!(budget.take("wide", 1, start).is_err());
        // No budget: nothing is refused.
        let none = FanOutBudget::new(0);
        assert!((0..1000).all(|_| none.take("flood", 16, start).is_ok()));
    }
}
