//! Which rows a copy takes: a tenant's, a vshard's, a range's or a collection's ([`Selection`]),
//! in which window of time ([`Window`], from a moment on the source: [`Since`]), at what pace
//! ([`Pace`], in `pace.rs`); as the `WHERE` condition each statement of a copy inlines.

use super::pace::Pace;
use super::tables::{CopyTable, RowFilter};
use super::tally::Tally;
use crate::error::Error;
use crate::ids::{CollectionName, TenantId};
use crate::storage::db::Engine;
use crate::storage::records::{keys_within, sql_text};
use crate::storage::shard::{FencedShard, KeyRange, MoveSubject};

/// One copy of one selection: which rows (and since when), and at what pace.
#[derive(Debug, Clone, Copy)]
pub struct Pass<'a> {
    /// The rows of a tenant or vshard.
    pub selection: Selection<'a>,
    /// Which of them by when they last changed.
    pub window: Window<'a>,
    /// The rate to keep to, if any.
    pub pace: Option<&'a Pace>,
}

/// Which rows of a selection a pass takes by when they last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window<'a> {
    /// All of them.
    All,
    /// Those changed since a moment (a catch-up pass; the part a cut-over compares).
    ChangedSince(&'a Since),
    /// Those not changed since a moment: the settled part a checksum compares while the rest
    /// may still change.
    SettledBefore(&'a Since),
    /// Those changed since the first moment and not since the second.
    Between(&'a Since, &'a Since),
}

/// A moment on a source shard that later passes take the rows changed since.
///
/// On PostgreSQL it is exact: the transactions that had not committed by then (those still
/// running, and every later one). A row changed by one of them carries its id as `xmin`,
/// whichever instance wrote it and whatever its clock said; no other row does. Elsewhere
/// (SQLite) it is a time compared with the rows' change times, which the writing instances'
/// clocks set, so it is taken a margin (`moves.clock_margin`) early.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Since {
    /// The source's transactions not yet committed at the moment (64-bit ids).
    Transactions {
        /// The first id not yet assigned then: it and every later one.
        next: u64,
        /// The ids running then.
        running: Vec<u64>,
    },
    /// A change time (ms since the Unix epoch).
    Time(i64),
}

impl Since {
    /// Now on `shard`: the transactions not yet committed on PostgreSQL, else the clock less
    /// `margin`.
    pub async fn now(shard: FencedShard<'_>, margin: std::time::Duration) -> Result<Since, Error> {
        use crate::storage::shard::OnShard;
        if shard.db().engine != Engine::Postgres {
            let margin = i64::try_from(margin.as_millis()).unwrap_or(i64::MAX);
            return Ok(Since::Time(crate::clock::now_ms().saturating_sub(margin)));
        }
        let snapshot: String = sqlx::query_scalar("SELECT CAST(pg_current_snapshot() AS text)")
            .fetch_one(shard.pool())
            .on_shard(&shard)
            .await?;
        Self::from_snapshot(&snapshot)
            .ok_or_else(|| Error::Corrupt(format!("shard {}: unreadable snapshot {snapshot:?}", shard.id())))
    }

    /// A PostgreSQL snapshot's text form, `xmin:xmax:running,...`.
    fn from_snapshot(text: &str) -> Option<Since> {
        let mut parts = text.split(':');
        let (_, next, running) = (parts.next()?, parts.next()?, parts.next()?);
        let running = running.split(',').filter(|id| !id.is_empty()).map(str::parse).collect::<Result<_, _>>();
        Some(Since::Transactions { next: next.parse().ok()?, running: running.ok()? })
    }

    /// The SQL condition "changed since": on the row's `xmin`, or on its change-time `column`.
    /// A row's `xmin` holds the low 32 bits of the transaction id, and PostgreSQL keeps every
    /// unfrozen one within 2^31 of the newest: "at least `next`" is "no older than it"
    /// (`age`, counted back from the statement's newest transaction, wraps the same way).
    pub(super) fn condition(&self, column: &str) -> String {
        let xid = |id: &u64| format!("CAST('{}' AS xid)", id % (1 << 32));
        match self {
            Since::Transactions { next, running } => {
                let later = format!("age(xmin) <= age({})", xid(next));
                if running.is_empty() {
                    return later;
                }
                let running = running.iter().map(xid).collect::<Vec<_>>();
                format!("({later} OR xmin IN ({}))", running.join(", "))
            }
            Since::Time(ms) => format!("{column} >= {ms}"),
        }
    }
}

