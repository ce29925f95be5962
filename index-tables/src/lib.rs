//! # shardgate-index-tables
//!
//! The one home of the Index Table pattern: secondary index tables over fields of a
//! collection's records, whose entries are themselves sharded.
//!
//! - what an index is: definitions ([`IndexDef`]: 1 to 4 fields, unique or not, normalized,
//!   covering or full entries), the order-preserving encoding of indexed values ([`ValueKey`]),
//!   the placement of entries ([`entry_vshard`]: `h(tenant, collection, index, value) mod V`, so
//!   all entries of a value sit on one shard) and the entry a record needs ([`RecordVersion`]);
//! - where entries are kept: the engine-neutral SQL on each shard ([`IndexEntryStore`]);
//! - the service that runs the pattern ([`IndexTables`]): the in-memory [`IndexRegistry`] of
//!   definitions, maintenance around record writes ([`IndexTables::prepare_write`], then
//!   [`IndexTables::finish_write`]), verified look-ups ([`IndexTables::lookup`], merging the
//!   sorted pages of a range with [`merge_pages`]), the backfill and drift audit jobs, the purge
//!   of a tenant's entries and the index metrics ([`IndexMetrics`]);
//! - when an entry is dangling ([`standing`]: the one rule of look-ups, the drift audit and
//!   `shardgate check`), and the read-only search for dangling entries ([`find_dangling`]).
//!
//! It depends on `shard-router` only (never the other way round), for routing, records and the
//! catalog, and knows nothing of HTTP: it returns [`IndexError`], whose variants say which
//! status the API answers with.

pub mod backfill;
pub mod dangling;
pub mod definition;
pub mod drift_audit;
pub mod entry_store;
pub mod error;
pub mod lifecycle;
pub mod lookup;
pub mod maintenance;
pub mod merge;
pub mod metrics;
pub mod names;
pub mod placement;
pub mod record_entry;
pub mod registry;
pub mod service;
pub mod value_key;
#[doc(hidden)]
pub mod xorshift;

pub use backfill::BACKFILL_JOB;
pub use dangling::{Dangling, Standing, find_dangling, standing};
pub use definition::{EntryChange, IndexDef, Layout, MAX_INCLUDED_FIELDS};
pub use drift_audit::DRIFT_AUDIT_JOB;
pub use entry_store::{Claim, EntryAfter, EntryKey, EntryState, IndexEntry, IndexEntryStore, IndexScope, StoredEntry};
pub use error::IndexError;
pub use lifecycle::Defined;
pub use lookup::{Found, Lookup};
pub use maintenance::IndexedWrite;
pub use merge::{EntryCursor, MergedPage, merge_pages};
pub use metrics::{IndexMetrics, ShardLabels};
pub use names::{FieldPath, IndexName};
pub use placement::entry_vshard;
pub use record_entry::RecordVersion;
pub use registry::{BuildFailure, IndexRegistry, IndexState, LiveIndex, MAX_OFFENDING_KEYS};
pub use service::{IndexTables, JobFailureText};
pub use value_key::{MAX_KEY_PARTS, MAX_VALUE_KEY_BYTES, ValueKey};
