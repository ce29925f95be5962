//! A blob upload within its tenant's quotas: what it adds (a new blob, and the bytes beyond those
//! of the blob it replaces) is let through by the tenant's allowance
//! ([`shardgate_shard_router::usage::grants`]) before the bytes are stored: all of it at once from
//! a declared `Content-Length`, else piece by piece as the body arrives. A refusal ends the
//! upload (409 `quota_exceeded`) before a byte more is stored, and the upload is aborted.
//!
//! A valet upload also takes its bytes from its tenant's valet bytes of the day
//! ([`ValetTransfer`]): the declared length up front, else as the body arrives.
//!
//! The blob replaced is the one the upload's precondition was checked against: a concurrent
//! delete of it between that check and the commit lets the upload count its bytes as replaced
//! (by at most that blob's size, documented in operations.md "Quotas and usage").

use shardgate_shard_router::TenantId;
use shardgate_shard_router::storage::usage::Usage;
use shardgate_shard_router::usage::daily::ValetTransfer;
use shardgate_shard_router::usage::grants::{Admission, QuotaGate};
use shardgate_shard_router::usage::quotas::Quotas;

use crate::wire::error::ApiError;

/// What an upload has been let add so far.
#[derive(Debug)]
pub struct UploadQuota<'a> {
    /// `None`: the tenant's blobs are not limited.
    limited: Option<(&'a QuotaGate, &'a TenantId, Quotas)>,
    /// Bytes of the new content accounted for: those of the blob replaced, and those let
    /// through.
    covered: u64,
    /// What was let through, held as in flight until the upload ends.
    admissions: Vec<Admission>,
    /// A valet upload's bytes, reserved from its tenant's valet bytes of the day.
    valet: Option<ValetTransfer>,
}

impl<'a> UploadQuota<'a> {
    /// Lets an upload of `tenant` that replaces a blob of `replaced` bytes (`None`: a new blob)
    /// begin: the new blob, and the bytes of a declared length beyond those replaced; through a
    /// valet URL (`valet`), the declared length from the day's valet bytes too.
    pub async fn begin(
        (gate, tenant, quotas): (&'a QuotaGate, &'a TenantId, Quotas),
        replaced: Option<u64>,
        declared: Option<u64>,
        mut valet: Option<ValetTransfer>,
    ) -> Result<Self, ApiError> {
        if let Some(transfer) = &mut valet {
            transfer.grow_to(declared.unwrap_or(0)).await?;
        }
        let covered = replaced.unwrap_or(0);
        if quotas.blobs.is_none() && quotas.blob_bytes.is_none() {
            return Ok(UploadQuota { limited: None, covered, admissions: Vec::new(), valet });
        }
        let mut upload = UploadQuota { limited: Some((gate, tenant, quotas)), covered, admissions: Vec::new(), valet };
        upload
            .admit(u64::from(replaced.is_none()), declared.map_or(0, |length| length.saturating_sub(covered)))
            .await?;
        Ok(upload)
    }

    /// Lets the body grow to `size` bytes: the bytes beyond those accounted for are asked for.
    pub async fn grow_to(&mut self, size: u64) -> Result<(), ApiError> {
        if let Some(transfer) = &mut self.valet {
            transfer.grow_to(size).await?;
            transfer.moved_to(size);
        }
        if self.limited.is_none() || size <= self.covered {
            return Ok(());
        }
        self.admit(0, size - self.covered).await
    }

    async fn admit(&mut self, blobs: u64, blob_bytes: u64) -> Result<(), ApiError> {
        let Some((gate, tenant, quotas)) = &self.limited else { return Ok(()) };
        let growth = Usage { blobs, blob_bytes, ..Usage::default() };
        self.admissions.push(gate.admit(tenant, quotas, growth).await?);
        self.covered += blob_bytes;
        Ok(())
    }
}
