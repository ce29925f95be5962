//! Configuration and start-up: what runs once, before the first request, and the assembly of
//! every other room into a running process.
//!
//! - [`cli`]: the `shardgate` command line (`serve`, `gatekeeper`, `migrate`, `token`, `openapi`);
//! - [`config`]: the configuration (defaults, a TOML file, `SHARDGATE_*` variables), and
//!   [`config_error`], its errors in the user's own words;
//! - [`embedded`]: the embedded default's data directory (its generated secret, its lock);
//! - [`application`]: the gateway: builds the state, binds the listeners, assembles the routes
//!   and the plumbing around them, serves until shut down;
//! - [`gatekeeper_proxy`]: the standalone gatekeeper, a front of its own that forwards to a
//!   trusted gateway.
//!
//! The top room: it may use every other. No other room uses it, except [`config`], which the
//! state, the plumbing and the logging read.

pub mod application;
pub mod cli;
pub mod config;
pub mod config_error;
pub mod embedded;
pub mod gatekeeper_proxy;
