//! [`IndexError`]: everything that can go wrong in the Index Table pattern, from a definition
//! that breaks a rule to a shard that does not answer. Each variant says the HTTP status and
//! code the API answers with; the `api` crate does that mapping, in one place.

use shardgate_shard_router::Error as StoreError;

/// Why an index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// 400 `invalid_path`: the index name (a path segment) breaks the naming rule.
    #[error("invalid index name: must match [a-z0-9][a-z0-9_-]{{0,62}}")]
    InvalidName,
    /// 400 `invalid_body`: a field is not a JSON pointer (RFC 6901).
    #[error("invalid field: expected a JSON pointer such as /customer/email")]
    InvalidField,
    /// 400 `invalid_body`: an index has 1 to 4 fields.
    #[error("an index has 1 to 4 fields")]
    FieldCount,
    /// 400 `invalid_body`: a field appears twice in the index's fields.
    #[error("an index names each field once")]
    DuplicateField,
    /// 400 `invalid_body`: the layout's included fields are wrong.
    #[error("invalid layout: {0}")]
    InvalidLayout(&'static str),
    /// 400 `invalid_index_value`: a record's (or a look-up's) value encodes to more than `max`
    /// bytes (`MAX_VALUE_KEY_BYTES`); the record write is refused rather than left out of the
    /// index.
    #[error("the indexed value is too long (at most {max} bytes encoded)")]
    ValueTooLong {
        /// The longest encoded value.
        max: usize,
    },
    /// 400 `invalid_index_value`: a looked-up value no record can hold (`null`, an object, an
    /// empty or nested array, more than 4 parts).
    #[error("only booleans, numbers, strings and arrays of up to 4 of them are indexed")]
    UnindexableValue,
    /// 400 `invalid_index_value`: a composite look-up with a different number of parts than the
    /// index has fields.
    #[error("the index has {expected} fields but the value has {found} parts")]
    ValueArity {
        /// The index's field count.
        expected: usize,
        /// The value's part count.
        found: usize,
    },
    /// 400 `invalid_cursor`: a value key read back from a cursor is not a valid encoding.
    #[error("invalid value key")]
    InvalidValueKey,
    /// 409 `unique_violation`: another record holds the value in a unique index.
    #[error("another record already has this value in the unique index {index}")]
    UniqueViolation {
        /// The unique index's name.
        index: String,
    },
    /// 409 `unique_violation`: a backfill found two records with the same value of a unique
    /// index (the backfill job fails with this).
    #[error("two records hold the same value of the unique index (one is {record_key})")]
    DuplicateValue {
        /// One of the records.
        record_key: String,
    },
    /// 404 `index_not_found`.
    #[error("no such index")]
    IndexNotFound,
    /// 404 `index_not_found`: a job's index was deleted (the job fails with this).
    #[error("job {job}: the index is gone")]
    JobIndexGone {
        /// The job id.
        job: String,
    },
    /// 409 `index_exists`: an index with this name and another definition exists.
    #[error("an index with this name and another definition exists")]
    IndexExists,
    /// 409 `index_limit_reached`: the collection has as many index definitions as its tenant's
    /// tier allows (every record write maintains each of them).
    #[error("the collection has {cap} index definitions, the most it may have")]
    IndexLimitReached {
        /// The cap.
        cap: u32,
    },
    /// 409 `index_building`: the index's backfill has not finished, so it cannot answer look-ups.
    #[error("the index is still being built; retry later")]
    IndexBuilding,
    /// 409 `index_failed`: the index's build failed, so it cannot answer look-ups; its
    /// definition says why (`failure`). Fix the records and define it again to retry, or delete it.
    #[error(
        "the index's build failed: {reason}; fix the records (see the index's `failure`) and PUT the same \
         definition again to retry, or delete the index"
    )]
    IndexFailed {
        /// Why it failed.
        reason: String,
    },
    /// 500 `internal`: a job's target is not `tenant/collection/index`.
    #[error("job {job} has target {target}")]
    InvalidJobTarget {
        /// The job id.
        job: String,
        /// Its target.
        target: String,
    },
    /// 500 `internal`: a definition could not be written as JSON.
    #[error(transparent)]
    Encoding(serde_json::Error),
    /// The catalog or a shard failed: the status and code of the wrapped error
    /// (see [`shardgate_shard_router::Error`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}
