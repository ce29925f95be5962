//! The balancer's scaling logic, pure: given each shard's windowed load (statement time per
//! second, the load picture's measure), the vshards and heavy tenants on it and what may not move
//! now, it picks at most one move, the one that lowers the hottest shard's excess over the mean
//! the most, or says why it picks none.
//!
//! - A shard is overfull when its load is above the mean by more than `threshold` (relative)
//!   *and* by more than `min_load_ms_per_s` (absolute), so an idle fleet never churns.
//! - It sends only if it was overfull for most of the window too (`sustained`: the share of the
//!   window's steps in which it was above that step's line), so that a burst, however strong,
//!   moves nothing: an average alone cannot tell a short burst from a steady excess.
//! - Candidates move load off the hottest overfull shard: a vshard to the coolest shard that may
//!   receive, or, when one tenant carries more than `tenant_share` of the shard, that tenant.
//! - A candidate is taken only if it carries load there now, and the hottest excess after it
//!   (predicted by moving the candidate's load) is lower than before by at least
//!   `min_improvement` of it (hysteresis: a move that merely swaps which shard is hot improves
//!   nothing), and a vshard never if its target would become overfull. A tenant is indivisible:
//!   one heavier than the line makes any shard overfull, and one that is most of its shard may
//!   lower the hottest excess little wherever it goes; isolating it is still taken when it spares
//!   its neighbours: its target carries less than its neighbours on its source do, by
//!   `min_improvement` of theirs (so the hottest shard never gets hotter either).
//! - A pending proposal stands ([`Policy::keeps`]) while it is still valid and its predicted
//!   hottest excess is within `min_improvement` of the current excess of the best choice's, so
//!   near-equal candidates do not replace each other run after run.
//! - Nothing cooling down (moved within the cooldown) or claimed by another job moves; no shard
//!   whose breaker is open, that is draining or not active, sends or receives.
//!
//! It knows nothing of the catalog, jobs or time: the caller gives it the inputs and applies (or
//! proposes) what it returns.

use serde::{Deserialize, Serialize};

/// The policy's knobs (`[balancer]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// How far above the mean a shard may be before it is overfull, relative (0.1: 10%).
    pub threshold: f64,
    /// ... and at least this far, absolute (statement time, ms per second).
    pub min_load_ms_per_s: f64,
    /// The share of the hottest excess a move must remove to be worth making (0.1: 10%).
    pub min_improvement: f64,
    /// A tenant carrying more than this share of its shard's load is moved alone (isolated).
    pub tenant_share: f64,
    /// The share of the window a shard must have been overfull for to send anything (0.8).
    pub sustained: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Self { threshold: 0.1, min_load_ms_per_s: 50.0, min_improvement: 0.1, tenant_share: 0.5, sustained: 0.8 }
    }
}

/// A shard as the policy sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInput {
    /// Its id.
    pub shard: String,
    /// Its load: statement time per second (ms/s), averaged over the balancer's window.
    pub load: f64,
    /// The share of the window's steps in which it was overfull (0 to 1).
    #[serde(default)]
    pub hot_share: f64,
    /// Why it may neither send nor receive now (breaker open, draining, not active), if so.
    pub held: Option<String>,
}

/// Something that may move: a vshard (with the unpinned tenants it places) or a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Movable {
    /// What it is.
    pub subject: Subject,
    /// The shard it is on.
    pub shard: String,
    /// Its load on that shard (ms/s).
    pub load: f64,
    /// Why it may not move now (in its cooldown, claimed by a job), if so.
    pub held: Option<String>,
}

/// What a move moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subject {
    /// A vshard.
    Vshard {
        /// Its number.
        vshard: u32,
    },
    /// A tenant, alone.
    Tenant {
        /// Its id.
        tenant: String,
    },
}

/// A move the policy chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// What moves.
    pub subject: Subject,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// The load it carries (ms/s).
    pub load: f64,
    /// Each shard's predicted load after it, in the input's order.
    pub predicted: Vec<f64>,
}

/// What the policy decided, with its reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The fleet's mean load (ms/s).
    pub mean: f64,
    /// The load above which a shard is overfull (ms/s).
    pub overfull_above: f64,
    /// The hottest shard's excess over the mean now (ms/s).
    pub excess: f64,
    /// The move, if one was chosen.
    pub choice: Option<Choice>,
    /// Why: what was chosen and its predicted effect, or why nothing was.
    pub reason: String,
}

