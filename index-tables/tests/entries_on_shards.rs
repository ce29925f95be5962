//! Index entries on real shards, on both engines.
//!
//! On one shard, the entry store: the pending → live → removed life of an entry and its version
//! guards, one winner among concurrent claimers of a unique value, take-over of a stale claim by
//! compare-and-swap, equality and range look-ups with cursors, repairs that spare rewritten
//! entries, the shard fence, batched index deletes and the statement counter.
//!
//! On several shards, entries placed by `entry_vshard`: values written in random order come back
//! in value order (the encoding's order survives SQL on SQLite and PostgreSQL), range look-ups fan
//! out and merge into pages that a cursor walks without gaps or repeats, an equality look-up runs
//! one statement on one shard, and a unique index's write flow (claim, commit, live, move,
//! remove) driven by the definition.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_index_tables::xorshift::XorShift;
use shardgate_index_tables::{
    Claim, EntryAfter, EntryCursor, EntryKey, EntryState, FieldPath, IndexDef, IndexEntry, IndexEntryStore, IndexError,
    IndexName, IndexScope, Layout, RecordVersion, StoredEntry, ValueKey, entry_vshard, merge_pages,
};
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::db::{Database, PoolConfig, Schema};
use shardgate_shard_router::map::spread_vshards;
use shardgate_shard_router::records::RecordStore;
use shardgate_shard_router::{CollectionName, Error, RecordKey, ShardId, TenantId};
use sqlx::Connection;

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const VSHARDS: u32 = 1024;
const SHARDS: usize = 3;

/// Shard databases for one test: SQLite files in a temp dir, or PostgreSQL databases dropped at
/// the end.
struct Shards {
    ids: Vec<ShardId>,
    dbs: Vec<Database>,
    pg_names: Vec<String>,
    /// Which shard owns each vshard.
    table: Vec<u16>,
    /// Statements run per shard.
    counters: Vec<AtomicU64>,
    _dir: tempfile::TempDir,
}

impl Shards {
    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut dbs = Vec::new();
        for i in 0..SHARDS {
            let url = SecretString::from(format!("sqlite://{}", dir.path().join(format!("shard-{i}.db")).display()));
            dbs.push(Database::open(&url, &PoolConfig::default()).unwrap());
        }
        Self::with(dbs, Vec::new(), dir).await
    }

    async fn postgres() -> Self {
        let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432");
        let (mut dbs, mut names) = (Vec::new(), Vec::new());
        for i in 0..SHARDS {
            let name = format!("sg_itab_{}_{i}", unique_suffix());
            // A linguistic default collation, as production databases often have (ICU en-US
            // ignores control characters and folds case): the entries' byte order must not
            // depend on it.
            let create = format!(
                "CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
            );
            sqlx::query(&create).execute(&mut admin).await.unwrap();
            let url = SecretString::from(format!("postgres://postgres@127.0.0.1:5432/{name}"));
            dbs.push(Database::open(&url, &PoolConfig::default()).unwrap());
            names.push(name);
        }
        Self::with(dbs, names, tempfile::tempdir().unwrap()).await
    }

    async fn with(dbs: Vec<Database>, pg_names: Vec<String>, dir: tempfile::TempDir) -> Self {
        for db in &dbs {
            db.migrate(Schema::Shard).await.unwrap();
        }
        Self {
            ids: (0..SHARDS).map(|i| ShardId::parse(&format!("shard-{i}")).unwrap()).collect(),
            dbs,
            pg_names,
            table: spread_vshards(VSHARDS, SHARDS),
            counters: (0..SHARDS).map(|_| AtomicU64::new(0)).collect(),
            _dir: dir,
        }
    }

    fn store(&self, shard: usize) -> IndexEntryStore<'_> {
        IndexEntryStore::new(&self.dbs[shard], &self.ids[shard]).routed_at(0).counting(&self.counters[shard])
    }

    /// The shard that owns `vshard`.
    fn shard_of(&self, vshard: u32) -> usize {
        usize::from(self.table[vshard as usize])
    }

    fn statements(&self) -> Vec<u64> {
        self.counters.iter().map(|c| c.load(AtomicOrdering::Relaxed)).collect()
    }

    fn reset_counters(&self) {
        self.counters.iter().for_each(|c| c.store(0, AtomicOrdering::Relaxed));
    }

    async fn drop_all(self) {
        for db in &self.dbs {
            db.pool.close().await;
        }
        if !self.pg_names.is_empty() {
            let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
            for name in &self.pg_names {
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
            }
        }
    }

    /// Every entry of `scope` within the bounds, page by page (`page` per shard and per merged
    /// page), merging the shards' pages and following the cursor: what a fan-out look-up does.
    async fn walk(&self, scope: IndexScope<'_>, from: Bound<&str>, to: Bound<&str>, page: u32) -> Vec<StoredEntry> {
        let mut all = Vec::new();
        let mut cursor: Option<EntryCursor> = None;
        loop {
            let mut pages = Vec::new();
            for shard in 0..SHARDS {
                let after = cursor.as_ref().map(EntryCursor::as_after);
                pages.push(self.store(shard).lookup_range(scope, from, to, after, page).await.unwrap());
            }
            let merged = merge_pages(pages, page);
            assert!(merged.entries.len() <= page as usize);
            all.extend(merged.entries);
            match merged.next {
                Some(next) => cursor = Some(next),
                None => return all,
            }
        }
    }
}

fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{:x}_{}", nanos, std::process::id())
}

// One shard: the entry store's SQL. Value keys are opaque text here; all the store relies on is
// their byte order.

/// The index every test on one shard writes to, unless it says otherwise (on shard 0).
struct Ids {
    tenant: TenantId,
    collection: CollectionName,
    shard: ShardId,
}

impl Ids {
    fn new() -> Self {
        Self {
            tenant: TenantId::parse("acme").unwrap(),
            collection: CollectionName::parse("customers").unwrap(),
            shard: ShardId::parse("shard-0").unwrap(),
        }
    }

    fn scope<'a>(&'a self, index: &'a str) -> IndexScope<'a> {
        IndexScope { tenant: &self.tenant, collection: &self.collection, index }
    }

    /// An entry of index `index` saying record `record` holds `value`.
    fn entry(&self, index: &str, value: &str, record: &str, version: i64, now: i64) -> IndexEntry {
        IndexEntry {
            tenant: self.tenant.clone(),
            collection: self.collection.clone(),
            index: index.to_owned(),
            value_key: value.to_owned(),
            record_key: RecordKey::parse(record).unwrap(),
            vshard: 17,
            record_vshard: 3,
            record_version: version,
            claimed_at_ms: now,
            copy: None,
        }
    }
}

fn key<'a>(entry: &'a IndexEntry) -> EntryKey<'a> {
    entry.key()
}

fn records(entries: &[StoredEntry]) -> Vec<(&str, &str)> {
    entries.iter().map(|e| (e.value_key.as_str(), e.record_key.as_str())).collect()
}

async fn pending_live_removed(shards: Shards) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0);
    let scope = ids.scope("by_city");

    // Write v1 of record r1 with city "paris": pending before the record commits.
    let mut paris = ids.entry("by_city", "s-paris", "r1", 1, 1_000);
    assert!(store.put_pending(&paris).await.unwrap());
    let stored = store.get(key(&paris)).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.record_version, stored.claimed_at_ms), (EntryState::Pending, 1, 1_000));
    assert_eq!((stored.vshard, stored.record_vshard, stored.copy.as_deref()), (17, 3, None));

    // The record committed at version 1: live, with its covering copy.
    assert!(store.mark_live(key(&paris), 1, Some(r#"{"/name":"Ann"}"#)).await.unwrap());
    let stored = store.get(key(&paris)).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.record_version), (EntryState::Live, 1));
    assert_eq!(stored.copy.as_deref(), Some(r#"{"/name":"Ann"}"#));

    // v2 moves r1 to "rome": the new entry first, then the old one goes.
    let rome = ids.entry("by_city", "s-rome", "r1", 2, 2_000);
    assert!(store.put_pending(&rome).await.unwrap());
    assert!(store.mark_live(key(&rome), 2, None).await.unwrap());
    assert!(!store.remove(key(&paris), 0).await.unwrap(), "an entry of a newer version than the bound stays");
    assert!(store.remove(key(&paris), 2).await.unwrap());
    assert_eq!(store.get(key(&paris)).await.unwrap(), None);
    assert!(!store.mark_live(key(&paris), 3, None).await.unwrap(), "nothing to mark once removed");

    // v3 goes back to "paris" while v2's clean-up of "paris" is late: v3's entry survives it.
    paris.record_version = 3;
    paris.claimed_at_ms = 3_000;
    assert!(store.put_pending(&paris).await.unwrap());
    assert!(!store.remove(key(&paris), 2).await.unwrap(), "a late removal spares the newer pending entry");
    assert!(store.mark_live(key(&paris), 3, None).await.unwrap());
    assert!(!store.mark_live(key(&paris), 2, None).await.unwrap(), "a late mark never downgrades the version");
    // Nor does a late pending write of an older version.
    let older = ids.entry("by_city", "s-paris", "r1", 2, 4_000);
    assert!(!store.put_pending(&older).await.unwrap());
    let stored = store.get(key(&paris)).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.record_version, stored.claimed_at_ms), (EntryState::Live, 3, 3_000));

    // A non-unique index holds any number of records per value; put_live writes a backfill.
    assert!(store.put_live(&ids.entry("by_city", "s-paris", "r2", 5, 5_000)).await.unwrap());
    let hits = store.lookup_eq(scope, "s-paris", None, 10).await.unwrap();
    assert_eq!(records(&hits), [("s-paris", "r1"), ("s-paris", "r2")]);
    assert!(hits.iter().all(|e| e.state == EntryState::Live));
    shards.drop_all().await;
}

