//! Blobs whose chunk rows do not hold their bytes: a live `blobs` row promises `chunk_count`
//! chunks of known lengths ([`crate::storage::blobs`]), and a shard restored from a backup taken
//! while chunks were written or collected, or rows deleted by hand, can break that promise. The
//! gateway refuses to serve such a blob (500 `blob_damaged`); this finds them all. One statement
//! per shard joins each live blob to its chunk rows and keeps, in SQL, only the damaged ones; the
//! lengths are read without the bytes ([`CHUNK_WRONG_LENGTH_SQL`]).

use futures::TryStreamExt;

use crate::check::{CatalogView, Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::error::Error;
use crate::storage::blobs::CHUNK_WRONG_LENGTH_SQL;

/// Checks every live blob of `shard` whose tenant no running job holds.
pub async fn check_blobs(shard: &ShardUnderCheck, view: &CatalogView, findings: &mut Findings) -> Result<(), Error> {
    let sql = format!(
        "SELECT b.tenant, b.vshard, b.path, b.upload_id, b.chunk_count, COUNT(c.seq), \
         COALESCE(SUM({CHUNK_WRONG_LENGTH_SQL}), 0) \
         FROM blobs b LEFT JOIN blob_chunks c ON c.upload_id = b.upload_id AND c.seq >= 0 AND c.seq < b.chunk_count \
         WHERE b.deleted = 0 GROUP BY b.tenant, b.path, b.vshard, b.upload_id, b.chunk_count, b.size, b.chunk_size \
         HAVING COUNT(c.seq) < b.chunk_count OR COALESCE(SUM({CHUNK_WRONG_LENGTH_SQL}), 0) > 0"
    );
    let here = &shard.id;
    let mut rows = sqlx::query_as::<_, (String, i64, String, String, i64, i64, i64)>(&sql).fetch(&shard.db.pool);
    while let Some((tenant, vshard, path, upload, expected, present, wrong)) =
        rows.try_next().await.map_err(|source| Error::Database { target: format!("shard {here}"), source })?
    {
        let Ok(vshard) = u32::try_from(vshard) else { continue };
        if view.holds_tenant(&tenant, vshard) {
            continue;
        }
        findings.push(Finding {
            kind: Kind::BlobDamaged,
            place: Place::shard(here).tenant(&tenant).vshard(vshard).table("blob_chunks"),
            found: format!(
                "blob {path} of tenant {tenant} on shard {here} (upload {upload}): {present} of its {expected} chunks \
                 are present, {wrong} of the wrong length; downloads of it answer 500 blob_damaged"
            ),
            action: format!(
                "Restore shard {here} from a backup that holds the chunks of upload {upload}, or delete the blob \
                 (DELETE /v1/tenants/{tenant}/blobs/{path}) and have its owner upload it again."
            ),
        });
    }
    Ok(())
}
