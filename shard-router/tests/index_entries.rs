//! Index entries on a shard, on both engines: the pending → live → removed life of an entry and
//! its version guards, one winner among concurrent claimers of a unique value, take-over of a
//! stale claim by compare-and-swap, equality and range look-ups with cursors, repairs that spare
//! rewritten entries, the shard fence, batched index deletes and the statement counter.
//!
//! Value keys are opaque text here (their encoding belongs to `index-tables`); all the store
//! relies on is their byte order.

mod common;

use common::TestDb;

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use shardgate_shard_router::index_entries::{
    Claim, EntryAfter, EntryKey, EntryState, IndexEntry, IndexEntryStore, IndexScope, StoredEntry,
};
use shardgate_shard_router::records::RecordStore;
use shardgate_shard_router::{CollectionName, Error, RecordKey, ShardId, TenantId};

/// The index every test writes to, unless it says otherwise.
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

async fn pending_live_removed(test: TestDb) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0);
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
    test.drop_db().await;
}

async fn one_winner_per_unique_value(test: TestDb) {
    let ids = Arc::new(Ids::new());
    let db = Arc::new(test.db.clone());
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
        let store = IndexEntryStore::new(&test.db, &ids.shard);
        let hits = store.lookup_eq(ids.scope("by_email"), &value, None, 100).await.unwrap();
        assert_eq!(records(&hits), [(value.as_str(), winner.as_str())], "exactly one entry per unique value");
    }

    // The holder renewing its own claim wins again (pending, new claim time and version).
    let store = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0);
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
    test.drop_db().await;
}

async fn stale_claims_are_taken_over_by_compare_and_swap(test: TestDb) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0);
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
    let db = Arc::new(test.db.clone());
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
    test.drop_db().await;
}

async fn look_ups_page_in_value_order(test: TestDb) {
    let ids = Ids::new();
    let counter = AtomicU64::new(0);
    let store = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0).counting(&counter);
    let scope = ids.scope("by_score");
    // Inserted out of order; another index and another tenant hold the same values.
    for (value, record) in [("v3", "c"), ("v1", "b"), ("v2", "a"), ("v1", "a"), ("v4", "a"), ("v2", "c"), ("v1", "c")] {
        assert!(store.put_live(&ids.entry("by_score", value, record, 1, 1_000)).await.unwrap());
        assert!(store.put_live(&ids.entry("by_other", value, record, 1, 1_000)).await.unwrap());
    }
    let other = IndexEntry { tenant: TenantId::parse("globex").unwrap(), ..ids.entry("by_score", "v1", "z", 1, 1) };
    assert!(store.put_live(&other).await.unwrap());

    counter.store(0, Ordering::Relaxed);
    let page = store.lookup_eq(scope, "v1", None, 2).await.unwrap();
    assert_eq!(records(&page), [("v1", "a"), ("v1", "b")]);
    assert_eq!(counter.load(Ordering::Relaxed), 1, "an equality look-up is one statement");
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
    test.drop_db().await;
}

async fn repairs_spare_rewritten_entries(test: TestDb) {
    let ids = Ids::new();
    let store = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0);
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
    test.drop_db().await;
}

async fn the_fence_refuses_entry_writes(test: TestDb) {
    let ids = Ids::new();
    let live = IndexEntryStore::new(&test.db, &ids.shard).routed_at(0);
    let entry = ids.entry("by_city", "s-oslo", "r1", 1, 1_000);
    assert!(live.put_pending(&entry).await.unwrap());
    RecordStore::new(&test.db, &ids.shard).raise_fence(5).await.unwrap();

    let stale = IndexEntryStore::new(&test.db, &ids.shard).routed_at(4);
    fn refused<T>(result: Result<T, Error>) -> bool {
        matches!(result, Err(Error::StaleMap(_)))
    }
    assert!(refused(stale.put_pending(&ids.entry("by_city", "s-oslo", "r2", 1, 1_000)).await));
    assert!(refused(stale.put_live(&entry).await));
    assert!(refused(stale.claim_unique(&ids.entry("by_email", "s-a", "r1", 1, 1_000)).await));
    assert!(refused(stale.mark_live(entry.key(), 1, None).await));
    assert!(refused(stale.remove(entry.key(), 1).await));
    let seen = stale.get(entry.key()).await.unwrap().unwrap();
    assert!(refused(stale.remove_if_unchanged(entry.scope(), &seen).await));
    assert_eq!(stale.get(entry.key()).await.unwrap(), Some(seen), "reads still work and nothing changed");

    let current = IndexEntryStore::new(&test.db, &ids.shard).routed_at(5);
    assert!(current.mark_live(entry.key(), 1, None).await.unwrap());
    test.drop_db().await;
}

async fn deleting_an_index_goes_in_batches(test: TestDb) {
    let ids = Ids::new();
    let counter = AtomicU64::new(0);
    let store = IndexEntryStore::new(&test.db, &ids.shard).counting(&counter);
    for i in 0..25 {
        assert!(store.put_live(&ids.entry("doomed", &format!("v{i:02}"), "r", 1, 1)).await.unwrap());
        assert!(store.put_live(&ids.entry("kept", &format!("v{i:02}"), "r", 1, 1)).await.unwrap());
    }
    counter.store(0, Ordering::Relaxed);
    assert_eq!(store.delete_index(ids.scope("doomed"), 10).await.unwrap(), 25);
    assert_eq!(counter.load(Ordering::Relaxed), 3, "two full batches and a short one");
    assert!(store.scan_entries(ids.scope("doomed"), None, 10).await.unwrap().is_empty());
    assert_eq!(store.scan_entries(ids.scope("kept"), None, 100).await.unwrap().len(), 25);
    assert_eq!(store.purge_tenant(&ids.tenant).await.unwrap(), 25);
    test.drop_db().await;
}

macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::TestDb::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::TestDb::postgres("sg_index").await).await;
                }
            )*
        }
    };
}

on_both_engines!(
    pending_live_removed,
    one_winner_per_unique_value,
    stale_claims_are_taken_over_by_compare_and_swap,
    look_ups_page_in_value_order,
    repairs_spare_rewritten_entries,
    the_fence_refuses_entry_writes,
    deleting_an_index_goes_in_batches,
);
