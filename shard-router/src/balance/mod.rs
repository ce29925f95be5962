//! Where the fleet's load lands, and the balancer that acts on it.
//!
//! - [`windows`]: each instance stores the windows its load meter
//!   ([`crate::storage::meter`]) closed in the catalog, and keeps the table to its retention;
//! - [`picture`]: the windows read back, summed over instances: by shard, vshard and tenant,
//!   averaged or as time series, and the heat map of vshards by time;
//! - [`policy`]: the balancer's scaling logic, pure: which move (a vshard, or a heavy tenant
//!   alone) lowers the hottest shard's excess over the mean enough, or why none does;
//! - [`plan`]: the policy over the current load picture, with what may not move held back and the
//!   load attributed to where it will land (the `[balancer]` section; read-only);
//! - [`request_meter`] and [`request_health`]: request health (requests, errors, latency
//!   histograms per route and shard and window), counted on the request path without a lock,
//!   flushed with the load windows, and read back summed over instances;
//! - [`runner`]: the balancer itself: one instance at a time (a lease) runs the plan every
//!   interval and records, proposes or starts the move by its mode, with cooldowns and limits.
//!
//! It is the highest room: it reads the catalog and the router's map. Nothing below it knows it.

pub mod picture;
pub mod plan;
pub mod policy;
pub mod request_health;
pub mod request_meter;
pub mod runner;
pub mod windows;

pub use picture::{HeatMap, HeatRow, LoadPicture, Span, heat_map, picture};
pub use plan::{BalancerConfig, Context, Mode, Plan, plan};
pub use request_health::{RequestHealth, RequestSeries, request_health};
pub use request_meter::RequestMeter;
pub use runner::{Balancer, RunDecision};
pub use windows::LoadFlusher;
