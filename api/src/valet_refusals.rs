//! The counter of refused valet requests, by refusal code (`shardgate_valet_refusals_total`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Labels of the refusal counter: the refusal's code (a closed set: the codes are `'static`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// The refusal's code.
    pub code: &'static str,
}

/// Refused valet requests, by code.
pub type RefusalCounter = Family<RefusalLabels, Counter>;
