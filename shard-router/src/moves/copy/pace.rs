//! How fast a move copies ([`Pace`]): at most `storage.moves.copy_bytes_per_second`, and, with
//! `storage.moves.adaptive_pace`, as fast as the shards it copies between can take without
//! their requests feeling it — a feedback loop ([`PaceController`]) on the statement latency
//! that requests (not the move) see on those shards, as this instance's load meter counts it.
//!
//! - **Signal.** Every [`INTERVAL`] of copying, each watched shard's request statements since
//!   the last look ([`LoadMeter::requests_on`]: count and statement time) give their mean
//!   latency. A shard that served fewer than [`MIN_STATEMENTS`] requests in the interval gives
//!   no signal: it has (almost) nobody to hurt.
//! - **Baseline.** A copy starts at the floor (`storage.moves.pace_floor_bytes_per_second`), a
//!   pace the shards should not feel; each shard's mean over that first interval is its level
//!   before the move. A shard that had no traffic then, and has some later, is measured again
//!   the same way: the copy drops to the floor for one interval.
//! - **Loop.** When any watched shard's mean rises above its baseline by more than
//!   `storage.moves.pace_tolerance` (and by at least [`MIN_RISE_US`]), the pace halves, down to
//!   the floor; otherwise it grows by an eighth of the ceiling, up to the ceiling. With no
//!   request traffic on any watched shard it runs at the ceiling. It never stops: the move
//!   finishes, at worst at the floor.
//!
//! The pace and its changes are reported ([`PaceReport`]) in the job's progress. Without a load
//! meter (`storage.load.enabled = false`), or with `adaptive_pace = false`, the pace is the
//! ceiling throughout.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::config::MoveConfig;
use crate::ids::ShardId;
use crate::storage::meter::{Counters, LoadMeter};

/// How often the loop looks at the shards' latency and sets the pace.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// Fewer request statements than this on a shard in an interval give no signal.
pub const MIN_STATEMENTS: u64 = 5;

/// A rise of the mean latency smaller than this (µs) is never taken for harm, so a baseline
/// near zero (an idle SQLite shard) does not turn noise into slowdowns.
pub const MIN_RISE_US: f64 = 50.0;

/// The pace is multiplied by this when a shard's requests feel the copy.
const DECREASE: f64 = 0.5;

/// The pace grows by the ceiling divided by this per calm interval.
const INCREASE_STEPS: u64 = 8;

/// How much of a late start the pace makes up for: time spent reading and writing a chunk
/// counts towards the next one's wait, up to this much.
const CATCH_UP: Duration = Duration::from_millis(100);

/// How many changes of the pace a report keeps (the latest).
pub const MAX_CHANGES: usize = 120;

/// The limits the loop keeps to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaceSettings {
    /// The most bytes per second (0: no limit, and no loop).
    pub ceiling: u64,
    /// The least bytes per second while the loop runs (at least 1, at most the ceiling).
    pub floor: u64,
    /// How far (a fraction) a shard's request latency may rise above its baseline.
    pub tolerance: f64,
    /// Whether the loop runs.
    pub adaptive: bool,
}

impl From<&MoveConfig> for PaceSettings {
    fn from(config: &MoveConfig) -> Self {
        let ceiling = config.copy_bytes_per_second;
        Self {
            ceiling,
            floor: config.pace_floor(),
            tolerance: config.pace_tolerance,
            adaptive: config.adaptive_pace && ceiling > 0,
        }
    }
}

/// One shard's request statements over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// How many.
    pub statements: u64,
    /// Their time, added up (µs).
    pub statement_us: u64,
}

impl Latency {
    /// What a shard's requests did between two readings of its cumulative counters.
    pub fn between(before: &Counters, after: &Counters) -> Self {
        let statements = |c: &Counters| c.reads + c.writes;
        Self {
            statements: statements(after).saturating_sub(statements(before)),
            statement_us: after.statement_us.saturating_sub(before.statement_us),
        }
    }

    /// The mean (µs), if there were enough statements to say.
    pub fn mean_us(&self) -> Option<f64> {
        (self.statements >= MIN_STATEMENTS).then(|| self.statement_us as f64 / self.statements as f64)
    }
}

