//! # shardgate-index-tables
//!
//! Secondary index tables over fields of a collection's records (the Index Table pattern):
//! definitions ([`IndexDef`]: 1 to 4 fields, unique or not, normalized, covering or full
//! entries), the order-preserving encoding of indexed values ([`ValueKey`]), the placement of
//! entries ([`entry_vshard`]: `h(tenant, collection, index, value) mod V`, so all entries of a
//! value sit on one shard) and the merge of the sorted pages a range look-up gathers from every
//! shard ([`merge_pages`]).
//!
//! The entries themselves are stored by `shard-router`
//! ([`IndexEntryStore`](shardgate_shard_router::index_entries::IndexEntryStore)), next to the
//! records and with the same engine-neutral SQL; this crate decides what goes into them. It
//! depends on `shard-router` only (never the other way round) and knows nothing of HTTP.
//!
//! Maintenance of an index on a record write, run by the caller:
//! 1. [`IndexDef::change`] says which value's entry to write and which to remove;
//! 2. [`IndexDef::entry`] builds the entry (placement, record reference, copy), written as
//!    pending before the record (`put_pending`, or `claim_unique` for a unique index);
//! 3. after the record commits: `mark_live`, then `remove` of the old value's entry.

pub mod definition;
pub mod entries;
pub mod merge;
pub mod names;
pub mod placement;
pub mod value_key;

pub use definition::{EntryChange, IndexDef, Layout, MAX_INCLUDED_FIELDS};
pub use entries::RecordVersion;
pub use merge::{EntryCursor, MergedPage, merge_pages};
pub use names::{FieldPath, IndexName};
pub use placement::entry_vshard;
pub use value_key::{MAX_KEY_PARTS, MAX_VALUE_KEY_BYTES, ValueKey};

/// Why an index definition, an indexed value or a looked-up value was rejected. Each variant
/// says the status the API answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// 422 `invalid_index`: the index name breaks the naming rule.
    #[error("invalid index name: must match [a-z0-9][a-z0-9_-]{{0,62}}")]
    InvalidName,
    /// 422 `invalid_index`: a field is not a JSON pointer (RFC 6901).
    #[error("invalid field: expected a JSON pointer such as /customer/email")]
    InvalidField,
    /// 422 `invalid_index`: an index has 1 to 4 fields.
    #[error("an index has 1 to 4 fields")]
    FieldCount,
    /// 422 `invalid_index`: a field appears twice in the index's fields.
    #[error("an index names each field once")]
    DuplicateField,
    /// 422 `invalid_index`: the layout's included fields are wrong.
    #[error("invalid layout: {0}")]
    InvalidLayout(&'static str),
    /// 422 `index_value_too_long`: a record's (or a look-up's) value encodes to more than
    /// [`MAX_VALUE_KEY_BYTES`]; the record write is refused rather than left out of the index.
    #[error("the indexed value is too long (at most {MAX_VALUE_KEY_BYTES} bytes encoded)")]
    ValueTooLong,
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
}
