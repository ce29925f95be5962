//! Refused valet requests: the counter by refusal code (`shardgate_valet_refusals_total`), and
//! the sampling that keeps them from growing the audit log.
//!
//! Anyone can send a request to `/valet/...`, so refusals are anonymous and unbounded in number.
//! Every refusal is counted; only the first of each refusal code in each minute gets an audit row
//! of its own (`valet.refused`, with its path and request id). The others of that minute are
//! counted, and once the minute is over one row says how many there were
//! (`valet.refused`, target `<n> more <code> refusals in the minute from <time>`). So refusals
//! add at most two rows per code and minute to the audit log, however many arrive. The codes are
//! a closed set, so the sampler's state is bounded too.

use hashbrown::HashMap;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use shardgate_shard_router::catalog::Audit;

use crate::wire::timestamps::rfc3339;

/// Labels of the refusal counter: the refusal's code (a closed set: the codes are `'static`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// The refusal's code.
    pub code: &'static str,
}

/// Refused valet requests, by code.
pub type RefusalCounter = Family<RefusalLabels, Counter>;

const MINUTE_MS: i64 = 60_000;

/// The refusals of one code in the current minute beyond its first.
#[derive(Debug, Clone, Copy)]
struct Window {
    minute: i64,
    more: u64,
}

/// Which refusals get an audit row of their own, and the summary rows of the rest.
#[derive(Debug, Default)]
pub struct RefusalSampler {
    windows: Mutex<HashMap<&'static str, Window>>,
}

impl RefusalSampler {
    /// Notes a refusal with `code` at `now_ms`: whether it gets a row of its own (the first of
    /// its code in its minute), and the summary rows of minutes that ended before it.
    pub fn admit(&self, code: &'static str, now_ms: i64) -> (bool, Vec<Audit>) {
        let minute = now_ms.div_euclid(MINUTE_MS);
        let mut windows = self.windows.lock();
        match windows.get_mut(code) {
            Some(window) if window.minute == minute => {
                window.more += 1;
                (false, Vec::new())
            }
            Some(window) => {
                let ended = summary(code, *window);
                *window = Window { minute, more: 0 };
                (true, ended.into_iter().collect())
            }
            None => {
                windows.insert(code, Window { minute, more: 0 });
                (true, Vec::new())
            }
        }
    }

    /// The summary rows of the minutes over at `now_ms` (or of every minute, with `None`: on
    /// shutdown); each is given once.
    pub fn ended(&self, now_ms: Option<i64>) -> Vec<Audit> {
        let current = now_ms.map(|ms| ms.div_euclid(MINUTE_MS));
        let mut windows = self.windows.lock();
        let mut rows = Vec::new();
        windows.retain(|code, window| {
            if current.is_some_and(|current| window.minute >= current) {
                return true;
            }
            rows.extend(summary(code, *window));
            false
        });
        rows
    }
}

/// The row that counts a minute's refusals of `code` beyond the first (none if there were none).
fn summary(code: &'static str, window: Window) -> Option<Audit> {
    (window.more > 0).then(|| Audit {
        actor: "valet".into(),
        tenant: None,
        action: "valet.refused",
        target: format!(
            "{} more {code} refusals in the minute from {}, not written one by one",
            window.more,
            rfc3339(window.minute * MINUTE_MS)
        ),
        request_id: String::new(),
        client_request_id: None,
        client_address: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_code_and_minute_and_a_count_of_the_rest() {
        let sampler = RefusalSampler::default();
        let start = 10 * MINUTE_MS;
        let (own, ended) = sampler.admit("valet_bad_signature", start);
        assert!(own && ended.is_empty(), "the first of its minute has its own row");
        for i in 1..=99 {
            assert!(!sampler.admit("valet_bad_signature", start + i).0, "sampled out");
        }
        assert!(sampler.admit("valet_expired", start + 100).0, "another code has its own row");
        assert!(sampler.ended(Some(start + 500)).is_empty(), "the minute is not over");
        let rows = sampler.ended(Some(start + MINUTE_MS));
        assert_eq!(rows.len(), 1, "valet_expired had no more: no summary");
        assert!(rows[0].target.starts_with("99 more valet_bad_signature refusals"), "{}", rows[0].target);
        assert!(sampler.ended(Some(start + 2 * MINUTE_MS)).is_empty(), "given once");
        // A refusal in a later minute gets a row again, and carries the earlier minute's count.
        sampler.admit("valet_used", start);
        sampler.admit("valet_used", start + 1);
        let (own, ended) = sampler.admit("valet_used", start + MINUTE_MS);
        assert!(own);
        assert!(ended[0].target.starts_with("1 more valet_used"), "{:?}", ended);
    }
}