impl Pass<'_> {
    /// The `WHERE` condition of `table`'s rows this pass takes, values inlined (`COPY (query)`
    /// takes no parameters; every value is an integer or a quoted tenant id).
    pub(super) fn condition(&self, table: &CopyTable) -> String {
        let selected = self.selection.inline_condition();
        let window = |column: &str| match self.window {
            Window::All => String::new(),
            Window::ChangedSince(since) => format!(" AND {}", since.condition(column)),
            Window::SettledBefore(since) => format!(" AND NOT ({})", since.condition(column)),
            Window::Between(since, until) => {
                format!(" AND {} AND NOT ({})", since.condition(column), until.condition(column))
            }
        };
        match table.rows {
            RowFilter::Changed(column) => format!("{selected}{}", window(column)),
            RowFilter::All => selected,
            RowFilter::LiveUploads => format!("{selected} AND state = 'live'{}", window("changed_at")),
            RowFilter::LiveUploadChunks => format!(
                "upload_id IN (SELECT upload_id FROM blob_uploads WHERE {selected} AND state = 'live'{})",
                window("changed_at")
            ),
        }
    }
}

/// Which rows a copy takes: every table copied this way has a `tenant` and a `vshard` column.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// The rows of one tenant.
    Tenant(&'a TenantId),
    /// The rows placed on these vshards; none selects nothing.
    Vshards(&'a [u32]),
    /// The rows of these tenants placed on these vshards: the unpinned tenants a vshard move
    /// takes (tenants pinned to the shard keep their rows, tagged with the same vshards, there).
    Tenants {
        /// The vshards.
        vshards: &'a [u32],
        /// The tenants; none selects nothing.
        tenants: &'a [TenantId],
    },
    /// The records of one key range of a range-distributed collection (`spread_records` rows
    /// tagged vshard -1).
    Range(KeyRange<'a>),
    /// The records of one collection of one tenant, in the table of its layout, that a shard
    /// holds for that layout (a collection changing its distribution).
    Collection {
        /// The tenant.
        tenant: &'a TenantId,
        /// The collection.
        collection: &'a CollectionName,
        /// Which of them the shard holds.
        owned: Owned<'a>,
    },
}

/// Which rows of a collection a shard holds in its layout.
#[derive(Debug, Clone, Copy)]
pub enum Owned<'a> {
    /// All of them (its tenant's home shard; a table the collection's old rows were removed
    /// from).
    All,
    /// Those placed by these vshards (a hash distribution).
    Vshards(&'a [u32]),
    /// Those with keys in these intervals, each from its first key up to its second (excluded;
    /// `None`: to the end): a range distribution.
    Keys(&'a [(String, Option<String>)]),
}

impl Selection<'_> {
    /// The condition as SQL with the value inlined (`COPY (query)` takes no parameters).
    pub(crate) fn inline_condition(&self) -> String {
        match self {
            Selection::Tenant(tenant) => format!("tenant = {}", sql_text(tenant.as_str())),
            Selection::Vshards(vshards) => vshard_condition(vshards),
            Selection::Tenants { vshards, tenants: [] } => format!("{} AND 1 = 0", vshard_condition(vshards)),
            Selection::Tenants { vshards, tenants } => {
                let list = tenants.iter().map(|t| sql_text(t.as_str())).collect::<Vec<_>>().join(", ");
                format!("{} AND tenant IN ({list})", vshard_condition(vshards))
            }
            Selection::Range(range) => {
                let until = range.until.map(|until| format!(" AND key < {}", sql_text(until))).unwrap_or_default();
                format!(
                    "tenant = {} AND collection = {} AND vshard = -1 AND key >= {}{until}",
                    sql_text(range.tenant.as_str()),
                    sql_text(range.collection.as_str()),
                    sql_text(range.from)
                )
            }
            Selection::Collection { tenant, collection, owned } => {
                let rows = format!(
                    "tenant = {} AND collection = {}",
                    sql_text(tenant.as_str()),
                    sql_text(collection.as_str())
                );
                match owned {
                    Owned::All => rows,
                    Owned::Vshards(vshards) => format!("{rows} AND {}", vshard_condition(vshards)),
                    Owned::Keys(intervals) => format!("{rows} AND {}", keys_within(intervals)),
                }
            }
        }
    }
}

impl<'a> From<MoveSubject<'a>> for Selection<'a> {
    /// The rows of the tenants' home data a move of `subject` copies.
    fn from(subject: MoveSubject<'a>) -> Self {
        match subject {
            MoveSubject::Tenant(tenant) => Selection::Tenant(tenant),
            MoveSubject::Vshards { vshards, tenants } => Selection::Tenants { vshards, tenants },
            MoveSubject::Range(range) => Selection::Range(range),
        }
    }
}

/// `vshard IN (...)`, or a condition no row meets for no vshard.
fn vshard_condition(vshards: &[u32]) -> String {
    if vshards.is_empty() {
        return "1 = 0".to_owned();
    }
    let list = vshards.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    format!("vshard IN ({list})")
}

/// The rows of a table a copy takes: a `WHERE` condition, values inlined, the pace to keep, and
/// where to count them as they pass, if anywhere.
pub(super) struct Rows<'a> {
    pub(super) condition: String,
    pub(super) pace: Option<&'a Pace>,
    pub(super) tally: Option<&'a Tally>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moves::copy::tables::{BLOB_CHUNKS, INDEX_ENTRIES, RECORDS};

    #[test]
    fn an_inlined_string_cannot_close_its_quote() {
        assert_eq!(sql_text("o'brien'); DROP TABLE records; --"), "'o''brien''); DROP TABLE records; --'");
        let tenant = TenantId::parse("acme").unwrap();
        assert_eq!(Selection::Tenant(&tenant).inline_condition(), "tenant = 'acme'");
        assert_eq!(Selection::Vshards(&[7, 9]).inline_condition(), "vshard IN (7, 9)");
        assert_eq!(Selection::Vshards(&[]).inline_condition(), "1 = 0");
        let two = [tenant.clone(), TenantId::parse("beta").unwrap()];
        assert_eq!(
            Selection::Tenants { vshards: &[7], tenants: &two }.inline_condition(),
            "vshard IN (7) AND tenant IN ('acme', 'beta')"
        );
        assert_eq!(Selection::Tenants { vshards: &[7], tenants: &[] }.inline_condition(), "vshard IN (7) AND 1 = 0");
        let collection = crate::ids::CollectionName::parse("events").unwrap();
        let range = KeyRange { tenant: &tenant, collection: &collection, from: "it's", until: Some("m") };
        assert_eq!(
            Selection::Range(range).inline_condition(),
            "tenant = 'acme' AND collection = 'events' AND vshard = -1 AND key >= 'it''s' AND key < 'm'"
        );
        let all =
            Pass { selection: Selection::Vshards(&[7]), window: Window::SettledBefore(&Since::Time(50)), pace: None };
        assert_eq!(all.condition(&INDEX_ENTRIES), "vshard IN (7)", "entries are always copied whole");
        let pass =
            Pass { selection: Selection::Tenant(&tenant), window: Window::ChangedSince(&Since::Time(42)), pace: None };
        assert_eq!(pass.condition(&RECORDS), "tenant = 'acme' AND updated_at >= 42");
        let settled = Pass { window: Window::SettledBefore(&Since::Time(42)), ..pass };
        assert_eq!(settled.condition(&RECORDS), "tenant = 'acme' AND NOT (updated_at >= 42)");
        assert_eq!(
            pass.condition(&BLOB_CHUNKS),
            "upload_id IN (SELECT upload_id FROM blob_uploads WHERE tenant = 'acme' AND state = 'live' AND changed_at >= 42)"
        );
    }

    #[test]
    fn a_collection_selection_takes_the_rows_its_shard_holds_in_its_layout() {
        let tenant = TenantId::parse("acme").unwrap();
        let collection = CollectionName::parse("events").unwrap();
        let select =
            |owned| Selection::Collection { tenant: &tenant, collection: &collection, owned }.inline_condition();
        assert_eq!(select(Owned::All), "tenant = 'acme' AND collection = 'events'");
        assert_eq!(select(Owned::Vshards(&[3, 4])), "tenant = 'acme' AND collection = 'events' AND vshard IN (3, 4)");
        assert_eq!(select(Owned::Vshards(&[])), "tenant = 'acme' AND collection = 'events' AND 1 = 0");
        let intervals = [("".to_owned(), Some("f".to_owned())), ("o'k".to_owned(), None)];
        assert_eq!(
            select(Owned::Keys(&intervals)),
            "tenant = 'acme' AND collection = 'events' AND ((key >= '' AND key < 'f') OR key >= 'o''k')"
        );
        assert_eq!(select(Owned::Keys(&[])), "tenant = 'acme' AND collection = 'events' AND 1 = 0");
    }

    #[test]
    fn a_snapshot_moment_takes_the_transactions_running_then_and_every_later_one() {
        // 2^32 + 10 and later, and the two running: the rows' xmin holds the low 32 bits.
        let since = Since::from_snapshot("4294967290:4294967306:4294967290,4294967295").unwrap();
        assert_eq!(since, Since::Transactions { next: 4_294_967_306, running: vec![4_294_967_290, 4_294_967_295] });
        assert_eq!(
            since.condition("updated_at"),
            "(age(xmin) <= age(CAST('10' AS xid)) OR xmin IN (CAST('4294967290' AS xid), CAST('4294967295' AS xid)))"
        );
        let quiet = Since::from_snapshot("700:700:").unwrap();
        assert_eq!(quiet.condition("x"), "age(xmin) <= age(CAST('700' AS xid))");
        assert_eq!(Since::from_snapshot("nonsense"), None);
        assert_eq!(Since::Time(42).condition("changed_at"), "changed_at >= 42");
    }
}