async fn one_winner_per_unique_value(shards: Shards) {
    let ids = Arc::new(Ids::new());
    let db = Arc::new(shards.dbs[0].clone());
    const CLAIMERS: usize = 16;
    for round in 0..3 {
        let value = format!("s-user{round}@example.com");
        let barrier = Arc::new(tokio::sync::Barrier::new(CLAIMERS));
        let tasks: Vec<_> = (0..CLAIMERS)
            .map(|i| {
                let (ids, db, barrier, value) = (ids.clone(), db.clone(), barrier.clone(), value.clone());
                tokio::spawn(async move {
                    let store = IndexEntryStore::new(&db, &ids.shard).routed_at(0);
                    let entry = ids.entry("by_email", &value, &format!("user-{i}"), 1, 1_000 + i as i64);
                    barrier.wait().await;
                    (format!("user-{i}"), store.claim_unique(&entry).await.unwrap())
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        let winners: Vec<&String> =
            outcomes.iter().filter(|(_, claim)| *claim == Claim::Won).map(|(record, _)| record).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let winner = winners[0];
        for (record, claim) in &outcomes {
            if let Claim::Held(holder) = claim {
                assert_eq!(&holder.record_key, winner, "{record} was told the wrong holder");
                assert_eq!(holder.state, EntryState::Pending);
            }
        }
        let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard);
        let hits = store.lookup_eq(ids.scope("by_email"), &value, None, 100).await.unwrap();
        assert_eq!(records(&hits), [(value.as_str(), winner.as_str())], "exactly one entry per unique value");
    }

    // The holder renewing its own claim wins again (pending, new claim time and version).
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0);
    let first = ids.entry("by_email", "s-ann@example.com", "ann", 1, 1_000);
    assert_eq!(store.claim_unique(&first).await.unwrap(), Claim::Won);
    assert!(store.mark_live(key(&first), 1, None).await.unwrap());
    let renewed = ids.entry("by_email", "s-ann@example.com", "ann", 2, 2_000);
    assert_eq!(store.claim_unique(&renewed).await.unwrap(), Claim::Won);
    let stored = store.get(key(&renewed)).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.record_version, stored.claimed_at_ms), (EntryState::Pending, 2, 2_000));
    // Another record is told who holds it.
    let Claim::Held(holder) =
        store.claim_unique(&ids.entry("by_email", "s-ann@example.com", "bob", 1, 3_000)).await.unwrap()
    else {
        panic!("bob must not get ann's address");
    };
    assert_eq!((holder.record_key.as_str(), holder.claimed_at_ms, holder.record_vshard), ("ann", 2_000, 3));
    // Unique claims of other indexes and other values do not interfere.
    assert_eq!(
        store.claim_unique(&ids.entry("by_phone", "s-ann@example.com", "bob", 1, 3_000)).await.unwrap(),
        Claim::Won
    );
    shards.drop_all().await;
}

