//! Jobs that move data between shards while traffic flows (DESIGN.md §5, "Moving data"): the
//! copy of rows from shard to shard ([`copy`]), what every such job shares ([`job`]: phases,
//! lease, retries), tenant, vshard and range moves ([`mover`]), changes of a collection's
//! distribution ([`redistribute`]), the rebalance planner ([`rebalance`], pure) and the jobs
//! that carry out a rebalance or a drain ([`rebalancer`]).
//!
//! The highest room: it uses the router and the topology below it to route and to switch the
//! map, the catalog for its job rows and claims, and the stores for the rows it copies. Nothing
//! below it knows it exists.

pub mod copy;
pub mod job;
pub mod mover;
pub mod progress;
pub mod rebalance;
pub mod rebalancer;
pub mod redistribute;
