//! The crate's one error type: everything that can go wrong below the HTTP layer.

use crate::ids::{CollectionName, ShardId, TenantId};

/// Everything that can go wrong below the HTTP layer. Each variant documents the status the API
/// answers with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404 `tenant_not_found`.
    #[error("tenant not found")]
    TenantNotFound,
    /// 409 `tenant_exists`.
    #[error("tenant {0} already exists")]
    TenantExists(TenantId),
    /// 404 `shard_not_found`.
    #[error("shard {0} not found")]
    ShardNotFound(ShardId),
    /// 422 `unknown_shard`: a request body names a shard that is not registered.
    #[error("shard {0} is not registered")]
    UnknownShard(ShardId),
    /// 409 `shard_exists`.
    #[error("shard {0} already exists")]
    ShardExists(ShardId),
    /// 409 `shard_in_use`.
    #[error("shard {shard} still owns {vshards} vshards and {pinned_tenants} pinned tenants")]
    ShardInUse {
        /// The shard.
        shard: ShardId,
        /// vshards it owns.
        vshards: u64,
        /// Tenants pinned to it.
        pinned_tenants: u64,
    },
    /// 422 `shard_unreachable`: a shard being registered could not be connected to or migrated.
    #[error("shard {shard} could not be reached: {reason}")]
    ShardUnreachable {
        /// The shard.
        shard: ShardId,
        /// What failed (never contains the URL).
        reason: String,
    },
    /// 422 `shard_tls_failed` at shard registration; at start-up (the catalog, a configured
    /// shard) it stops the start. TLS to a PostgreSQL database cannot be set up (a file named by
    /// `sslrootcert`, `sslcert` or `sslkey` cannot be read or used) or failed (the server offers
    /// no TLS under `sslmode=require` or stricter, its certificate is not from a trusted CA or not
    /// for the host name, it refused or asked for a client certificate). See [`crate::storage::pg_tls`].
    #[error("TLS to {target} failed: {reason}")]
    Tls {
        /// `PostgreSQL`, `the catalog` or `shard <id>`.
        target: String,
        /// What failed and what to fix (never contains the URL).
        reason: String,
    },
    /// 422 `unsafe_shard_url`: a well-formed URL that may not be a shard (an in-memory SQLite
    /// database; a SQLite file while the catalog is PostgreSQL). See [`crate::storage::registration`].
    #[error("{0}")]
    UnsafeShardUrl(String),
    /// 409 `shard_database_claimed`: the database already carries another shard's identity
    /// marker (see [`crate::storage::registration`]).
    #[error("the database of shard {shard} is already {holder}")]
    ShardDatabaseClaimed {
        /// The shard being registered (or opened).
        shard: ShardId,
        /// Whose marker the database carries, in words.
        holder: String,
    },
    /// 409 `shard_identity_mismatch`: a new URL for a registered shard reaches a database that
    /// is not that shard: it carries no identity marker, another shard's, or another catalog's
    /// (see [`crate::storage::registration`]). Nothing was changed.
    #[error("the new URL of shard {shard} reaches a database that is not shard {shard}: {found}")]
    ShardIdentityMismatch {
        /// The shard whose URL was to change.
        shard: ShardId,
        /// What the database reached carries, in words.
        found: String,
    },
    /// 503 `shard_unavailable`: this instance does not use the shard, because its database
    /// carries another shard's identity marker (found when the instance opened it).
    #[error("shard {shard} is not used: {reason}")]
    ShardQuarantined {
        /// The shard.
        shard: ShardId,
        /// Why, in words.
        reason: String,
    },
    /// 503 `shard_offline`.
    #[error("shard {0} is offline")]
    ShardOffline(ShardId),
    /// 503 `shard_read_only`.
    #[error("shard {0} is read-only")]
    ShardReadOnly(ShardId),
    /// 503 `no_shards`: the vshard table is empty.
    #[error("no shard is registered yet")]
    NoShards,
    /// The write was routed on a shard map older than the shard's fence; the caller refreshes
    /// its map and retries once. 503 `stale_shard_map` if it still happens after that.
    #[error("shard {0} refused a write routed on an outdated shard map")]
    StaleMap(ShardId),
    /// 404 `record_not_found`.
    /// 503 `tenant_moving` (if it reaches the API; the router waits for the new shard first). The
    /// tenant is moving away from this shard: its writes are refused here.
    #[error("tenant {tenant} is moving off shard {shard}")]
    TenantFenced {
        /// The shard it is leaving.
        shard: ShardId,
        /// The tenant.
        tenant: TenantId,
    },
    /// 503 `tenant_moving` (if it reaches the API; the router looks up the new shard first). The
    /// tenant has moved away from this shard: what is left here is an old copy.
    #[error("tenant {tenant} has moved off shard {shard}")]
    TenantMoved {
        /// The shard it left.
        shard: ShardId,
        /// The tenant.
        tenant: TenantId,
    },
    /// 503 `tenant_moving` (if it reaches the API; index writes wait for the new shard first).
    /// The index entries a vshard places are moving away from this shard: their writes are
    /// refused here.
    #[error("the index entries of vshard {vshard} are moving off shard {shard}")]
    VshardFenced {
        /// The shard it is leaving.
        shard: ShardId,
        /// The vshard.
        vshard: u32,
    },
    /// 503 `tenant_moving` (if it reaches the API: a request waits for the new shard first).
    /// The key range of a range-distributed collection a record belongs to is moving away
    /// from this shard (its writes are refused here), or has moved (its reads too).
    #[error("a key range of collection {collection} of tenant {tenant} is moving off shard {shard}")]
    RangeFenced {
        /// The shard it is leaving.
        shard: ShardId,
        /// The tenant.
        tenant: TenantId,
        /// The collection.
        collection: CollectionName,
    },
    /// 503 `tenant_moving` (if it reaches the API: a request waits for the new map first). The
    /// collection is changing its distribution and its records are leaving this shard's table
    /// of the old layout (writes refused here), or have left it (reads too).
    #[error("collection {collection} of tenant {tenant} is changing its distribution (shard {shard})")]
    CollectionFenced {
        /// The shard refusing.
        shard: ShardId,
        /// The tenant.
        tenant: TenantId,
        /// The collection.
        collection: CollectionName,
    },
    /// 503 `tenant_moving` with `Retry-After`. A request waited longer than the cut-over window
    /// (`moves.cutover_wait`) for a moving tenant's new shard.
    #[error("tenant {0} is being moved to another shard; retry shortly")]
    TenantMoving(TenantId),
    /// A shard of a fan-out did not answer within `storage.fan_out_deadline` (reported in the
    /// listing's failures; 503 `shard_unavailable` if the caller asked for a strict answer).
    #[error("the shard did not answer within {0:?}")]
    FanOutTimeout(std::time::Duration),
    /// 409 `shard_in_use`: a range of a range-distributed collection lives on the shard.
    #[error("{0}")]
    ShardHoldsRange(String),
    /// 409 `distribution_refused`: a collection's distribution cannot be changed as asked.
    #[error("{0}")]
    DistributionRefused(String),
    /// 409 `job_conflict`. Another job owns what a new job would move.
    #[error("{}; wait for it to end or cancel it", crate::claims::held_by(subject, job))]
    JobConflict {
        /// What both jobs want (`tenant:<id>`).
        subject: String,
        /// The job holding it.
        job: String,
    },
    /// A job's runner lost its lease (another instance took the job over, or it ended): the
    /// runner stops.
    #[error("job {0} is no longer run by this instance")]
    JobLost(String),
    /// 409 `move_refused`. A move that cannot be made (to the shard it is on, to a shard that
    /// does not take writes, past its cut-over for a cancellation).
    #[error("{0}")]
    MoveRefused(String),
    /// 404 `proposal_not_found`. No balancer run of this id is recorded.
    #[error("balancer proposal {0} not found")]
    ProposalNotFound(i64),
    /// 409 `proposal_settled`. The proposal was approved, expired or failed already.
    #[error("balancer proposal {id} is {state} already: {why}")]
    ProposalSettled {
        /// Its id.
        id: i64,
        /// Its state.
        state: String,
        /// Why it was settled so.
        why: String,
    },
    /// 409 `proposal_stale`. The load the proposal was based on has changed: the balancer
    /// would not choose it now (the proposal expires).
    #[error("{0}")]
    ProposalStale(String),
    /// 409 `balancer_off` / `balancer_elsewhere`: the balancer cannot run here now (it is off, or
    /// another instance holds its lease).
    #[error("{reason}")]
    BalancerUnavailable {
        /// Whether it is off (otherwise another instance runs it).
        off: bool,
        /// Why, in words.
        reason: String,
    },
    #[error("record not found")]
    RecordNotFound,
    /// 409 `quota_exceeded`: the write would take the tenant's usage over one of its quotas;
    /// nothing was changed. `used` counts what other instances may still let through.
    #[error(
        "the write would take the tenant's {} over its quota: {requested} more asked, {used} of {limit} in use",
        quota
    )]
    QuotaExceeded {
        /// Which quota (`records`, `record_bytes`, `blobs`, `blob_bytes`, `index_entries`).
        quota: &'static str,
        /// Its limit.
        limit: u64,
        /// What the tenant uses of it (with what instances may still let through).
        used: u64,
        /// What the write would add.
        requested: u64,
    },
    /// 503 `shard_unavailable`: a write that grows a tenant's usage cannot be checked against its
    /// quotas, because a shard's part of the usage cannot be read.
    #[error(
        "the tenant's usage on shard {0} cannot be read, so a write that grows it cannot be checked against its quotas"
    )]
    UsageUnknown(ShardId),
    /// 412 `precondition_failed`.
    #[error("the record's version does not match the precondition")]
    PreconditionFailed,
    /// 409 `write_contention`: too many concurrent writers on one record.
    #[error("too many concurrent writes to this record; retry")]
    WriteContention,
    /// 404 `blob_not_found`; also a chunk read of a blob that was replaced or deleted and whose
    /// chunks have been collected since it was looked up (mid-stream: the response is cut off).
    #[error("blob not found")]
    BlobNotFound,
    /// 409 `upload_closed`: a chunk, commit or abort for an upload that was already committed,
    /// aborted or collected as abandoned.
    #[error("the upload is no longer open")]
    UploadClosed,
    /// 500 `internal`: the caller broke the blob chunk protocol (a chunk out of order, empty,
    /// larger than the chunk size or after a short chunk; a commit whose size or chunk count
    /// disagree with the chunks stored, or whose SHA-256 is not hex; a chunk read past the end).
    /// A bug in the caller, never the client's doing.
    #[error("blob chunk protocol violated: {0}")]
    BlobProtocol(String),
    /// 400 `invalid_database_url`.
    #[error("invalid database URL: {0}")]
    InvalidDatabaseUrl(String),
    /// 500 `internal`: a migration failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// 500 `internal` (start-up refuses): the catalog's sealed secrets cannot be opened, or the
    /// key file (`storage.secrets_key_file`) is unreadable or malformed.
    #[error("sealed secrets: {0}")]
    SecretsKey(String),
    /// 500 `internal`: the catalog holds something this version cannot read.
    #[error("catalog or shard data is corrupt: {0}")]
    Corrupt(String),
    /// 503 `catalog_unavailable` / `shard_unavailable` when the database cannot be reached, the
    /// pool is exhausted or the database refuses a new connection's credentials (see
    /// [`Error::is_authentication_failure`]); 500 `internal` otherwise.
    #[error("database error on {target}: {source}")]
    Database {
        /// `catalog` or `shard <id>`.
        target: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// 503 `shard_unavailable` (its circuit breaker is open, or a statement missed its deadline)
    /// or `shard_busy` (too many statements in progress on it), with `Retry-After`.
    #[error("shard {shard}: {refusal}")]
    ShardRefused {
        /// The shard.
        shard: ShardId,
        /// Why.
        #[source]
        refusal: crate::storage::health::Refusal,
    },
    /// 503 `catalog_unavailable` with `Retry-After`: the catalog's circuit breaker is open, its
    /// bulkhead is full, or a catalog operation missed its deadline.
    #[error("catalog: {0}")]
    CatalogRefused(#[source] crate::storage::health::Refusal),
    /// 504 `write_outcome_unknown` with `Retry-After`: a write was given up on after it may have
    /// reached the shard (its statement missed the deadline, or the shard's breaker opened while
    /// it ran): it may or may not have been applied. Read the item, then retry with `If-Match`.
    #[error(
        "shard {shard}: {refusal}; the write may or may not have been applied: read it, then retry with If-Match on the version read"
    )]
    WriteOutcomeUnknown {
        /// The shard.
        shard: ShardId,
        /// Why it was given up on.
        #[source]
        refusal: crate::storage::health::Refusal,
    },
    /// 503: a probe did not answer in time.
    #[error("timed out")]
    Timeout,
}