async fn stale_claims_are_taken_over_by_compare_and_swap(shards: Shards) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0);
    let value = "s-ann@example.com";

    // Record "old" claimed the value long ago and never committed.
    assert_eq!(store.claim_unique(&ids.entry("by_email", value, "old", 4, 1_000)).await.unwrap(), Claim::Won);
    let Claim::Held(stale) = store.claim_unique(&ids.entry("by_email", value, "new", 1, 90_000)).await.unwrap() else {
        panic!("the value is held");
    };

    // Meanwhile the holder's claim changes (renewed): a take-over based on the old read is refused.
    assert_eq!(store.claim_unique(&ids.entry("by_email", value, "old", 4, 95_000)).await.unwrap(), Claim::Won);
    let refused = store.take_over(&stale, &ids.entry("by_email", value, "new", 1, 96_000)).await.unwrap();
    let Claim::Held(current) = refused else { panic!("the CAS must see the renewed claim") };
    assert_eq!((current.record_key.as_str(), current.claimed_at_ms), ("old", 95_000));

    // The holder committed in between (pending → live): refused as well.
    assert!(
        store
            .mark_live(EntryKey { scope: ids.scope("by_email"), value_key: value, record_key: "old" }, 4, None)
            .await
            .unwrap()
    );
    let Claim::Held(live) = store.take_over(&current, &ids.entry("by_email", value, "new", 1, 97_000)).await.unwrap()
    else {
        panic!("a claim that went live is not stale");
    };
    assert_eq!(live.state, EntryState::Live);

    // A holder whose record turned out not to hold the value: the take-over succeeds, once.
    let taker = ids.entry("by_email", value, "new", 1, 98_000);
    assert_eq!(store.take_over(&live, &taker).await.unwrap(), Claim::Won);
    let second = store.take_over(&live, &ids.entry("by_email", value, "third", 1, 98_500)).await.unwrap();
    assert!(matches!(&second, Claim::Held(h) if h.record_key == "new"), "{second:?}");
    let hits = store.lookup_eq(ids.scope("by_email"), value, None, 10).await.unwrap();
    assert_eq!(records(&hits), [(value, "new")]);
    assert_eq!((hits[0].state, hits[0].claimed_at_ms, hits[0].record_version), (EntryState::Pending, 98_000, 1));

    // A take-over whose holder vanished meanwhile simply claims the free value.
    assert!(store.remove(taker.key(), 1).await.unwrap());
    assert_eq!(
        store.take_over(&hits[0], &ids.entry("by_email", value, "fourth", 1, 99_000)).await.unwrap(),
        Claim::Won
    );

    // Concurrent take-overs of one stale claim: exactly one wins.
    let Claim::Held(stale) = store.claim_unique(&ids.entry("by_email", value, "x", 1, 100_000)).await.unwrap() else {
        panic!("held by fourth");
    };
    let db = Arc::new(shards.dbs[0].clone());
    let ids = Arc::new(ids);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (db, ids, stale) = (db.clone(), ids.clone(), stale.clone());
            tokio::spawn(async move {
                let store = IndexEntryStore::new(&db, &ids.shard).routed_at(0);
                store.take_over(&stale, &ids.entry("by_email", value, &format!("taker-{i}"), 1, 200_000)).await.unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        if task.await.unwrap() == Claim::Won {
            won += 1;
        }
    }
    assert_eq!(won, 1);
    shards.drop_all().await;
}

async fn look_ups_page_in_value_order(shards: Shards) {
    let ids = Ids::new();
    let counter = AtomicU64::new(0);
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0).counting(&counter);
    let scope = ids.scope("by_score");
    // Inserted out of order; another index and another tenant hold the same values.
    for (value, record) in [("v3", "c"), ("v1", "b"), ("v2", "a"), ("v1", "a"), ("v4", "a"), ("v2", "c"), ("v1", "c")] {
        assert!(store.put_live(&ids.entry("by_score", value, record, 1, 1_000)).await.unwrap());
        assert!(store.put_live(&ids.entry("by_other", value, record, 1, 1_000)).await.unwrap());
    }
    let other = IndexEntry { tenant: TenantId::parse("globex").unwrap(), ..ids.entry("by_score", "v1", "z", 1, 1) };
    assert!(store.put_live(&other).await.unwrap());

    counter.store(0, AtomicOrdering::Relaxed);
    let page = store.lookup_eq(scope, "v1", None, 2).await.unwrap();
    assert_eq!(records(&page), [("v1", "a"), ("v1", "b")]);
    assert_eq!(counter.load(AtomicOrdering::Relaxed), 1, "an equality look-up is one statement");
    let page = store.lookup_eq(scope, "v1", Some("b"), 2).await.unwrap();
    assert_eq!(records(&page), [("v1", "c")]);
    assert!(store.lookup_eq(scope, "v9", None, 2).await.unwrap().is_empty());

    let all = store.scan_entries(scope, None, 100).await.unwrap();
    assert_eq!(
        records(&all),
        [("v1", "a"), ("v1", "b"), ("v1", "c"), ("v2", "a"), ("v2", "c"), ("v3", "c"), ("v4", "a")]
    );
    // Pages of 2 with the cursor walk the same sequence.
    let mut walked = Vec::new();
    let mut after: Option<(String, String)> = None;
    loop {
        let cursor = after.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
        let page = store.scan_entries(scope, cursor, 2).await.unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().map(|e| (e.value_key.clone(), e.record_key.clone()));
        walked.extend(page);
    }
    assert_eq!(walked, all);

    let range = |from, to| store.lookup_range(scope, from, to, None, 100);
    let got = range(Bound::Included("v2"), Bound::Excluded("v4")).await.unwrap();
    assert_eq!(records(&got), [("v2", "a"), ("v2", "c"), ("v3", "c")]);
    let got = range(Bound::Excluded("v2"), Bound::Included("v4")).await.unwrap();
    assert_eq!(records(&got), [("v3", "c"), ("v4", "a")]);
    let got = range(Bound::Unbounded, Bound::Included("v1")).await.unwrap();
    assert_eq!(records(&got), [("v1", "a"), ("v1", "b"), ("v1", "c")]);
    let cursor = EntryAfter { value_key: "v1", record_key: "b" };
    let got = store.lookup_range(scope, Bound::Included("v1"), Bound::Excluded("v3"), Some(cursor), 3).await.unwrap();
    assert_eq!(records(&got), [("v1", "c"), ("v2", "a"), ("v2", "c")]);
    shards.drop_all().await;
}