impl Policy {
    /// The load above which a shard is overfull, given the mean.
    pub fn overfull_above(&self, mean: f64) -> f64 {
        (mean * (1.0 + self.threshold)).max(mean + self.min_load_ms_per_s)
    }

    /// Decides on at most one move over `shards` and what is on them (`movables`: the vshards
    /// and the heaviest tenants, each with the shard it is on).
    pub fn decide(&self, shards: &[ShardInput], movables: &[Movable]) -> Decision {
        let loads: Vec<f64> = shards.iter().map(|s| s.load.max(0.0)).collect();
        let mean = if loads.is_empty() { 0.0 } else { loads.iter().sum::<f64>() / loads.len() as f64 };
        let overfull_above = self.overfull_above(mean);
        let excess = hottest_excess(&loads, mean);
        let decision = |choice, reason: String| Decision { mean, overfull_above, excess, choice, reason };
        let mut overfull: Vec<usize> = (0..shards.len()).filter(|&i| loads[i] > overfull_above).collect();
        if overfull.is_empty() {
            return decision(
                None,
                format!(
                    "balanced: no shard above {overfull_above:.1} ms/s (the mean {mean:.1} + {:.0}%, at least {:.1} ms/s more)",
                    self.threshold * 100.0,
                    self.min_load_ms_per_s
                ),
            );
        }
        overfull.sort_by(|a, b| loads[*b].total_cmp(&loads[*a]));
        let mut reasons = Vec::new();
        for source in overfull {
            let from = &shards[source];
            if let Some(why) = &from.held {
                reasons.push(format!("{} is overfull but {why}", from.shard));
                continue;
            }
            if from.hot_share < self.sustained {
                reasons.push(format!(
                    "{} is overfull on average but was so for only {:.0}% of the window (a burst: it must be for {:.0}%)",
                    from.shard,
                    from.hot_share * 100.0,
                    self.sustained * 100.0
                ));
                continue;
            }
            let Some(target) = coolest_receiver(shards, &loads, source) else {
                reasons.push(format!("{} is overfull but no other shard may receive", from.shard));
                continue;
            };
            let on_source: Vec<&Movable> = movables.iter().filter(|m| m.shard == from.shard).collect();
            // A tenant carrying most of the shard goes alone; otherwise the best vshard.
            let isolate = on_source
                .iter()
                .find(|m| matches!(m.subject, Subject::Tenant { .. }) && m.load > self.tenant_share * loads[source]);
            let candidates: Vec<&Movable> = match isolate {
                Some(tenant) => vec![*tenant],
                None => on_source.into_iter().filter(|m| matches!(m.subject, Subject::Vshard { .. })).collect(),
            };
            match self.best(Way { shards, loads: &loads, mean, source, target }, &candidates) {
                Ok(choice) => {
                    let reason = format!(
                        "{} is overfull ({:.1} ms/s, above {overfull_above:.1}): move {} ({:.1} ms/s) to {}; \
                         predicted hottest excess {:.1} -> {:.1} ms/s",
                        from.shard,
                        loads[source],
                        describe(&choice.subject),
                        choice.load,
                        choice.to,
                        excess,
                        hottest_excess(&choice.predicted, mean)
                    );
                    return decision(Some(choice), reason);
                }
                Err(why) => reasons.push(format!("{} is overfull but {why}", from.shard)),
            }
        }
        decision(None, reasons.join("; "))
    }

