//! # shardgate-api
//!
//! The HTTP service and the `shardgate` binary: routes, extractors, the problem+json error
//! mapping, the OpenAPI document, metrics and health endpoints, configuration and the command
//! line. It turns HTTP into calls on `shard-router` (storage and routing), `index-tables`
//! (secondary indexes) and `gatekeeper` (authentication), and is the only crate that turns
//! errors into responses.
//!
//! Find the code for a URL in [`routes`].

pub mod admission;
pub mod app;
pub mod blob_service;
pub mod bulkhead;
pub mod chunk_cache;
pub mod cli;
pub mod config;
pub mod config_error;
pub mod connections;
pub mod deadline;
pub mod edge;
pub mod embedded;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod fan_out_budget;
pub mod fault_points;
pub mod front_door;
pub mod gatekeeper_proxy;
pub mod json_newline;
pub mod metrics;
pub mod openapi;
pub mod pagination;
pub mod preconditions;
pub mod record_body;
pub mod routed_epoch;
pub mod routes;
pub mod shard_metrics;
pub mod signing_keys;
pub mod startup;
pub mod telemetry;
pub mod timestamps;
pub mod tls;
pub mod transfer_watch;
pub mod valet_audit;
pub mod valet_checks;
pub mod valet_refusals;
pub mod valet_service;

pub use config::Config;
pub use startup::{Application, openapi_document};