async fn repairs_spare_rewritten_entries(shards: Shards) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0);
    let scope = ids.scope("by_city");
    let entry = ids.entry("by_city", "s-oslo", "r1", 2, 1_000);
    assert!(store.put_pending(&entry).await.unwrap());
    let seen = store.lookup_eq(scope, "s-oslo", None, 10).await.unwrap().remove(0);

    // A writer re-claims the value after the reader looked: the reader's repair must not delete it.
    assert!(store.put_pending(&IndexEntry { claimed_at_ms: 2_000, ..entry.clone() }).await.unwrap());
    assert!(!store.remove_if_unchanged(scope, &seen).await.unwrap());
    assert!(store.get(entry.key()).await.unwrap().is_some());

    // Read again, still stale: now it goes.
    let seen = store.lookup_eq(scope, "s-oslo", None, 10).await.unwrap().remove(0);
    assert!(store.remove_if_unchanged(scope, &seen).await.unwrap());
    assert!(store.get(entry.key()).await.unwrap().is_none());
    shards.drop_all().await;
}

async fn the_fence_refuses_entry_writes(shards: Shards) {
    let ids = Ids::new();
    let live = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(0);
    let entry = ids.entry("by_city", "s-oslo", "r1", 1, 1_000);
    assert!(live.put_pending(&entry).await.unwrap());
    RecordStore::new(&shards.dbs[0], &ids.shard).raise_fence(5).await.unwrap();

    let stale = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(4);
    fn refused<T>(result: Result<T, IndexError>) -> bool {
        matches!(result, Err(IndexError::Store(Error::StaleMap(_))))
    }
    assert!(refused(stale.put_pending(&ids.entry("by_city", "s-oslo", "r2", 1, 1_000)).await));
    assert!(refused(stale.put_live(&entry).await));
    assert!(refused(stale.claim_unique(&ids.entry("by_email", "s-a", "r1", 1, 1_000)).await));
    assert!(refused(stale.mark_live(entry.key(), 1, None).await));
    assert!(refused(stale.remove(entry.key(), 1).await));
    let seen = stale.get(entry.key()).await.unwrap().unwrap();
    assert!(refused(stale.remove_if_unchanged(entry.scope(), &seen).await));
    assert_eq!(stale.get(entry.key()).await.unwrap(), Some(seen), "reads still work and nothing changed");

    let current = IndexEntryStore::new(&shards.dbs[0], &ids.shard).routed_at(5);
    assert!(current.mark_live(entry.key(), 1, None).await.unwrap());
    shards.drop_all().await;
}