    /// The standing proposal to move `subject` to `to`, as a choice, if it still stands against
    /// `best` (what the policy decides now over `shards` and `movables`); otherwise why not.
    ///
    /// It stands while it is still valid (its source is overfull, sustained and not held, its
    /// target may receive, what it moves is not held and still on its source, and the move
    /// passes the rules a new choice must pass) and within a margin of the best choice: its
    /// predicted hottest excess is at most `min_improvement` of the current hottest excess
    /// above the best choice's. An alternative must be better by what a move must be worth on
    /// its own to unseat it, so near-equal candidates do not replace each other run after run.
    pub fn keeps(
        &self,
        shards: &[ShardInput],
        movables: &[Movable],
        best: &Decision,
        subject: &Subject,
        to: &str,
    ) -> Result<Choice, String> {
        let loads: Vec<f64> = shards.iter().map(|s| s.load.max(0.0)).collect();
        let mean = if loads.is_empty() { 0.0 } else { loads.iter().sum::<f64>() / loads.len() as f64 };
        let what = describe(subject);
        let candidate = movables
            .iter()
            .find(|m| m.subject == *subject)
            .ok_or_else(|| format!("{what} is no longer on an overfull shard"))?;
        let index = |id: &str| shards.iter().position(|s| s.shard == id);
        let (Some(source), Some(target)) = (index(&candidate.shard), index(to)) else {
            return Err(format!("{what} or {to} is no longer in the fleet"));
        };
        let from = &shards[source];
        if loads[source] <= self.overfull_above(mean) {
            return Err(format!("{} is no longer overfull", from.shard));
        }
        if let Some(why) = &from.held {
            return Err(format!("{} may not send: {why}", from.shard));
        }
        if from.hot_share < self.sustained {
            return Err(format!("{} was overfull for only {:.0}% of the window", from.shard, from.hot_share * 100.0));
        }
        if source == target {
            return Err(format!("{what} is on {to} already"));
        }
        if let Some(why) = &shards[target].held {
            return Err(format!("{to} may not receive: {why}"));
        }
        let (after, choice) = self.judge(Way { shards, loads: &loads, mean, source, target }, candidate)?;
        if let Some(better) = &best.choice {
            let best_after = hottest_excess(&better.predicted, mean);
            let margin = self.min_improvement * hottest_excess(&loads, mean);
            if after > best_after + margin {
                return Err(format!(
                    "moving {} to {} predicts a hottest excess of {best_after:.1} ms/s, {what} to {to} {after:.1}: \
                     better by more than the margin ({margin:.1} ms/s, {:.0}% of the excess now)",
                    describe(&better.subject),
                    better.to,
                    self.min_improvement * 100.0
                ));
            }
        }
        Ok(choice)
    }

    /// Whether moving `candidate` from `source` to `target` is worth making, with the hottest
    /// excess it predicts: it must carry load; a vshard must leave its target not overfull and
    /// lower the hottest excess by `min_improvement` of it; a tenant (indivisible) must lower
    /// the hottest excess so, or, isolated, spare its neighbours: its target must carry less
    /// than its neighbours on its source do, by `min_improvement` of theirs, so the hottest
    /// shard never gets hotter and the move never merely trades its neighbours for others.
    fn judge(&self, way: Way<'_>, candidate: &Movable) -> Result<(f64, Choice), String> {
        let Way { shards, loads, mean, source, target } = way;
        let what = describe(&candidate.subject);
        if let Some(why) = &candidate.held {
            return Err(format!("{what} {why}"));
        }
        if candidate.load <= 0.0 {
            return Err(format!("{what} carries no load on {} now", shards[source].shard));
        }
        let mut predicted = loads.to_vec();
        predicted[source] -= candidate.load;
        predicted[target] += candidate.load;
        let before = hottest_excess(loads, mean);
        let after = hottest_excess(&predicted, mean);
        let improves = after < before && before - after >= self.min_improvement * before;
        let (from, to) = (&shards[source].shard, &shards[target].shard);
        match candidate.subject {
            Subject::Vshard { .. } if predicted[target] > self.overfull_above(mean) => {
                return Err(format!("moving {what} would make {to} overfull"));
            }
            Subject::Vshard { .. } if !improves => {
                return Err(format!(
                    "moving {what} does not improve the hottest excess by {:.0}%",
                    self.min_improvement * 100.0
                ));
            }
            Subject::Tenant { .. } if !improves => {
                let neighbours = loads[source] - candidate.load;
                let joined = loads[target];
                let spares = neighbours > 0.0 && neighbours - joined >= self.min_improvement * neighbours;
                if !spares {
                    return Err(format!(
                        "isolating {what} on {to} would not spare its neighbours: {to} carries {joined:.1} ms/s, \
                         its neighbours on {from} {neighbours:.1}"
                    ));
                }
            }
            _ => {}
        }
        let choice = Choice {
            subject: candidate.subject.clone(),
            from: from.clone(),
            to: to.clone(),
            load: candidate.load,
            predicted,
        };
        Ok((after, choice))
    }

