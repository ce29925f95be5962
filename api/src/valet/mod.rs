//! The Valet Key pattern's work below its routes (`routes/valet.rs`, `routes/valet_keys.rs`,
//! `routes/admin/signing_keys.rs`). The canonical form, signing and verification themselves are
//! the `valet` crate's (no I/O there); this room adds the catalog, the blobs and the counters.
//!
//! - [`service`]: issuing a grant, and answering a request to `/valet/...` (verify its URL, run
//!   the one blob transfer it grants, count and audit);
//! - [`signing_keys`]: this instance's key ring, filled from the catalog, with rotation and
//!   retirement written through;
//! - [`checks`]: the catalog's answer for a grant, kept briefly, dropped when revocations move on;
//! - [`refusals`]: the refusal counter, and the sampling that keeps refusals out of the audit log;
//! - [`audit`]: the bounded, batching writer of the valet audit rows.
//!
//! Must not know: which URLs lead here (the routes'), how a blob is stored or served (the
//! [`crate::blobs`] room's), or the plumbing beyond the bulkhead a transfer is counted in.

pub mod audit;
pub mod checks;
pub mod refusals;
pub mod service;
pub mod signing_keys;
