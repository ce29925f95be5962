//! # shardgate-api
//!
//! The HTTP service and the `shardgate` binary: routes, extractors, the problem+json error
//! mapping, the OpenAPI document, metrics and health endpoints, configuration and the command
//! line. It turns HTTP into calls on `shard-router` (storage and routing), `index-tables`
//! (secondary indexes) and `gatekeeper` (authentication), and is the only crate that turns
//! errors into responses.
//!
//! Its rooms (a request meets [`server`] first, then its handler in [`routes`], which uses the
//! rooms below it):
//! - [`server`]: the plumbing every request passes, from the socket to the handler's deadline
//!   (connections, TLS, the edge, the front door, admission, bulkheads, deadlines);
//! - [`routes`]: one module per URL family; find the code for a URL there;
//! - [`wire`]: what requests and answers look like (errors as problem+json, extractors, bodies,
//!   headers, the OpenAPI document);
//! - [`valet`] and [`blobs`]: the services below the valet and blob routes;
//! - [`app`]: the state every handler shares;
//! - [`observability`]: logs and metrics;
//! - [`startup`]: configuration, the command line, and the assembly of the rest into a running
//!   gateway or standalone gatekeeper;
//! - [`cli`]: `shardgate admin`, the operator's command line: a client of the admin API over
//!   HTTP, using no other room.

pub mod app;
pub mod blobs;
pub mod cli;
pub mod config;
pub mod observability;
pub mod routes;
pub mod server;
pub mod startup;
pub mod valet;
pub mod wire;

pub use config::Config;
pub use startup::application::{Application, openapi_document};
pub use startup::gatekeeper_proxy::Gatekeeper;
