//! Response bodies that several route modules return: a record ([`RecordEnvelope`]), a
//! background job ([`Job`]), a resource just created ([`created`]) and what a tenant stores
//! ([`UsageCounts`]).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use shardgate_shard_router::catalog::{JobRow, UsageDayRow};
use shardgate_shard_router::records::StoredRecord;
use shardgate_shard_router::storage::usage::Usage;
use utoipa::ToSchema;

use crate::wire::timestamps::{date_of_day, rfc3339};

/// A record as the API returns it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordEnvelope {
    /// The record's key.
    pub key: String,
    /// Its version (also the `ETag`): 1 on create, +1 on every write or delete.
    pub version: i64,
    /// Time of the last write, RFC 3339.
    pub updated_at: String,
    /// The stored JSON value, as written: any JSON value (object, array, string, number,
    /// boolean or null).
    #[schema(value_type = Value)]
    pub value: Box<RawValue>,
}

impl From<StoredRecord> for RecordEnvelope {
    fn from(r: StoredRecord) -> Self {
        Self { key: r.key, version: r.version, updated_at: rfc3339(r.updated_at_ms), value: r.value }
    }
}

/// A background job.
#[derive(Debug, Serialize, ToSchema)]
pub struct Job {
    /// Job id.
    pub id: String,
    /// `index.backfill`, `index.audit`, `tenant.move`, `vshard.move`, `range.move`,
    /// `collection.redistribute` or `vshards.rebalance`.
    pub kind: String,
    /// What it works on (`tenant/collection/index`).
    pub target: String,
    /// `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    /// Progress. A backfill: `indexed` (entries written so far), `after` (the last record key
    /// done); one that met records the index cannot take also has `too_long` and `duplicates`
    /// (how many) and `offending_keys` (at most 10 of their keys). A tenant move: `phase`
    /// (`copy`, `catch_up`, `cut_over`, `cleanup`, `done` or `rolled_back`), `from`, `to`,
    /// `rows_to_copy` and `bytes_to_copy` (the rows the first copy takes and their bytes, blobs'
    /// and records', counted on the source before the job is recorded, so the answer that starts
    /// it has them, and again as the copy begins: with `rows_copied` and `bytes_copied`, a
    /// percentage and a rate; the catch-up passes copy more), `rows_copied` and `bytes_copied`
    /// (within a batch of the first copy too, stored at most every 250 ms), `passes`, `lag_rows`
    /// (how far the target is behind: 0 during the first copy, then the rows changed on the
    /// source since its snapshot, then the rows each catch-up pass took), `method`,
    /// `settled` and `checksums` (per table, source and target, and `matched`: the rows not
    /// changed since `settled_since`, compared before the fence, and the others), `fenced_at_ms`,
    /// `switched_at_ms` (set, with `epoch`, once the new placement is in force: the phase is
    /// `cleanup` from then on), `cutover_ms` (with `cutover_steps_ms`, where it went), `epoch`,
    /// `rolled_back` (why) and `pace` (the copy's: `adaptive`, `ceiling_bytes_per_second`,
    /// `bytes_per_second` now, `baseline_us`, each shard's request statement latency before the
    /// copy, and `changes`, the latest 120 changes as `[ms, bytes_per_second]`). A vshard move: the same, with `vshards`, `tenants` (the unpinned
    /// tenants they place, taken along) and `parent` (its rebalance). A range move: the same,
    /// with `range` (`collection`, `from`, `until`, `ranges_before`, `ranges_after`). A
    /// redistribution: `phase`, `collection`, `from` and `to` (each a `distribution` and its
    /// `ranges`), `sources` and `targets` (shards), `rows_to_copy` and `bytes_to_copy` (what
    /// its first pass takes, counted on the sources as it begins), `rows_copied`, `bytes_copied`, `passes`,
    /// `lag_rows`, `checksums` (the old and the new layout, counted and summed over their
    /// shards), `fenced_at_ms`, `switched_at_ms`, `cutover_ms`, `cutover_steps_ms`, `epoch`,
    /// `rolled_back` and `pace`. A rebalance: `balance`, `parallel`,
    /// `drain` (the shard drained, if any), the counts `pending`, `running`, `done` and `failed`,
    /// and `steps` (each with `vshards` or `tenant`, `from`, `to`, `state`, `job` and `error`).
    #[schema(value_type = Object)]
    pub progress: Value,
    /// Why it failed.
    pub error: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Last progress, RFC 3339.
    pub updated_at: String,
    /// How many times another instance took the job over from one whose lease had run out
    /// (it crashed, was killed or lost the catalog). An instance that runs a job renews its
    /// lease while it works, so a job whose instance stays alive is never taken over.
    pub handovers: i64,
}

impl Job {
    /// The answer to a request that started a job (or asked one to cancel): 202 with the job,
    /// which the client follows at `/v1/admin/jobs/{id}`.
    pub fn accepted(job: JobRow) -> Response {
        (StatusCode::ACCEPTED, axum::Json(Self::from(job))).into_response()
    }
}

/// The answer to a request that created a resource: 201 with `body`, and `Location: location`
/// (left out if `location` is not a valid header value).
pub fn created(location: &str, body: impl Serialize) -> Response {
    let mut response = (StatusCode::CREATED, axum::Json(body)).into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

impl From<JobRow> for Job {
    fn from(job: JobRow) -> Self {
        Self {
            progress: serde_json::from_str(&job.progress).unwrap_or(Value::Null),
            created_at: rfc3339(job.created_at_ms),
            updated_at: rfc3339(job.updated_at_ms),
            id: job.id,
            kind: job.kind,
            target: job.target,
            state: job.state,
            error: job.error,
            handovers: job.handovers,
        }
    }
}

/// What a tenant stores: its live data, as the shards keep it exact (changed in the same
/// transaction as every write).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct UsageCounts {
    /// Live records, every collection and distribution (deleted ones are not counted).
    pub records: u64,
    /// Their stored values' bytes (the JSON as stored, in UTF-8).
    pub record_bytes: u64,
    /// Live blobs (uploads in progress are not counted).
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Live index entries of every index of its collections.
    pub index_entries: u64,
}

impl From<Usage> for UsageCounts {
    fn from(u: Usage) -> Self {
        Self {
            records: u.records,
            record_bytes: u.record_bytes,
            blobs: u.blobs,
            blob_bytes: u.blob_bytes,
            index_entries: u.index_entries,
        }
    }
}

/// One line of the daily usage export (`GET /v1/admin/usage?day=`, JSON lines): what one tenant
/// used on the day.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageDayLine {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// The tenant.
    pub tenant: String,
    /// Bytes of records and blobs held, times the hours held: each hourly sample adds what the
    /// tenant held then, for one hour.
    pub storage_byte_hours: u64,
    /// Requests made with the tenant's tokens and through its valet URLs.
    pub requests: u64,
    /// Bytes of the response bodies sent for those requests (valet downloads not included).
    pub bytes_read: u64,
    /// Bytes of the request bodies received with them (valet uploads not included).
    pub bytes_written: u64,
    /// Bytes moved through the tenant's valet URLs, uploads and downloads together.
    pub valet_bytes: u64,
}

impl From<UsageDayRow> for UsageDayLine {
    fn from(row: UsageDayRow) -> Self {
        let u = row.usage;
        UsageDayLine {
            day: date_of_day(row.day),
            tenant: row.tenant,
            storage_byte_hours: u.storage_byte_hours,
            requests: u.requests,
            bytes_read: u.bytes_read,
            bytes_written: u.bytes_written,
            valet_bytes: u.valet_bytes,
        }
    }
}