    /// The candidate that lowers the hottest excess the most among those worth making
    /// ([`Policy::judge`]), or why none is.
    fn best(&self, way: Way<'_>, candidates: &[&Movable]) -> Result<Choice, String> {
        if candidates.is_empty() {
            return Err("nothing on it can move".to_owned());
        }
        let mut held = Vec::new();
        let mut refused = Vec::new();
        let mut best: Option<(f64, Choice)> = None;
        for candidate in candidates {
            if let Some(why) = &candidate.held {
                held.push(format!("{} {why}", describe(&candidate.subject)));
                continue;
            }
            match self.judge(way, candidate) {
                Ok((after, choice)) if best.as_ref().is_none_or(|(b, _)| after < *b) => best = Some((after, choice)),
                Ok(_) => {}
                Err(why) => refused.push(why),
            }
        }
        match best {
            Some((_, choice)) => Ok(choice),
            None if !held.is_empty() => Err(held.join(", ")),
            None if matches!(candidates, [one] if matches!(one.subject, Subject::Tenant { .. })) => {
                Err(refused.join("; "))
            }
            None => Err(format!(
                "no move improves the hottest excess by {:.0}% without making {} overfull",
                self.min_improvement * 100.0,
                way.shards[way.target].shard
            )),
        }
    }
}

/// A move's way through the fleet, as [`Policy::judge`] and [`Policy::best`] weigh it: from
/// `shards[source]` to `shards[target]`, with every shard's load now (`loads`, their mean `mean`).
#[derive(Clone, Copy)]
struct Way<'a> {
    shards: &'a [ShardInput],
    loads: &'a [f64],
    mean: f64,
    source: usize,
    target: usize,
}

/// The hottest shard's load above the mean (0 when none is above).
fn hottest_excess(loads: &[f64], mean: f64) -> f64 {
    loads.iter().map(|l| l - mean).fold(0.0, f64::max)
}

/// The least loaded shard, other than `source`, that may receive.
fn coolest_receiver(shards: &[ShardInput], loads: &[f64], source: usize) -> Option<usize> {
    (0..shards.len())
        .filter(|&i| i != source && shards[i].held.is_none())
        .min_by(|a, b| loads[*a].total_cmp(&loads[*b]))
}

