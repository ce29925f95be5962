//! One shard database and what is stored on it: the connection pools ([`db`], with TLS as
//! libpq takes it: [`pg_tls`]), each database's health (deadlines, bulkhead, breaker:
//! [`health`]), the load its statements put on it ([`meter`]), what a database holds
//! ([`holdings`]) and what each tenant stores on it, kept by the database's own triggers
//! ([`usage`]), the batching of point operations ([`batch`]), the write fences ([`shard`]),
//! records ([`records`]) and blobs ([`blobs`]), and what makes a database safe to be a shard
//! ([`registration`]), passwords kept in files ([`password_file`]), the trace context that
//! sampled statements carry ([`sql_comment`]), and reads from standbys within a bound of lag
//! ([`replicas`]). The catalog's database is opened with the same
//! [`db::Database`].
//!
//! It knows nothing of the catalog, the router or the jobs that move data: a store is handed a
//! pool, a shard id and the epoch a request was routed on, and answers for that one database.
//! The shard map's values ([`crate::map`]) are the only room below it.

pub mod batch;
pub mod blobs;
pub mod db;
pub mod health;
pub mod holdings;
pub mod hosts;
pub mod meter;
pub mod password_file;
pub mod pg_tls;
pub mod records;
pub mod registration;
pub mod replicas;
pub mod shard;
pub mod sql_comment;
pub mod usage;
