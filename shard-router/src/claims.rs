//! What a running job claims in the catalog's `job_claims` (one job per subject at a time), and
//! what a claim means in a sentence (the detail of [`crate::error::Error::JobConflict`]).

use crate::ids::TenantId;

/// What a job owns, as stored in `job_claims`: a tenant.
pub fn tenant_subject(tenant: &TenantId) -> String {
    format!("tenant:{tenant}")
}

/// What a rebalance (or drain) job claims: one at a time. A change of a collection's
/// distribution that relies on the vshards staying where they are claims it too.
pub const REBALANCE_SUBJECT: &str = "rebalance";

/// What a job owns, as stored in `job_claims`: a vshard (its index entries and the unpinned
/// tenants it places; no tenant of it is created or deleted while it is claimed).
pub fn vshard_subject(vshard: u32) -> String {
    format!("vshard:{vshard}")
}

/// What job `job` holding claim `subject` (as stored in `job_claims`) means, in a sentence: a
/// tenant or a vshard is being moved; the `rebalance` claim is a rebalance or drain running.
pub(crate) fn held_by(subject: &str, job: &str) -> String {
    if subject == REBALANCE_SUBJECT {
        return format!("a rebalance or drain is running (job {job})");
    }
    match subject.split_once(':') {
        Some((kind @ ("tenant" | "vshard"), id)) => format!("{kind} {id} is being moved by job {job}"),
        _ => format!("{subject} is held by job {job}"),
    }
}
