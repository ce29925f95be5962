//! Concurrent writers on one record, on both engines: every acknowledged write gets its own
//! version, none is lost, and of several writers racing with the same `If-Match` exactly one wins.

mod common;

use common::TestDb;

use std::sync::Arc;

use serde_json::value::RawValue;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::records::{RecordAddress, RecordStore, WriteCondition};
use shardgate_shard_router::{CollectionName, Error, RecordKey, ShardId, TenantId};

struct Ids {
    tenant: TenantId,
    collection: CollectionName,
    key: RecordKey,
    shard: ShardId,
}

fn ids() -> Arc<Ids> {
    Arc::new(Ids {
        tenant: TenantId::parse("acme").unwrap(),
        collection: CollectionName::parse("counters").unwrap(),
        key: RecordKey::parse("hot").unwrap(),
        shard: ShardId::parse("shard-0").unwrap(),
    })
}

fn value(n: usize) -> Box<RawValue> {
    RawValue::from_string(format!("{{\"n\":{n}}}")).unwrap()
}

async fn no_acknowledged_write_is_lost(test: TestDb) {
    const WRITERS: usize = 8;
    const WRITES: usize = 25;
    let ids = ids();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (db, ids) = (test.db.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let store = RecordStore::new(&db, &ids.shard);
            let addr = RecordAddress { tenant: &ids.tenant, collection: &ids.collection, key: &ids.key };
            let mut versions = Vec::new();
            for i in 0..WRITES {
                let outcome = store.put(addr, 7, &value(w * 1000 + i), &WriteCondition::Always, 1).await.unwrap();
                versions.push(outcome.record.version);
            }
            versions
        }));
    }
    let mut versions = Vec::new();
    for task in tasks {
        versions.extend(task.await.unwrap());
    }
    versions.sort_unstable();
    let expected: Vec<i64> = (1..=(WRITERS * WRITES) as i64).collect();
    assert_eq!(versions, expected, "every acknowledged write has its own version, none skipped");
    let store = RecordStore::new(&test.db, &ids.shard);
    let addr = RecordAddress { tenant: &ids.tenant, collection: &ids.collection, key: &ids.key };
    assert_eq!(store.get(addr).await.unwrap().unwrap().version, (WRITERS * WRITES) as i64);
    test.drop_db().await;
}

async fn one_winner_per_if_match(test: TestDb) {
    let ids = ids();
    let store = RecordStore::new(&test.db, &ids.shard);
    let addr = RecordAddress { tenant: &ids.tenant, collection: &ids.collection, key: &ids.key };
    let first = store.put(addr, 7, &value(0), &WriteCondition::Absent, 1).await.unwrap();
    assert!(first.created);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let (db, ids) = (test.db.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let store = RecordStore::new(&db, &ids.shard);
            let addr = RecordAddress { tenant: &ids.tenant, collection: &ids.collection, key: &ids.key };
            store.put(addr, 7, &value(w), &WriteCondition::VersionIn(vec![1]), 2).await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(outcome) => {
                won += 1;
                assert_eq!(outcome.record.version, 2);
            }
            Err(Error::PreconditionFailed) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(won, 1, "exactly one conditional writer wins");
    // Versions never go backwards across delete and re-create.
    let deleted = store.delete(addr, &WriteCondition::Always, 3).await.unwrap();
    assert_eq!(deleted, 3);
    assert!(store.get(addr).await.unwrap().is_none());
    let again = store.put(addr, 7, &value(9), &WriteCondition::Absent, 4).await.unwrap();
    assert!(again.created);
    assert_eq!(again.record.version, 4);
    test.drop_db().await;
}

/// For each `story => sqlite_name, postgres_name`, a test of that name running the story on a
/// fresh SQLite shard, and one running it on a fresh PostgreSQL shard.
macro_rules! on_both_engines {
    ($($story:ident => $sqlite:ident, $postgres:ident;)+) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            $story(TestDb::sqlite().await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            $story(TestDb::postgres("sg_cas").await).await;
        }
    )+};
}

on_both_engines! {
    no_acknowledged_write_is_lost => no_acknowledged_write_is_lost_sqlite, no_acknowledged_write_is_lost_postgres;
    one_winner_per_if_match => one_winner_per_if_match_sqlite, one_winner_per_if_match_postgres;
}