/// The feedback loop, without time or I/O: fed each interval's [`Latency`] per watched shard,
/// it gives the pace for the next interval.
#[derive(Debug, Clone, PartialEq)]
pub struct PaceController {
    settings: PaceSettings,
    rate: u64,
    /// Per watched shard, its mean request latency before the move (µs), once measured.
    baselines: Vec<Option<f64>>,
    /// Whether the interval under way runs at the floor to measure baselines.
    measuring: bool,
}

impl PaceController {
    /// A loop over `shards` shards: it starts at the floor, measuring their baselines.
    pub fn new(settings: PaceSettings, shards: usize) -> Self {
        Self { settings, rate: settings.floor, baselines: vec![None; shards], measuring: true }
    }

    /// The pace now (bytes per second).
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// The watched shards' baselines (µs), in their order; `None` where not measured yet.
    pub fn baselines(&self) -> &[Option<f64>] {
        &self.baselines
    }

    /// Takes the interval that just ended (`seen`: one entry per watched shard, in order) and
    /// sets the pace for the next one, which it returns.
    pub fn observe(&mut self, seen: &[Latency]) -> u64 {
        let PaceSettings { ceiling, floor, tolerance, .. } = self.settings;
        let measured = std::mem::replace(&mut self.measuring, false);
        let means: Vec<Option<f64>> = seen.iter().map(Latency::mean_us).collect();
        if means.iter().all(Option::is_none) {
            // Nobody to hurt.
            self.rate = ceiling;
            return self.rate;
        }
        let (mut unmeasured, mut hurt) = (false, false);
        for (baseline, mean) in self.baselines.iter_mut().zip(&means) {
            let Some(mean) = *mean else { continue };
            match *baseline {
                None if measured => *baseline = Some(mean),
                None => unmeasured = true,
                Some(before) => hurt |= mean > before * (1.0 + tolerance) && mean - before >= MIN_RISE_US,
            }
        }
        self.rate = if unmeasured {
            // A shard came to life: measure it at the floor.
            self.measuring = true;
            floor
        } else if hurt {
            ((self.rate as f64 * DECREASE) as u64).max(floor)
        } else {
            self.rate.saturating_add((ceiling / INCREASE_STEPS).max(1)).min(ceiling)
        };
        self.rate
    }
}

/// A copy's pace as the job's progress reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaceReport {
    /// Whether the pace follows the shards' request latency (`storage.moves.adaptive_pace`).
    pub adaptive: bool,
    /// The most bytes per second (`storage.moves.copy_bytes_per_second`; 0: no limit).
    pub ceiling_bytes_per_second: u64,
    /// The pace now (bytes per second).
    pub bytes_per_second: u64,
    /// Per watched shard, its requests' mean statement latency before the copy (µs), as the loop
    /// measured it.
    #[serde(default)]
    pub baseline_us: BTreeMap<String, f64>,
    /// When the pace changed (ms since the Unix epoch) and to what (bytes per second): the first
    /// is the pace this run of the job started at; at most [`MAX_CHANGES`], the latest.
    #[serde(default)]
    pub changes: Vec<(i64, u64)>,
}

/// A copy's speed limit, adaptive or fixed: [`Pace::take`] waits after each chunk copied so that
/// the bytes keep to the pace of the moment.
#[derive(Debug)]
pub struct Pace {
    settings: PaceSettings,
    meter: Option<Arc<LoadMeter>>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    rate: u64,
    /// When the bytes taken so far are due.
    due: Instant,
    /// The shards watched, with their request counters at the last look.
    shards: Vec<(ShardId, Counters)>,
    controller: PaceController,
    looked_at: Instant,
    changes: VecDeque<(i64, u64)>,
}

