//! The server's plumbing: what every request passes through before its handler and after it, on
//! each front of shardgate (the gateway, its valet listener and the standalone gatekeeper).
//!
//! In the order a request meets it:
//! 1. [`connections`]: the accept loop under the process's connection cap, the header and idle
//!    deadlines, and the request heads hyper refuses answered as problems; with
//!    `proxy_protocol`, a trusted proxy's PROXY header ([`proxy_protocol`]) read first; each
//!    request's client address ([`client_address`]) from its peer and what trusted proxies say;
//! 2. [`tls`]: on a listener with `tls`, the handshake, in the connection's task and within its
//!    header deadline (certificates reloaded from disk when they change; their expiry read by
//!    [`certificate_expiry`]);
//! 3. [`cross_origin`]: CORS (added by start-up around the edge), then [`edge`]: load shedding, the request id,
//!    the request's span, the panic guard and the request metrics;
//! 4. [`front_door`]: the path rules, then
//! 5. [`admission`]: the bearer token, verified once, and the caller's rate limit (behind a
//!    standalone gatekeeper, its internal credential instead);
//! 6. [`bulkhead`]: a slot among the caller's compartment's requests in progress,
//! 7. [`transfer_watch`]: which holds that slot until the response has been sent, and cuts off a
//!    download its client stopped taking; [`usage_tally`] counts a tenant's request and the bytes
//!    of its bodies for its daily usage;
//! 8. [`deadline`]: the route group's deadline (the handler, in [`crate::routes`], runs inside it);
//! 9. [`extract`]: the handler's extractors, whose rejections are problem+json, and the caller
//!    (the token [`admission`] verified, or verified now);
//! 10. [`fan_out_budget`]: the tenant's budget of shard reads, taken by a listing of a distributed
//!     collection before it fans out.
//!
//! Not stages: [`body_arrival`], whether a request's body has arrived in full (asked by the
//! connection when it answers and by the deadline when it expires), and [`fault_points`], where a
//! crash test stops the process on the request path.
//!
//! Must not know: the routes, the valet and blob services, or how start-up assembles these
//! pieces. The problems it answers are [`crate::wire::error`]'s; its limits come from the
//! configuration ([`crate::config`]) and its counters go to [`crate::observability`].

pub mod admission;
pub mod body_arrival;
pub mod bulkhead;
pub mod certificate_expiry;
pub mod client_address;
pub mod connections;
pub mod cross_origin;
pub mod deadline;
pub mod edge;
pub mod extract;
pub mod fan_out_budget;
pub mod fault_points;
pub mod front_door;
pub mod proxy_protocol;
pub mod tls;
pub mod transfer_watch;
pub mod usage_tally;