async fn deleting_an_index_goes_in_batches(shards: Shards) {
    let ids = Ids::new();
    let counter = AtomicU64::new(0);
    let store = IndexEntryStore::new(&shards.dbs[0], &ids.shard).counting(&counter);
    for i in 0..25 {
        assert!(store.put_live(&ids.entry("doomed", &format!("v{i:02}"), "r", 1, 1)).await.unwrap());
        assert!(store.put_live(&ids.entry("kept", &format!("v{i:02}"), "r", 1, 1)).await.unwrap());
    }
    counter.store(0, AtomicOrdering::Relaxed);
    assert_eq!(store.delete_index(ids.scope("doomed"), 10).await.unwrap(), 25);
    assert_eq!(counter.load(AtomicOrdering::Relaxed), 3, "two full batches and a short one");
    assert!(store.scan_entries(ids.scope("doomed"), None, 10).await.unwrap().is_empty());
    assert_eq!(store.scan_entries(ids.scope("kept"), None, 100).await.unwrap().len(), 25);
    assert_eq!(store.purge_tenant(&ids.tenant).await.unwrap(), 25);
    shards.drop_all().await;
}

// Several shards: placement, value order and the merge of fan-out pages.

/// Index values drawn from the crate's deterministic generator.
trait Scalars {
    /// Scalars with many ties and every ordering hazard: signs, decimals, huge magnitudes,
    /// strings with separators and escape characters, prefixes of each other, non-ASCII.
    fn scalar(&mut self) -> Value;
}

impl Scalars for XorShift {
    fn scalar(&mut self) -> Value {
        const STRINGS: [&str; 12] =
            ["", "a", "a\u{0}", "a\u{1}", "a\u{2}b", "ab", "b", "Z", "~", "é", "😀", "a\u{1}\u{1}"];
        match self.below(8) {
            0 => json!(self.below(2) == 1),
            1 => json!(self.below(21) as f64 - 10.0),
            2 => json!((self.below(2001) as f64 - 1000.0) / 8.0),
            3 => json!([-1e300, -5e-324, 0.0, 5e-324, 1e300, 1e15 + 1.0][self.below(6) as usize]),
            _ => json!(STRINGS[self.below(STRINGS.len() as u64) as usize]),
        }
    }
}

/// The natural order of scalars: booleans < numbers < strings, numbers numerically, strings by
/// UTF-8 bytes; tuples part by part.
fn natural(a: &[Value], b: &[Value]) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Bool(_) => 0,
            Value::Number(_) => 1,
            _ => 2,
        }
    }
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (Value::Bool(p), Value::Bool(q)) => p.cmp(q),
            (Value::Number(p), Value::Number(q)) => p.as_f64().unwrap().partial_cmp(&q.as_f64().unwrap()).unwrap(),
            (Value::String(p), Value::String(q)) => p.as_bytes().cmp(q.as_bytes()),
            _ => rank(x).cmp(&rank(y)),
        };
        if order.is_ne() {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

fn def(name: &str, fields: &[&str], unique: bool) -> IndexDef {
    let fields = fields.iter().map(|f| FieldPath::parse(f).unwrap()).collect();
    IndexDef::new(IndexName::parse(name).unwrap(), fields, unique, Layout::Normalized).unwrap()
}

struct Fixture {
    tenant: TenantId,
    collection: CollectionName,
    /// `(record key, record value)` in the order they were indexed.
    records: Vec<(RecordKey, Value)>,
}

/// 150 records with random scores and towns, indexed by `by_score` and `by_town_score`, written
/// in a shuffled order to the shards their entries hash to.
async fn populate(shards: &Shards, seed: u64) -> Fixture {
    let mut g = XorShift(seed);
    let tenant = TenantId::parse("acme").unwrap();
    let collection = CollectionName::parse("players").unwrap();
    let mut records: Vec<(RecordKey, Value)> = (0..150)
        .map(|i| {
            let key = RecordKey::parse(&format!("p{:03}", (i * 37) % 150)).unwrap();
            (key, json!({"score": g.scalar(), "town": g.scalar()}))
        })
        .collect();
    // One record without a score and one with a structured score: neither is indexed.
    records.push((RecordKey::parse("q-none").unwrap(), json!({"town": "x"})));
    records.push((RecordKey::parse("q-object").unwrap(), json!({"score": {"n": 1}, "town": "x"})));
    for i in (1..records.len()).rev() {
        records.swap(i, g.below(i as u64 + 1) as usize);
    }
    for index in [def("by_score", &["/score"], false), def("by_town_score", &["/town", "/score"], false)] {
        for (key, value) in &records {
            let value = &json_text(value);
            let record = RecordVersion { tenant: &tenant, collection: &collection, key, vshard: 0, version: 1, value };
            let Some(entry) = index.entry_for(&record, VSHARDS, 1_000).unwrap() else { continue };
            assert!(shards.store(shards.shard_of(entry.vshard)).put_live(&entry).await.unwrap());
        }
    }
    Fixture { tenant, collection, records }
}

/// A value as the JSON text a record holds.
fn json_text(value: &Value) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(value).unwrap()
}