impl Pace {
    /// A pace within `settings`, fed by `meter` (none: fixed at the ceiling). It watches no
    /// shard until [`Pace::watch`] names them.
    pub fn new(settings: PaceSettings, meter: Option<Arc<LoadMeter>>) -> Self {
        let settings = PaceSettings { adaptive: settings.adaptive && meter.is_some(), ..settings };
        let controller = PaceController::new(settings, 0);
        let rate = if settings.adaptive { controller.rate() } else { settings.ceiling };
        let now = Instant::now();
        let state = State {
            rate,
            due: now,
            shards: Vec::new(),
            controller,
            looked_at: now,
            changes: VecDeque::from([(now_ms(), rate)]),
        };
        Self { settings, meter, state: Mutex::new(state) }
    }

    /// Watches `shards` (the source and target of a copy): the same ones again change nothing;
    /// others start the loop over, at the floor, measuring their baselines.
    pub fn watch(&self, shards: &[ShardId]) {
        let Some(meter) = self.meter.as_ref().filter(|_| self.settings.adaptive) else { return };
        let mut state = self.state.lock();
        if state.shards.iter().map(|(id, _)| id).eq(shards) {
            return;
        }
        state.shards = shards.iter().map(|id| (id.clone(), meter.requests_on(id))).collect();
        state.controller = PaceController::new(self.settings, shards.len());
        state.looked_at = Instant::now();
        let rate = state.controller.rate();
        state.set_rate(rate);
    }

