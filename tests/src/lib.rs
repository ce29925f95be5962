//! # shardgate-tests
//!
//! Support for the black-box HTTP tests in `tests/tests/`: spawn a real shardgate server on port 0
//! (on SQLite or on PostgreSQL), mint tokens for it, call it over HTTP and look into its shard
//! databases directly when a test needs to prove where data landed.
//!
//! Every test gets its own server, data directory and (on PostgreSQL) its own databases, which
//! are dropped when the [`TestApp`] is dropped, even when the test panics. Nothing is shared
//! between tests.
//!
//! The [`conformance!`] macro turns one `async fn story(app: TestApp)` into a test per engine, so
//! the same suite runs on both.
//!
//! One module per purpose; everything a test uses is re-exported here:
//! - [`app`]: [`TestApp`], a server of a test's own (spawn, restart, peers, its storage);
//! - [`server`]: [`RunningServer`], the gateway or a gatekeeper running in a task;
//! - [`backend`]: the engines, the PostgreSQL databases a test creates, direct shard access;
//! - [`tokens`]: the trusted HS256 issuer and the tokens it mints;
//! - [`http`]: the client and the request builder every call goes through;
//! - [`records`] and [`admin`]: the tenant's and the administrator's calls; [`blobs`]: a
//!   tenant's valet keys, and the staged chunks of its uploads;
//! - [`assertions`]: status, JSON, problem and header assertions;
//! - [`eventually`]: the one bounded wait for background work;
//! - [`browser`]: a headless Chromium over WebDriver, for the console's tests;
//! - [`metrics`]: Prometheus values; [`redis`]: a Redis process to stop and pause;
//!   [`pg_cluster`]: a PostgreSQL cluster to kill, restart, freeze and thaw;
//! - [`conformance`]: the [`conformance!`] macro;
//! - [`linearizability`]: the [`History`] load-test clients record and the per-key
//!   linearizability [`check`](linearizability::check) of it.

pub mod admin;
pub mod app;
pub mod assertions;
pub mod backend;
pub mod blobs;
pub mod browser;
pub mod clock;
pub mod conformance;
pub mod eventually;
pub mod http;
pub mod key_server;
pub mod linearizability;
pub mod metrics;
pub mod pg_cluster;
pub mod records;
pub mod redis;
pub mod server;
pub mod tls;
pub mod tokens;

pub use app::{TestApp, test_config};
pub use assertions::{
    assert_problem_shape, assert_request_id, clip, etag, expect_any_problem, expect_json, expect_problem,
    expect_unauthorized, is_rfc3339, rfc3339_order_key,
};
pub use backend::{Backend, POSTGRES_SERVER, PgDatabases, SEEDED_SHARDS, VSHARD_COUNT, open_shard};
pub use clock::TestClock;
pub use eventually::eventually;
pub use http::{encode_segment, get_json, http_client};
pub use key_server::KeyServer;
pub use linearizability::{History, Verdict};
pub use metrics::metric;
pub use pg_cluster::{GATEWAY_ROLE, PgCluster, PgTlsSetup, ServerConnection};
pub use records::{record_path, records_path};
pub use redis::RedisServer;
pub use server::{RunningServer, free_port};
pub use tls::{Issued, TestCa};
pub use tokens::{ISSUER, SECRET, hs256_issuer, issuer_named, mint, mint_for};