/// `(decoded value, record key)` of each entry.
fn decoded(entries: &[StoredEntry]) -> Vec<(Vec<Value>, String)> {
    entries.iter().map(|e| (ValueKey::from_encoded(&e.value_key).unwrap().decode(), e.record_key.clone())).collect()
}

/// The records' indexed values for `fields`, sorted naturally, then by record key.
fn expected(fixture: &Fixture, fields: &[&str], keep: impl Fn(&[Value]) -> bool) -> Vec<(Vec<Value>, String)> {
    let mut rows: Vec<(Vec<Value>, String)> = fixture
        .records
        .iter()
        .filter_map(|(key, value)| {
            let parts: Option<Vec<Value>> = fields
                .iter()
                .map(|f| value.pointer(f).filter(|v| v.is_boolean() || v.is_number() || v.is_string()).cloned())
                .collect();
            parts.filter(|p| keep(p)).map(|p| (p, key.as_str().to_owned()))
        })
        .collect();
    rows.sort_by(|a, b| natural(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
    rows
}

fn assert_same_order(got: &[(Vec<Value>, String)], want: &[(Vec<Value>, String)]) {
    assert_eq!(got.len(), want.len(), "got {got:?}\nwant {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(natural(&g.0, &w.0).is_eq() && g.1 == w.1, "got {g:?}, want {w:?}\nall: {got:?}");
    }
}

async fn values_come_back_in_value_order(shards: Shards) {
    let fixture = populate(&shards, 0x1d3a_0001).await;
    let scope = |index| IndexScope { tenant: &fixture.tenant, collection: &fixture.collection, index };

    // Each shard alone returns its entries sorted by value (the SQL order is the value order).
    for shard in 0..SHARDS {
        let entries = shards.store(shard).scan_entries(scope("by_score"), None, 1_000).await.unwrap();
        assert!(entries.len() > 10, "every shard holds some entries");
        let rows = decoded(&entries);
        assert!(rows.windows(2).all(|w| natural(&w[0].0, &w[1].0).then_with(|| w[0].1.cmp(&w[1].1)).is_lt()));
    }

    // All shards merged, walked in pages of 7: the whole index in value order, nothing twice.
    let all = shards.walk(scope("by_score"), Bound::Unbounded, Bound::Unbounded, 7).await;
    assert_same_order(&decoded(&all), &expected(&fixture, &["/score"], |_| true));
    let composite = shards.walk(scope("by_town_score"), Bound::Unbounded, Bound::Unbounded, 5).await;
    assert_same_order(&decoded(&composite), &expected(&fixture, &["/town", "/score"], |_| true));
    shards.drop_all().await;
}

async fn ranges_fan_out_and_merge(shards: Shards) {
    let fixture = populate(&shards, 0x1d3a_0002).await;
    let scope = |index| IndexScope { tenant: &fixture.tenant, collection: &fixture.collection, index };

    // from=-2.5 (inclusive) to=a (exclusive): numbers from -2.5 up, then strings below "a".
    let (from, to) = (ValueKey::from_query("-2.5").unwrap(), ValueKey::from_query("a").unwrap());
    let got = shards.walk(scope("by_score"), Bound::Included(from.as_str()), Bound::Excluded(to.as_str()), 4).await;
    let want =
        expected(&fixture, &["/score"], |v| natural(v, &[json!(-2.5)]).is_ge() && natural(v, &[json!("a")]).is_lt());
    assert!(want.len() > 10);
    assert_same_order(&decoded(&got), &want);

    // A look-up by the first field of a composite index: every town "a\u{1}", any score.
    let town = ValueKey::from_query(r#"["a\u0001"]"#).unwrap();
    let (from, to) = town.prefix_bounds();
    let got = shards
        .walk(scope("by_town_score"), from.as_ref().map(String::as_str), to.as_ref().map(String::as_str), 3)
        .await;
    let want = expected(&fixture, &["/town", "/score"], |v| v[0] == json!("a\u{1}"));
    assert!(!want.is_empty());
    assert_same_order(&decoded(&got), &want);
    shards.drop_all().await;
}

async fn an_equality_look_up_touches_one_shard(shards: Shards) {
    let fixture = populate(&shards, 0x1d3a_0003).await;
    let index = IndexName::parse("by_score").unwrap();
    let scope = IndexScope { tenant: &fixture.tenant, collection: &fixture.collection, index: index.as_str() };
    let mut touched = [0u64; SHARDS];
    for raw in ["\"a\"", "b", "true", "-3", "0", "\"\""] {
        let value = ValueKey::from_query(raw).unwrap();
        let shard = shards.shard_of(entry_vshard(&fixture.tenant, &fixture.collection, &index, &value, VSHARDS));
        shards.reset_counters();
        let hits = shards.store(shard).lookup_eq(scope, value.as_str(), None, 1_000).await.unwrap();
        let mut want = [0u64; SHARDS];
        want[shard] = 1;
        assert_eq!(shards.statements(), want, "{raw}: one statement, on the value's shard only");
        touched[shard] += 1;
        let got: Vec<String> = hits.iter().map(|e| e.record_key.clone()).collect();
        let want: Vec<String> =
            expected(&fixture, &["/score"], |v| ValueKey::encode(&[&json_text(&v[0])]).unwrap() == Some(value.clone()))
                .into_iter()
                .map(|(_, key)| key)
                .collect();
        assert_eq!(got, want, "{raw}");
    }
    assert!(touched.iter().filter(|&&n| n > 0).count() > 1, "the values spread over shards: {touched:?}");
    shards.drop_all().await;
}

async fn a_unique_index_write_flow(shards: Shards) {
    let index = def("by_email", &["/email"], true);
    let (tenant, collection) = (TenantId::parse("acme").unwrap(), CollectionName::parse("users").unwrap());
    let (ann, bob) = (RecordKey::parse("ann").unwrap(), RecordKey::parse("bob").unwrap());
    let version = |key, version, value| RecordVersion {
        tenant: &tenant,
        collection: &collection,
        key,
        vshard: 9,
        version,
        value,
    };

    // Ann is created with a@x: claim (pending), the record commits, the entry goes live.
    let v1 = json_text(&json!({"email": "a@x"}));
    let change = index.change(None, Some(&v1)).unwrap();
    let key = change.write.unwrap();
    let entry = index.entry(&version(&ann, 1, &v1), &key, VSHARDS, 1_000);
    let store = shards.store(shards.shard_of(entry.vshard));
    assert_eq!(store.claim_unique(&entry).await.unwrap(), Claim::Won);
    assert!(store.mark_live(entry.key(), 1, entry.copy.as_deref()).await.unwrap());

    // Bob wants a@x too: held by Ann, whose record holds it, so the caller answers 409.
    let bob_value = json_text(&json!({"email": "a@x"}));
    let bob_entry = index.entry(&version(&bob, 1, &bob_value), &key, VSHARDS, 2_000);
    let Claim::Held(holder) = store.claim_unique(&bob_entry).await.unwrap() else { panic!("a@x is Ann's") };
    assert_eq!((holder.record_key.as_str(), holder.state, holder.record_vshard), ("ann", EntryState::Live, 9));

    // Ann moves to b@x: the new value is claimed first, the old one released after the commit.
    let v2 = json_text(&json!({"email": "b@x"}));
    let change = index.change(Some(&v1), Some(&v2)).unwrap();
    let (new_key, old_key) = (change.write.unwrap(), change.remove.unwrap());
    assert_eq!(old_key, key);
    let new_entry = index.entry(&version(&ann, 2, &v2), &new_key, VSHARDS, 3_000);
    let new_store = shards.store(shards.shard_of(new_entry.vshard));
    assert_eq!(new_store.claim_unique(&new_entry).await.unwrap(), Claim::Won);
    assert!(new_store.mark_live(new_entry.key(), 2, None).await.unwrap());
    assert!(store.remove(entry.key(), 2).await.unwrap());

    // Now a@x is free for Bob.
    assert_eq!(store.claim_unique(&bob_entry).await.unwrap(), Claim::Won);
    shards.drop_all().await;
}

shardgate_shard_router::on_both_engines!(
    sqlite: Shards::sqlite(),
    postgres: Shards::postgres();
    pending_live_removed,
    one_winner_per_unique_value,
    stale_claims_are_taken_over_by_compare_and_swap,
    look_ups_page_in_value_order,
    repairs_spare_rewritten_entries,
    the_fence_refuses_entry_writes,
    deleting_an_index_goes_in_batches,
    values_come_back_in_value_order,
    ranges_fan_out_and_merge,
    an_equality_look_up_touches_one_shard,
    a_unique_index_write_flow,
);