    /// Counts `bytes` sent and waits until sending them keeps to the pace.
    pub async fn take(&self, bytes: u64) {
        let wait = {
            let mut state = self.state.lock();
            let now = Instant::now();
            self.steer(&mut state, now);
            if state.rate == 0 {
                return;
            }
            let start = state.due.max(now.checked_sub(CATCH_UP).unwrap_or(now));
            state.due = start + Duration::from_secs_f64(bytes as f64 / state.rate as f64);
            state.due.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// After a page of a scan (the comparison of a move's settled rows) kept the shards busy for
    /// `busy`, waits so that the scan takes the shards for at most the pace's share of the
    /// ceiling: `busy` times (ceiling ÷ pace − 1). A scan copies nothing that [`Pace::take`]
    /// could count, and in one statement it would take the shards at once; this spreads it. At
    /// the ceiling (and with a fixed pace) it does not wait. `busy` must not hold a wait of the
    /// pace's own, or each rest would grow with the last.
    pub async fn rest(&self, busy: Duration) {
        let wait = {
            let mut state = self.state.lock();
            let now = Instant::now();
            self.steer(&mut state, now);
            rest_for(busy, state.rate, self.settings.ceiling)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Once an interval has passed, feeds the loop what the watched shards' requests saw.
    fn steer(&self, state: &mut State, now: Instant) {
        let Some(meter) = &self.meter else { return };
        if state.shards.is_empty() || now.duration_since(state.looked_at) < INTERVAL {
            return;
        }
        state.looked_at = now;
        let seen: Vec<Latency> = state
            .shards
            .iter_mut()
            .map(|(id, last)| {
                let totals = meter.requests_on(id);
                let seen = Latency::between(last, &totals);
                *last = totals;
                seen
            })
            .collect();
        let rate = state.controller.observe(&seen);
        state.set_rate(rate);
    }

    /// The pace as the job's progress reports it.
    pub fn report(&self) -> PaceReport {
        let state = self.state.lock();
        let baselines = state.shards.iter().zip(state.controller.baselines());
        PaceReport {
            adaptive: self.settings.adaptive,
            ceiling_bytes_per_second: self.settings.ceiling,
            bytes_per_second: state.rate,
            baseline_us: baselines.filter_map(|((id, _), b)| Some((id.to_string(), (*b)?))).collect(),
            changes: state.changes.iter().copied().collect(),
        }
    }
}

impl State {
    fn set_rate(&mut self, rate: u64) {
        if rate == self.rate {
            return;
        }
        self.rate = rate;
        record_change(&mut self.changes, (now_ms(), rate));
    }
}

/// How long a scan that was busy for `busy` rests at pace `rate` below `ceiling`: so that it is
/// busy for `rate ÷ ceiling` of the time. No rest at the ceiling, without a limit or at 0.
fn rest_for(busy: Duration, rate: u64, ceiling: u64) -> Duration {
    if rate == 0 || ceiling == 0 || rate >= ceiling {
        return Duration::ZERO;
    }
    busy.mul_f64(ceiling as f64 / rate as f64 - 1.0)
}

/// Adds `change` to `changes`, dropping the oldest beyond [`MAX_CHANGES`].
fn record_change(changes: &mut VecDeque<(i64, u64)>, change: (i64, u64)) {
    if changes.len() >= MAX_CHANGES {
        changes.pop_front();
    }
    changes.push_back(change);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn settings() -> PaceSettings {
        PaceSettings { ceiling: 4 * MIB, floor: MIB / 4, tolerance: 0.2, adaptive: true }
    }

    /// `statements` requests of `mean_us` each.
    fn seen(statements: u64, mean_us: u64) -> Latency {
        Latency { statements, statement_us: statements * mean_us }
    }

    /// A loop over two shards whose baselines are 1000 µs and 2000 µs.
    fn measured() -> PaceController {
        let mut controller = PaceController::new(settings(), 2);
        controller.observe(&[seen(100, 1000), seen(100, 2000)]);
        controller
    }

    #[test]
    fn a_copy_starts_at_the_floor_and_its_first_interval_gives_the_baselines() {
        let mut controller = PaceController::new(settings(), 2);
        assert_eq!(controller.rate(), MIB / 4);
        assert_eq!(controller.baselines(), &[None, None]);
        let rate = controller.observe(&[seen(100, 1000), seen(100, 2000)]);
        assert_eq!(controller.baselines(), &[Some(1000.0), Some(2000.0)]);
        assert_eq!(rate, MIB / 4 + MIB / 2, "calm: it grows by an eighth of the ceiling");
    }

    #[test]
    fn the_pace_grows_to_the_ceiling_while_the_requests_stay_within_the_tolerance() {
        let mut controller = measured();
        let rates: Vec<u64> = (0..10).map(|_| controller.observe(&[seen(80, 1150), seen(90, 2350)])).collect();
        assert!(rates.windows(2).all(|w| w[1] >= w[0]), "{rates:?}");
        assert_eq!(rates.last(), Some(&(4 * MIB)), "never above the ceiling");
        assert_eq!(controller.observe(&[seen(80, 1000), seen(90, 2000)]), 4 * MIB);
    }

    #[test]
    fn the_pace_halves_when_either_shard_slows_down_and_never_falls_below_the_floor() {
        let mut controller = measured();
        for _ in 0..10 {
            controller.observe(&[seen(100, 1000), seen(100, 2000)]);
        }
        assert_eq!(controller.rate(), 4 * MIB);
        assert_eq!(controller.observe(&[seen(100, 1300), seen(100, 2000)]), 2 * MIB, "the source felt it");
        assert_eq!(controller.observe(&[seen(100, 1000), seen(100, 2500)]), MIB, "the target felt it");
        let rates: Vec<u64> = (0..10).map(|_| controller.observe(&[seen(100, 5000), seen(100, 9000)])).collect();
        assert!(rates.iter().all(|&rate| rate >= MIB / 4), "{rates:?}");
        assert_eq!(rates.last(), Some(&(MIB / 4)), "held at the floor, never stopped");
        assert_eq!(controller.observe(&[seen(100, 1000), seen(100, 2000)]), MIB / 4 + MIB / 2, "and it recovers");
    }

    #[test]
    fn a_rise_too_small_in_microseconds_is_not_harm() {
        let mut controller = PaceController::new(settings(), 1);
        controller.observe(&[seen(100, 10)]);
        let rate = controller.rate();
        assert_eq!(controller.observe(&[seen(100, 40)]), rate + MIB / 2, "4x a near-zero baseline is noise");
        assert!(controller.observe(&[seen(100, 100)]) < rate + MIB / 2, "a rise of 90 µs is not");
    }

    #[test]
    fn without_request_traffic_the_copy_runs_at_the_ceiling() {
        let mut controller = PaceController::new(settings(), 2);
        assert_eq!(controller.observe(&[Latency::default(), seen(MIN_STATEMENTS - 1, 100_000)]), 4 * MIB);
        assert_eq!(controller.baselines(), &[None, None], "too few statements say nothing");
        assert_eq!(controller.observe(&[]), 4 * MIB, "a loop watching no shard");
    }

    #[test]
    fn a_shard_that_comes_to_life_is_measured_at_the_floor_first() {
        let mut controller = PaceController::new(settings(), 2);
        controller.observe(&[seen(100, 1000), Latency::default()]);
        assert_eq!(controller.baselines(), &[Some(1000.0), None]);
        let rate = controller.observe(&[seen(100, 1000), seen(50, 3000)]);
        assert_eq!(rate, MIB / 4, "the target has traffic now and no baseline");
        assert_eq!(controller.baselines(), &[Some(1000.0), None]);
        let rate = controller.observe(&[seen(100, 1000), seen(50, 3000)]);
        assert_eq!(controller.baselines(), &[Some(1000.0), Some(3000.0)], "measured over the floor's interval");
        assert_eq!(rate, MIB / 4 + MIB / 2);
    }

    #[test]
    fn a_scan_rests_so_that_it_is_busy_for_the_paces_share_of_the_ceiling() {
        let busy = Duration::from_millis(20);
        assert_eq!(rest_for(busy, 4 * MIB, 4 * MIB), Duration::ZERO, "at the ceiling it never rests");
        assert_eq!(rest_for(busy, MIB, 4 * MIB), Duration::from_millis(60), "a quarter of the time busy");
        assert_eq!(rest_for(busy, MIB / 4, 4 * MIB), Duration::from_millis(300), "at the floor, a sixteenth");
        assert_eq!(rest_for(busy, 0, 0), Duration::ZERO, "no limit");
        assert_eq!(rest_for(busy, MIB, 0), Duration::ZERO, "no limit");
    }

    #[test]
    fn an_interval_is_read_from_the_meters_cumulative_counters() {
        let before = Counters { reads: 10, writes: 5, statement_us: 30_000, ..Counters::default() };
        let after = Counters { reads: 14, writes: 11, statement_us: 50_000, ..Counters::default() };
        let seen = Latency::between(&before, &after);
        assert_eq!(seen, Latency { statements: 10, statement_us: 20_000 });
        assert_eq!(seen.mean_us(), Some(2000.0));
        assert_eq!(Latency::between(&after, &before), Latency::default(), "a reset reads as nothing");
    }

    #[test]
    fn the_settings_keep_the_floor_within_the_ceiling_and_no_limit_means_no_loop() {
        let config = MoveConfig { pace_floor_bytes_per_second: 8 * MIB, ..MoveConfig::default() };
        assert_eq!(PaceSettings::from(&config).floor, config.copy_bytes_per_second);
        assert!(PaceSettings::from(&MoveConfig::default()).adaptive);
        let unlimited = MoveConfig { copy_bytes_per_second: 0, ..MoveConfig::default() };
        assert!(!PaceSettings::from(&unlimited).adaptive);
        let fixed = MoveConfig { adaptive_pace: false, ..MoveConfig::default() };
        assert!(!PaceSettings::from(&fixed).adaptive);
    }

    #[test]
    fn a_fixed_pace_reports_its_rate_and_the_changes_kept_are_bounded() {
        let fixed = PaceSettings { adaptive: false, ..settings() };
        let report = Pace::new(fixed, Some(Arc::new(LoadMeter::new(Default::default())))).report();
        assert!(!report.adaptive);
        assert_eq!((report.ceiling_bytes_per_second, report.bytes_per_second), (4 * MIB, 4 * MIB));
        assert_eq!(report.changes.iter().map(|c| c.1).collect::<Vec<_>>(), [4 * MIB]);
        let adaptive_without_a_meter = Pace::new(settings(), None).report();
        assert!(!adaptive_without_a_meter.adaptive, "no meter, no signal: the ceiling");
        assert_eq!(adaptive_without_a_meter.bytes_per_second, 4 * MIB);
        let mut changes = VecDeque::new();
        for i in 0..(MAX_CHANGES as i64 + 10) {
            record_change(&mut changes, (i, 1));
        }
        assert_eq!(changes.len(), MAX_CHANGES);
        assert_eq!(changes.front(), Some(&(10, 1)), "the oldest went first");
    }
}
