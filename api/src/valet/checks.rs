//! The catalog's answer for a valet grant (its row and the state of the key that signed it),
//! kept for a short time so a hot download does not read the catalog for it.
//!
//! A cached answer must never let a revoked grant or a retired key's URL through for long.
//! Every revocation and retirement moves the catalog's valet generation on in its own
//! transaction. The instance that made it drops its checks before acknowledging, then announces
//! the change through Redis; every other instance re-reads the catalog's counters when the
//! announcement arrives, or at its next catalog poll (every 500 ms) when Redis is down, and drops
//! its checks when the generation moved. An instance trusts its checks only while its last
//! successful poll is younger than [`FRESH`]: one that cannot read the catalog stops using them.
//! So a revocation acknowledged at `t` is honoured by no instance after `t + FRESH`, and by none
//! after the announcement arrives while Redis is up.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shardgate_shard_router::catalog::{ValetGrantRow, ValetKeyState};

/// How long after its last successful catalog poll an instance still trusts its checks.
pub const FRESH: Duration = Duration::from_secs(1);

/// How long a check is kept at most (it is dropped sooner when the generation moves).
const KEEP: Duration = Duration::from_secs(60);

/// What the catalog said of one grant: its row and its key's state (`None`: the key is gone).
pub type GrantCheck = Arc<(ValetGrantRow, Option<ValetKeyState>)>;

/// Cached grant checks of this instance.
#[derive(Debug)]
pub struct ValetChecks {
    /// Each check with the era it was read in.
    checks: moka::sync::Cache<String, (u64, GrantCheck), foldhash::fast::RandomState>,
    /// The catalog's valet generation this instance last saw.
    generation: AtomicU64,
    /// Moves on whenever the checks are dropped: only checks read in the current era are used,
    /// so a catalog read that started before a drop cannot bring its (maybe older) answer back.
    era: AtomicU64,
    /// When the last poll confirmed the generation (ms since `started`; 0: never).
    confirmed_ms: AtomicU64,
    started: Instant,
}

impl Default for ValetChecks {
    fn default() -> Self {
        Self {
            checks: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(KEEP)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            generation: AtomicU64::new(0),
            era: AtomicU64::new(0),
            confirmed_ms: AtomicU64::new(0),
            started: Instant::now(),
        }
    }
}

impl ValetChecks {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// The cached check of grant `id`, if this instance may trust it now.
    pub fn get(&self, id: &str) -> Option<GrantCheck> {
        self.get_at(id, self.now_ms())
    }

    fn get_at(&self, id: &str, now_ms: u64) -> Option<GrantCheck> {
        let confirmed = self.confirmed_ms.load(Ordering::Acquire);
        let fresh = confirmed != 0 && now_ms.saturating_sub(confirmed) < FRESH.as_millis() as u64;
        let (era, check) = self.checks.get(id).filter(|_| fresh)?;
        (era == self.era()).then_some(check)
    }

    /// The era to pass to [`ValetChecks::put`] for a catalog read that starts now.
    pub fn era(&self) -> u64 {
        self.era.load(Ordering::Acquire)
    }

    /// Keeps what the catalog answered for grant `id` in a read that started in `era` (used
    /// only if no drop happened since).
    pub fn put(&self, id: &str, era: u64, check: GrantCheck) {
        if self.era() == era {
            self.checks.insert(id.to_owned(), (era, check));
        }
    }

    /// Drops every check (this instance revoked a grant or retired a key).
    pub fn drop_all(&self) {
        self.era.fetch_add(1, Ordering::AcqRel);
        self.checks.invalidate_all();
    }

    /// A catalog poll read `generation`: drops the checks if it moved, and trusts them again
    /// for [`FRESH`] from now.
    pub fn confirm(&self, generation: u64) {
        self.confirm_at(generation, self.now_ms());
    }

    fn confirm_at(&self, generation: u64, now_ms: u64) {
        if self.generation.swap(generation, Ordering::AcqRel) != generation {
            self.drop_all();
        }
        self.confirmed_ms.store(now_ms, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardgate_shard_router::catalog::ValetGrantRow;

    fn check(revoked: bool) -> GrantCheck {
        let row = ValetGrantRow {
            id: "g".into(),
            tenant: "acme".into(),
            path: "f".into(),
            permission: "read".into(),
            key_id: "k".into(),
            not_before: 0,
            expires_at: 10,
            single_use: false,
            used_at_ms: None,
            revoked_at_ms: revoked.then_some(1),
            created_at_ms: 0,
            incarnation: 0,
        };
        Arc::new((row, Some(ValetKeyState::Active)))
    }

    #[test]
    fn a_check_is_used_only_while_the_last_poll_is_fresh() {
        let checks = ValetChecks::default();
        checks.put("g", checks.era(), check(false));
        assert!(checks.get_at("g", 10).is_none(), "never confirmed: not trusted");
        checks.confirm_at(0, 10);
        assert!(checks.get_at("g", 10).is_some());
        assert!(checks.get_at("g", 10 + FRESH.as_millis() as u64 - 1).is_some());
        assert!(checks.get_at("g", 10 + FRESH.as_millis() as u64).is_none(), "no poll for FRESH: not trusted");
    }

    #[test]
    fn a_new_generation_drops_every_check() {
        let checks = ValetChecks::default();
        checks.confirm_at(3, 10);
        checks.put("g", checks.era(), check(false));
        checks.confirm_at(3, 20);
        assert!(checks.get_at("g", 20).is_some(), "the same generation keeps the checks");
        checks.confirm_at(4, 30);
        assert!(checks.get_at("g", 30).is_none());
    }

    #[test]
    fn a_read_that_started_before_a_drop_is_not_kept() {
        let checks = ValetChecks::default();
        checks.confirm_at(0, 10);
        let era = checks.era();
        checks.drop_all();
        checks.put("g", era, check(false));
        assert!(checks.get_at("g", 10).is_none(), "the old answer must not come back");
        checks.put("g", checks.era(), check(true));
        assert!(checks.get_at("g", 10).unwrap().0.revoked_at_ms.is_some());
    }
}
