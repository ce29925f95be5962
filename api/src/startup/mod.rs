//! Configuration and start-up: what runs once, before the first request, and the assembly of
//! every other room into a running process.
//!
//! - [`cli`]: the `shardgate` command line (`serve`, `gatekeeper`, `migrate`, `token`, `openapi`,
//!   `probe`, `admin`, which runs [`crate::cli`], and `check`);
//! - [`check`]: `shardgate check`, the consistency check of a restored fleet and its report;
//! - [`embedded`]: the embedded default's data directory (its generated secret, its lock);
//! - [`application`]: the gateway: builds the state, binds the listeners, assembles the routes
//!   and the plumbing around them, serves until shut down;
//! - [`gatekeeper_proxy`]: the standalone gatekeeper, a front of its own that forwards to a
//!   trusted gateway;
//! - [`instance_report`]: this instance's row in the instance registry, written periodically;
//! - [`listeners`]: the listeners beside the main one (the valet endpoint's, the admin plane's),
//!   bound and served together;
//! - [`probe`]: `shardgate probe`, one GET of a probe URL for images without `curl`.
//!
//! The top room: it may use every other, and no other room uses it. The configuration it reads
//! is the lowest room, [`crate::config`].

pub mod application;
pub mod check;
pub mod cli;
pub mod embedded;
pub mod gatekeeper_proxy;
pub mod instance_report;
pub mod listeners;
pub mod probe;
