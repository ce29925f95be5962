//! Black-box HTTP stories against a real shardgate server. One test binary (fast to link); each
//! module is one area of the API. Stories in `shardgate_tests::conformance!` run on SQLite and on
//! PostgreSQL.

mod admin_shards;
mod admin_tenants;
mod audit;
mod auth;
mod blobs;
mod breaker;
mod bulkheads;
mod cache;
mod connection_budget;
mod connections;
mod distribution;
mod epoch_header;
mod gatekeeper;
mod https;
mod incarnations;
mod indexes;
mod isolation;
mod key_sets;
mod listing;
mod malformed;
mod moves;
mod operations;
mod pg_tls;
mod placement;
mod range_moves;
mod rebalance;
mod records;
mod redistribution;
mod restart;
mod routing;
mod shard_states;
mod throttling;
mod timeouts;
mod valet;