fn describe(subject: &Subject) -> String {
    match subject {
        Subject::Vshard { vshard } => format!("vshard {vshard}"),
        Subject::Tenant { tenant } => format!("tenant {tenant}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str, load: f64) -> ShardInput {
        ShardInput { shard: id.to_owned(), load, hot_share: 1.0, held: None }
    }

    fn vshard(vshard: u32, on: &str, load: f64) -> Movable {
        Movable { subject: Subject::Vshard { vshard }, shard: on.to_owned(), load, held: None }
    }

    fn tenant(id: &str, on: &str, load: f64) -> Movable {
        Movable { subject: Subject::Tenant { tenant: id.to_owned() }, shard: on.to_owned(), load, held: None }
    }

    #[test]
    fn a_balanced_or_idle_fleet_moves_nothing() {
        let policy = Policy::default();
        let within = policy.decide(&[shard("a", 105.0), shard("b", 95.0)], &[vshard(1, "a", 50.0)]);
        assert!(within.choice.is_none());
        assert!(within.reason.starts_with("balanced"), "{}", within.reason);
        // 3x the mean, but only 20 ms/s above it: under the absolute minimum.
        let idle = policy.decide(&[shard("a", 30.0), shard("b", 0.0), shard("c", 0.0)], &[vshard(1, "a", 30.0)]);
        assert!(idle.choice.is_none(), "{:?}", idle);
    }

    #[test]
    fn the_best_vshard_goes_from_the_hottest_to_the_coolest_shard() {
        let policy = Policy::default();
        let shards = [shard("a", 400.0), shard("b", 100.0), shard("c", 150.0), shard("d", 150.0)];
        let movables = [vshard(1, "a", 50.0), vshard(2, "a", 150.0), vshard(3, "a", 200.0), vshard(4, "b", 100.0)];
        let decision = policy.decide(&shards, &movables);
        let choice = decision.choice.expect("a move");
        // Mean 200: vshard 2 (150) brings a to 250 and b to 250, the lowest hottest excess; vshard
        // 3 (200) would make b overfull (300 > 250).
        assert_eq!(choice.subject, Subject::Vshard { vshard: 2 });
        assert_eq!((choice.from.as_str(), choice.to.as_str()), ("a", "b"));
        assert_eq!(choice.predicted, vec![250.0, 250.0, 150.0, 150.0]);
        assert!(decision.reason.contains("move vshard 2"), "{}", decision.reason);
    }

    #[test]
    fn a_move_that_only_swaps_the_hot_shard_is_refused() {
        let policy = Policy::default();
        // Mean 150: moving the one vshard off a makes b carry all of it: only the hot shard's name
        // would change, and b would be overfull.
        let decision = policy.decide(&[shard("a", 300.0), shard("b", 0.0)], &[vshard(1, "a", 300.0)]);
        assert!(decision.choice.is_none(), "{decision:?}");
        assert!(decision.reason.contains("no move improves"), "{}", decision.reason);
    }

    #[test]
    fn a_tenant_carrying_most_of_its_shard_is_isolated() {
        let policy = Policy::default();
        // Mean 175, overfull above 225: the tenant (160 of a's 300) fits on b (0).
        let shards = [shard("a", 300.0), shard("b", 0.0), shard("c", 200.0), shard("d", 200.0)];
        let movables = [vshard(1, "a", 140.0), tenant("hot", "a", 160.0)];
        let choice = policy.decide(&shards, &movables).choice.expect("a move");
        assert_eq!(choice.subject, Subject::Tenant { tenant: "hot".to_owned() });
        assert_eq!(choice.to, "b");
    }

    #[test]
    fn a_shard_overfull_for_less_than_the_sustained_share_of_the_window_sends_nothing() {
        let policy = Policy::default();
        let mut burst = shard("a", 400.0);
        burst.hot_share = 0.3;
        let decision = policy.decide(&[burst, shard("b", 100.0)], &[vshard(1, "a", 100.0)]);
        assert!(decision.choice.is_none(), "{decision:?}");
        assert!(decision.reason.contains("only 30% of the window"), "{}", decision.reason);
        let mut steady = shard("a", 400.0);
        steady.hot_share = 0.8;
        assert!(policy.decide(&[steady, shard("b", 100.0)], &[vshard(1, "a", 100.0)]).choice.is_some());
    }

    #[test]
    fn a_tenant_heavier_than_the_line_is_isolated_when_its_neighbours_gain() {
        let policy = Policy::default();
        // Mean 3.75 (x100), overfull above 4.125: the tenant (600) makes any shard overfull, but
        // on b (200) it leaves a with its neighbours (300) and b at 800 < a's 900 before.
        let shards = [shard("a", 900.0), shard("b", 200.0), shard("c", 200.0), shard("d", 200.0)];
        let movables = [tenant("hot", "a", 600.0), vshard(1, "a", 100.0), vshard(2, "a", 100.0)];
        let choice = policy.decide(&shards, &movables).choice.expect("isolated");
        assert_eq!(choice.subject, Subject::Tenant { tenant: "hot".to_owned() });
        assert_eq!(choice.predicted, vec![300.0, 800.0, 200.0, 200.0]);
        // Where it would only swap the hot shard (b as loaded as a's neighbours), it stays.
        let shards = [shard("a", 900.0), shard("b", 300.0), shard("c", 300.0), shard("d", 300.0)];
        let decision = policy.decide(&shards, &[tenant("hot", "a", 600.0)]);
        assert!(decision.choice.is_none(), "{decision:?}");
    }

    #[test]
    fn a_tenant_making_nine_tenths_of_its_shard_is_isolated_when_its_neighbours_gain() {
        let policy = Policy::default();
        // Mean 28.75, overfull above 78.75. The tenant (90 of a's 100) makes any shard overfull:
        // on b the hottest excess falls from 71.25 to 66.25 only (7%), but its neighbours on a
        // are spared 90 ms/s, and b's tenants (5) carry less than its neighbours (10) did.
        let shards = [shard("a", 100.0), shard("b", 5.0), shard("c", 5.0), shard("d", 5.0)];
        let movables = [tenant("hot", "a", 90.0), vshard(1, "a", 92.0), vshard(2, "a", 8.0)];
        let decision = policy.decide(&shards, &movables);
        let choice = decision.choice.unwrap_or_else(|| panic!("isolated: {}", decision.reason));
        assert_eq!(choice.subject, Subject::Tenant { tenant: "hot".to_owned() });
        assert_eq!((choice.from.as_str(), choice.to.as_str()), ("a", "b"));
        assert_eq!(choice.predicted, vec![10.0, 95.0, 5.0, 5.0]);
        // Onto shards that carry more than its neighbours do, it would only trade them: it stays.
        let shards = [shard("a", 100.0), shard("b", 20.0), shard("c", 20.0), shard("d", 20.0)];
        let decision = policy.decide(&shards, &movables);
        assert!(decision.choice.is_none(), "{decision:?}");
        assert!(decision.reason.contains("neighbours"), "{}", decision.reason);
    }

    #[test]
    fn a_vshard_that_carries_nothing_now_is_never_chosen() {
        let policy = Policy { min_improvement: 0.0, min_load_ms_per_s: 0.0, ..Policy::default() };
        let shards = [shard("a", 100.0), shard("b", 0.0)];
        let decision = policy.decide(&shards, &[vshard(7, "a", 0.0)]);
        assert!(decision.choice.is_none(), "{decision:?}");
    }

    /// A proposal to move vshard 1 (100) from a to b, against what the policy decides now.
    fn keeps(policy: &Policy, shards: &[ShardInput], movables: &[Movable]) -> Result<Choice, String> {
        let best = policy.decide(shards, movables);
        policy.keeps(shards, movables, &best, &Subject::Vshard { vshard: 1 }, "b")
    }

    #[test]
    fn a_standing_proposal_stands_while_valid_and_within_the_margin_of_the_best_choice() {
        let policy = Policy::default();
        // Mean 200, the hottest excess 200 (a), the margin 10% of it: 20 ms/s. Vshard 2 (105)
        // is the best choice (a predicted at 295); the proposed vshard 1 (100) leaves a at 300.
        let shards = [shard("a", 400.0), shard("b", 100.0), shard("c", 150.0), shard("d", 150.0)];
        let near = [vshard(1, "a", 100.0), vshard(2, "a", 105.0), vshard(3, "a", 40.0)];
        assert_eq!(policy.decide(&shards, &near).choice.unwrap().subject, Subject::Vshard { vshard: 2 });
        let kept = keeps(&policy, &shards, &near).expect("a near-equal alternative does not unseat it");
        assert_eq!((kept.subject, kept.to.as_str()), (Subject::Vshard { vshard: 1 }, "b"));
        assert_eq!(kept.predicted, vec![300.0, 200.0, 150.0, 150.0]);
        // A clearly better choice (vshard 4: a at 260, 40 ms/s less excess) unseats it.
        let better = [vshard(1, "a", 100.0), vshard(4, "a", 140.0)];
        assert!(keeps(&policy, &shards, &better).is_err());
        // So does its source no longer being overfull, its target no longer receiving, its vshard
        // being held, or its move making the target overfull.
        let cooled = [shard("a", 190.0), shard("b", 100.0), shard("c", 150.0), shard("d", 150.0)];
        assert!(keeps(&policy, &cooled, &near).is_err());
        let mut broken = shard("b", 100.0);
        broken.held = Some("its breaker is open".to_owned());
        let shards_broken = [shard("a", 400.0), broken, shard("c", 150.0), shard("d", 150.0)];
        assert!(keeps(&policy, &shards_broken, &near).is_err());
        let mut claimed = near.clone();
        claimed[0].held = Some("is claimed by job j".to_owned());
        assert!(keeps(&policy, &shards, &claimed).is_err());
        let fuller = [shard("a", 400.0), shard("b", 180.0), shard("c", 110.0), shard("d", 110.0)];
        assert!(keeps(&policy, &fuller, &near).is_err(), "b would carry 280, above the line 250");
    }

    #[test]
    fn nothing_held_moves_and_no_held_shard_sends_or_receives() {
        let policy = Policy::default();
        let mut cooling = vshard(1, "a", 150.0);
        cooling.held = Some("moved 5 min ago (cooldown 30 min)".to_owned());
        let decision = policy.decide(&[shard("a", 400.0), shard("b", 100.0)], &[cooling]);
        assert!(decision.choice.is_none());
        assert!(decision.reason.contains("cooldown"), "{}", decision.reason);

        let mut broken = shard("b", 0.0);
        broken.held = Some("its breaker is open".to_owned());
        let shards = [shard("a", 400.0), broken, shard("c", 200.0)];
        let choice = policy.decide(&shards, &[vshard(1, "a", 40.0)]).choice.expect("a move");
        assert_eq!(choice.to, "c", "never onto a shard whose breaker is open");

        let mut draining = shard("a", 400.0);
        draining.held = Some("it is draining".to_owned());
        let decision = policy.decide(&[draining, shard("b", 100.0)], &[vshard(1, "a", 100.0)]);
        assert!(decision.choice.is_none());
        assert!(decision.reason.contains("draining"), "{}", decision.reason);
    }
}
