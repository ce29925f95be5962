//! # shardgate-api
//!
//! The HTTP service and the `shardgate` binary: routes, extractors, the problem+json error
//! mapping, the OpenAPI document, metrics and health endpoints, configuration and the command
//! line. It turns HTTP into calls on `shard-router` (storage and routing) and `gatekeeper`
//! (authentication), and is the only crate that turns errors into responses.
//!
//! Find the code for a URL in [`routes`].

pub mod app;
pub mod blobs;
pub mod cli;
pub mod config;
pub mod embedded;
pub mod error;
pub mod extract;
pub mod gate;
pub mod gatekeeper;
pub mod indexing;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod state;
pub mod telemetry;

pub use app::{Application, openapi_document};
pub use config::Config;