impl From<sqlx::Error> for Error {
    fn from(source: sqlx::Error) -> Self {
        Error::Database { target: "database".to_owned(), source }
    }
}

impl Error {
    /// This error with `target` as what TLS was set up to, if it is [`Error::Tls`].
    pub fn tls_to(self, target: impl Into<String>) -> Self {
        match self {
            Error::Tls { reason, .. } => Error::Tls { target: target.into(), reason },
            other => other,
        }
    }

    /// This error as the outcome of a write: a refusal that came after the statement may have
    /// reached the shard becomes [`Error::WriteOutcomeUnknown`]; anything else stays as it is.
    pub fn of_write(self) -> Self {
        match self {
            Error::ShardRefused { shard, refusal } if refusal.outcome_unknown() => {
                Error::WriteOutcomeUnknown { shard, refusal }
            }
            other => other,
        }
    }

    /// Whether this is a database refusing the credentials of a new connection: its password
    /// was rotated and this pool still connects with the old one (the router reads the shard's
    /// URL from the catalog again and runs the statement once more: `ShardRouter::write`).
    pub fn is_authentication_failure(&self) -> bool {
        matches!(self, Error::Database { source, .. } if crate::storage::health::is_authentication_failure(source))
    }

    /// Whether this is a database that cannot be reached right now (rather than a bug).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Timeout
            | Error::FanOutTimeout(_)
            | Error::ShardRefused { .. }
            | Error::CatalogRefused(_)
            | Error::UsageUnknown(_)
            | Error::WriteOutcomeUnknown { .. } => true,
            Error::Database { source, .. } => {
                crate::storage::health::is_health_failure(source)
                    || crate::storage::health::is_authentication_failure(source)
                    || matches!(source, sqlx::Error::PoolClosed)
                    || matches!(source, sqlx::Error::Database(db) if db.message().contains("database is locked"))
                    // Class 53, insufficient resources: too many connections, out of memory or disk.
                    || matches!(source, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("53")))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::storage::health::Refusal;

    #[test]
    fn a_write_given_up_on_after_it_was_sent_has_an_unknown_outcome() {
        let shard = || ShardId::parse("s1").unwrap();
        let refused = |refusal| Error::ShardRefused { shard: shard(), refusal }.of_write();
        let interrupted = Refusal::Interrupted { reason: "frozen".into(), retry_after: Duration::from_secs(1) };
        assert!(matches!(refused(Refusal::Deadline(Duration::from_secs(5))), Error::WriteOutcomeUnknown { .. }));
        assert!(matches!(refused(interrupted), Error::WriteOutcomeUnknown { .. }));
        // Refused before it was sent: not applied.
        let open = Refusal::Open { state: "open", reason: "down".into(), retry_after: Duration::from_secs(1) };
        assert!(matches!(refused(open), Error::ShardRefused { .. }));
        assert!(matches!(refused(Refusal::Busy(256)), Error::ShardRefused { .. }));
        assert!(matches!(Error::RecordNotFound.of_write(), Error::RecordNotFound));
    }
}
