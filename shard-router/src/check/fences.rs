//! Fences left on a shard ([`crate::storage::shard`]): the write fence `shard_fence`, and the
//! move fences `tenant_fences`, `vshard_fences`, `range_fences` and `collection_fences`.
//!
//! - A `frozen` move fence refuses the subject's writes on this shard for as long as it stands;
//!   only a running job's cut-over may hold one. Without that job it is [`Kind::FenceWithoutJob`].
//! - A `moved` fence stays after its move on purpose (the subject's old shard refuses it until it
//!   moves back), so it is a finding only where the catalog places the subject on this very
//!   shard and no running job holds it ([`Kind::FenceOnOwner`]): the subject is refused on its
//!   own shard. A restored catalog from before the move finished, with shards from after, looks
//!   like this.
//! - The write fence above the catalog's epoch refuses every write routed on the catalog's map
//!   ([`Kind::WriteFenceAhead`]): the catalog is older than the shard.

use futures::TryStreamExt;

use crate::check::{CatalogView, Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::error::Error;
use crate::map::{Spread, range_of};

/// Checks the fences of `shard` against `view`.
pub async fn check_fences(shard: &ShardUnderCheck, view: &CatalogView, findings: &mut Findings) -> Result<(), Error> {
    let err = |source| Error::Database { target: format!("shard {}", shard.id), source };
    let here = &shard.id;
    let fence: Option<i64> = sqlx::query_scalar("SELECT epoch FROM shard_fence WHERE id = 1")
        .fetch_optional(&shard.db.pool)
        .await
        .map_err(err)?;
    let epoch = view.map.epoch;
    if let Some(fence) = fence.and_then(|f| u64::try_from(f).ok())
        && fence > epoch
    {
        findings.push(Finding {
            kind: Kind::WriteFenceAhead,
            place: Place::shard(here).table("shard_fence"),
            found: format!(
                "shard {here}'s write fence is at epoch {fence}, ahead of the catalog's epoch {epoch}: every write \
                 routed on the catalog's map is refused there"
            ),
            action: format!(
                "The catalog is older than shard {here}: restore a catalog at least as recent as the shard, or, if \
                 this catalog is the one to keep, lower the fence on the shard (UPDATE shard_fence SET epoch = {epoch} \
                 WHERE id = 1) while no gateway runs."
            ),
        });
    }

    let mut rows = sqlx::query_as::<_, (String, String, String)>("SELECT tenant, state, job_id FROM tenant_fences")
        .fetch(&shard.db.pool);
    while let Some((tenant, state, job)) = rows.try_next().await.map_err(err)? {
        let placed_here = view.map.route_tenant(&tenant).is_ok_and(|route| &route.shard == here);
        let place = Place::shard(here).tenant(&tenant).table("tenant_fences");
        judge(view, Fence { place, subject: format!("tenant {tenant}"), state, job, placed_here }, findings);
    }
    drop(rows);

    let mut rows = sqlx::query_as::<_, (i64, String, String)>("SELECT vshard, state, job_id FROM vshard_fences")
        .fetch(&shard.db.pool);
    while let Some((vshard, state, job)) = rows.try_next().await.map_err(err)? {
        let Ok(vshard) = u32::try_from(vshard) else { continue };
        let placed_here = view.vshard_owner(vshard) == Some(here);
        let place = Place::shard(here).vshard(vshard).table("vshard_fences");
        judge(view, Fence { place, subject: format!("vshard {vshard}"), state, job, placed_here }, findings);
    }
    drop(rows);

    let mut rows = sqlx::query_as::<_, (String, String, String, String, String)>(
        "SELECT tenant, collection, from_key, state, job_id FROM range_fences",
    )
    .fetch(&shard.db.pool);
    while let Some((tenant, collection, from, state, job)) = rows.try_next().await.map_err(err)? {
        let placed_here = match view.map.spread_of(&tenant, &collection) {
            Some(Spread::Range(bounds)) => {
                view.map.shards.get(usize::from(bounds[range_of(bounds, &from)].shard)).is_some_and(|s| &s.id == here)
            }
            _ => false,
        };
        let place = Place::shard(here).tenant(&tenant).table("range_fences");
        let subject = format!("the range from {from:?} of collection {collection} of tenant {tenant}");
        judge(view, Fence { place, subject, state, job, placed_here }, findings);
    }
    drop(rows);

    let mut rows = sqlx::query_as::<_, (String, String, String, String, String)>(
        "SELECT tenant, collection, layout, state, job_id FROM collection_fences",
    )
    .fetch(&shard.db.pool);
    while let Some((tenant, collection, layout, state, job)) = rows.try_next().await.map_err(err)? {
        let placed_here = match (layout.as_str(), view.map.spread_of(&tenant, &collection)) {
            ("home", None) => view.map.route_tenant(&tenant).is_ok_and(|route| &route.shard == here),
            ("spread", Some(Spread::Hash)) => (0..view.map.vshard_count).any(|v| view.vshard_owner(v) == Some(here)),
            ("spread", Some(Spread::Range(bounds))) => {
                bounds.iter().any(|b| view.map.shards.get(usize::from(b.shard)).is_some_and(|s| &s.id == here))
            }
            _ => false,
        };
        let place = Place::shard(here).tenant(&tenant).table("collection_fences");
        let subject = format!("collection {collection} of tenant {tenant} ({layout} layout)");
        judge(view, Fence { place, subject, state, job, placed_here }, findings);
    }
    Ok(())
}

/// One move fence as read.
struct Fence {
    place: Place,
    subject: String,
    state: String,
    job: String,
    /// Whether the catalog places the fenced subject on this shard.
    placed_here: bool,
}

fn judge(view: &CatalogView, fence: Fence, findings: &mut Findings) {
    let Fence { place, subject, state, job, placed_here } = fence;
    if view.running_jobs.contains(&job) {
        return;
    }
    let here = place.shard.clone().unwrap_or_default();
    let table = place.table.clone().unwrap_or_default();
    if state == "frozen" {
        findings.push(Finding {
            kind: Kind::FenceWithoutJob,
            place,
            found: format!(
                "{subject} is frozen on shard {here} by job {job}, which is not running in the catalog: its writes \
                 there are refused for as long as the fence stands"
            ),
            action: format!(
                "The move that froze it did not finish in this catalog. If the catalog places {subject} on shard \
                 {here}, remove the fence (DELETE FROM {table} for it on shard {here}) while no gateway runs; \
                 otherwise restore the catalog from after the move and run `shardgate check` again."
            ),
        });
    } else if placed_here {
        findings.push(Finding {
            kind: Kind::FenceOnOwner,
            place,
            found: format!(
                "{subject} is marked moved away from shard {here} (job {job}, not running), but the catalog places it \
                 on shard {here}: its reads and writes there are refused"
            ),
            action: format!(
                "The catalog is older than the move (job {job}). Restore the catalog from after the move, or, if the \
                 data on shard {here} is the copy to keep, remove the fence (DELETE FROM {table} for it on shard \
                 {here}) while no gateway runs."
            ),
        });
    }
}
