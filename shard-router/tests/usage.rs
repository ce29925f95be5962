//! A tenant's usage on a shard, on both engines: kept by the shard's triggers in the same
//! transaction as its rows, it always equals what a count of the rows says, through every kind
//! of write (records home and spread, blobs, index entries), batches of concurrent writes,
//! purges, a transaction rolled back, and the upgrade of a shard that already held rows.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::TestDb;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use shardgate_shard_router::batch::BatchKind;
use shardgate_shard_router::blobs::{BLOB_CHUNK_BYTES, BlobCommit, BlobCondition, BlobPath, BlobStore};
use shardgate_shard_router::records::{Layout, RecordAddress, RecordStore, WriteCondition};
use shardgate_shard_router::storage::usage::{
    Placement, Placing, SpreadHere, Usage, counted_tenant_usage, every_tenant_usage, tenant_usage,
};
use shardgate_shard_router::{CollectionName, Database, Engine, FencedShard, RecordKey, ShardId, ShardStore, TenantId};

fn shard_id() -> ShardId {
    ShardId::parse("shard-0").unwrap()
}

fn tenant(raw: &str) -> TenantId {
    TenantId::parse(raw).unwrap()
}

/// A JSON string value of `len` bytes in all (quotes included).
fn value(len: usize) -> Box<RawValue> {
    RawValue::from_string(format!("\"{}\"", "x".repeat(len - 2))).unwrap()
}

/// How the map would place what these tests write, seen from the shard: the collections they
/// spread are spread (`c`, `h` and `spread` by hash, `r` and `ranged` by range, none of their
/// ranges elsewhere), and the shard is not the tenant's home, so nothing here lies where the map
/// does not place it.
fn as_written() -> Placing {
    let spread = [
        ("c", SpreadHere::Hash),
        ("h", SpreadHere::Hash),
        ("r", SpreadHere::Range(Vec::new())),
        ("ranged", SpreadHere::Range(Vec::new())),
        ("spread", SpreadHere::Hash),
    ];
    Placing { home: false, spread: spread.into_iter().map(|(name, here)| (name.to_owned(), here)).collect() }
}

/// What the shard keeps for `tenant`, and what its rows say, per placement.
async fn kept_and_counted(db: &Database, tenant: &TenantId) -> (Vec<(Placement, Usage)>, Vec<(Placement, Usage)>) {
    let id = shard_id();
    let shard = FencedShard::new(db, &id);
    (tenant_usage(&shard, tenant, &as_written()).await.unwrap(), counted_tenant_usage(&shard, tenant).await.unwrap())
}

/// Asserts that the shard's usage of `tenant` equals the count of its rows; returns it.
async fn assert_exact(db: &Database, tenant: &TenantId, when: &str) -> Vec<(Placement, Usage)> {
    let (kept, counted) = kept_and_counted(db, tenant).await;
    assert_eq!(kept, counted, "{tenant} {when}: the usage kept equals the rows counted");
    kept
}

/// The part of `placed` at `placement` (nothing if none).
fn at(placed: &[(Placement, Usage)], placement: Placement) -> Usage {
    placed.iter().find(|(p, _)| *p == placement).map(|(_, u)| *u).unwrap_or_default()
}

struct Record<'a> {
    store: RecordStore<'a>,
    tenant: TenantId,
    collection: CollectionName,
    /// The vshard its writes carry (what places a hashed record).
    vshard: u32,
}

impl Record<'_> {
    fn addr<'k>(&'k self, key: &'k RecordKey) -> RecordAddress<'k> {
        RecordAddress { tenant: &self.tenant, collection: &self.collection, key }
    }

    async fn put(&self, key: &str, len: usize) {
        let key = RecordKey::parse(key).unwrap();
        self.store.put(self.addr(&key), self.vshard, &value(len), &WriteCondition::Always, 1).await.unwrap();
    }

    async fn delete(&self, key: &str) {
        let key = RecordKey::parse(key).unwrap();
        self.store.delete(self.addr(&key), &WriteCondition::Always, 2).await.unwrap();
    }
}

/// Uploads `len` bytes to `path` of `tenant`, replacing what is there.
async fn upload(store: &BlobStore<'_>, tenant: &TenantId, path: &str, len: usize) {
    let path = BlobPath::parse(path).unwrap();
    let data = vec![7u8; len];
    let upload = store.begin_upload(tenant, &path, 7, 1).await.unwrap();
    for (seq, chunk) in data.chunks(BLOB_CHUNK_BYTES).enumerate() {
        store.put_chunk(&upload, seq as u64, chunk, 1).await.unwrap();
    }
    let commit = BlobCommit {
        size: len as u64,
        sha256_hex: format!("{:x}", Sha256::digest(&data)),
        content_type: "application/octet-stream".into(),
        chunk_count: len.div_ceil(BLOB_CHUNK_BYTES) as u64,
        condition: BlobCondition::Always,
    };
    store.commit(&upload, commit, 2).await.unwrap();
}

/// Writes an index entry of `tenant` in `state` at `vshard`, as index-tables would.
async fn entry(db: &Database, tenant: &TenantId, value_key: &str, vshard: i64, state: &str) {
    sqlx::query(
        "INSERT INTO index_entries (tenant, collection, index_name, value_key, record_key, vshard, record_vshard, \
         record_version, state, claimed_at, copy, unique_claim) VALUES ($1, 'c', 'by_x', $2, 'k', $3, 7, 1, $4, 1, NULL, 0)",
    )
    .bind(tenant.as_str())
    .bind(value_key)
    .bind(vshard)
    .bind(state)
    .execute(&db.pool)
    .await
    .unwrap();
}

async fn usage_follows_every_kind_of_write(test: TestDb) {
    let db = &test.db;
    let id = shard_id();
    let (acme, other) = (tenant("acme"), tenant("other"));
    let home = |t: &TenantId| Record {
        store: RecordStore::new(db, &id),
        tenant: t.clone(),
        collection: CollectionName::parse("things").unwrap(),
        vshard: 7,
    };
    let hashed = Record {
        store: RecordStore::new(db, &id).in_layout(Layout::Hash(17)),
        tenant: acme.clone(),
        collection: CollectionName::parse("spread").unwrap(),
        vshard: 17,
    };
    let ranged = Record {
        store: RecordStore::new(db, &id).in_layout(Layout::Range),
        tenant: acme.clone(),
        collection: CollectionName::parse("ranged").unwrap(),
        vshard: 7,
    };
    assert_eq!(assert_exact(db, &acme, "before anything").await, []);

    // Home records: created, overwritten bigger and smaller, deleted, re-created.
    let records = home(&acme);
    for (key, len) in [("a", 10), ("b", 20), ("c", 30), ("d", 40)] {
        records.put(key, len).await;
    }
    records.put("a", 100).await;
    records.put("b", 5).await;
    records.delete("c").await;
    records.delete("d").await;
    records.put("d", 8).await;
    let key = RecordKey::parse("b").unwrap();
    records.store.put(records.addr(&key), 7, &value(6), &WriteCondition::Exists, 3).await.unwrap();
    // Another tenant's writes are its own.
    home(&other).put("a", 50).await;
    let placed = assert_exact(db, &acme, "after home records").await;
    assert_eq!(
        at(&placed, Placement::Home),
        Usage { records: 3, record_bytes: 100 + 6 + 8, ..Usage::default() },
        "a, b and d live, c a tombstone"
    );

    // Spread records, by vshard and by range.
    hashed.put("h1", 12).await;
    hashed.put("h2", 13).await;
    hashed.delete("h2").await;
    ranged.put("r1", 14).await;
    let placed = assert_exact(db, &acme, "after spread records").await;
    assert_eq!(at(&placed, Placement::Vshard(17)), Usage { records: 1, record_bytes: 12, ..Usage::default() });
    assert_eq!(at(&placed, Placement::Range), Usage { records: 1, record_bytes: 14, ..Usage::default() });

    // Blobs: uploaded, replaced by a bigger one, another uploaded and deleted; an upload left
    // staging counts for nothing.
    let blobs = BlobStore::new(db, &id);
    upload(&blobs, &acme, "docs/a.bin", 1000).await;
    upload(&blobs, &acme, "docs/a.bin", BLOB_CHUNK_BYTES + 10).await;
    upload(&blobs, &acme, "docs/b.bin", 300).await;
    blobs.delete(&acme, &BlobPath::parse("docs/b.bin").unwrap(), &BlobCondition::Always, 3).await.unwrap();
    blobs.begin_upload(&acme, &BlobPath::parse("docs/c.bin").unwrap(), 7, 4).await.unwrap();
    let placed = assert_exact(db, &acme, "after blobs").await;
    let home_part = at(&placed, Placement::Home);
    assert_eq!((home_part.blobs, home_part.blob_bytes), (1, BLOB_CHUNK_BYTES as u64 + 10));

    // Index entries: pending ones count once live.
    entry(db, &acme, "v1", 40, "pending").await;
    entry(db, &acme, "v2", 40, "live").await;
    entry(db, &acme, "v3", 41, "live").await;
    assert_eq!(at(&assert_exact(db, &acme, "with a pending entry").await, Placement::Vshard(40)).index_entries, 1);
    sqlx::query("UPDATE index_entries SET state = 'live' WHERE value_key = 'v1'").execute(&db.pool).await.unwrap();
    sqlx::query("DELETE FROM index_entries WHERE value_key = 'v3'").execute(&db.pool).await.unwrap();
    let placed = assert_exact(db, &acme, "after index entries").await;
    assert_eq!(at(&placed, Placement::Vshard(40)).index_entries, 2);
    assert_eq!(at(&placed, Placement::Vshard(41)), Usage::default());

    // What a transaction rolled back did is not kept.
    let mut tx = db.pool.begin().await.unwrap();
    sqlx::query("DELETE FROM records WHERE tenant = 'acme'").execute(&mut *tx).await.unwrap();
    sqlx::query("DELETE FROM blobs WHERE tenant = 'acme'").execute(&mut *tx).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(at(&assert_exact(db, &acme, "after a rollback").await, Placement::Home).records, 3);

    // A purge takes everything of the tenant, and nothing of the other one.
    records.store.purge_tenant(&acme).await.unwrap();
    blobs.purge_tenant(&acme).await.unwrap();
    hashed.store.purge_tenant(&acme).await.unwrap();
    sqlx::query("DELETE FROM index_entries WHERE tenant = 'acme'").execute(&db.pool).await.unwrap();
    assert_eq!(assert_exact(db, &acme, "after its purge").await, []);
    let others = assert_exact(db, &other, "after acme's purge").await;
    assert_eq!(others, [(Placement::Home, Usage { records: 1, record_bytes: 50, ..Usage::default() })]);
    test.drop_db().await;
}

/// Writers of several tenants at once, through the batchers (puts and deletes, home and hash):
/// the usage kept equals the rows, and writes did meet in batches.
async fn batched_concurrent_writers_keep_usage_exact(test: TestDb) {
    const WRITERS: usize = 24;
    const WRITES: usize = 30;
    let tenants: Arc<Vec<TenantId>> = Arc::new(["t0", "t1", "t2"].map(tenant).to_vec());
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (db, tenants) = (test.db.clone(), tenants.clone());
        tasks.push(tokio::spawn(async move {
            let id = shard_id();
            for i in 0..WRITES {
                let tenant = &tenants[(w + i) % tenants.len()];
                let vshard = ((w + i) % 5) as u32;
                let layout = if w % 3 == 0 { Layout::Hash(vshard) } else { Layout::Home };
                let record = Record {
                    store: RecordStore::new(&db, &id).in_layout(layout),
                    tenant: tenant.clone(),
                    collection: CollectionName::parse("c").unwrap(),
                    vshard,
                };
                let key = format!("k{}", (w * 7 + i) % 11);
                if i % 4 == 3 {
                    let key = RecordKey::parse(&key).unwrap();
                    // Absent already is fine: another writer deleted it.
                    let _ = record.store.delete(record.addr(&key), &WriteCondition::Always, 2).await;
                } else {
                    record.put(&key, 3 + (w * 13 + i * 7) % 200).await;
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(std::time::Duration::from_secs(60), task).await.unwrap().unwrap();
    }
    for tenant in tenants.iter() {
        let placed = assert_exact(&test.db, tenant, "after concurrent writers").await;
        assert!(!placed.is_empty(), "{tenant} holds records");
    }
    // The first bucket counts the batches of one operation.
    let (counts, _) = test.db.batches().sizes(BatchKind::Write);
    assert!(counts[1..].iter().sum::<u64>() > 0, "some writes met in batches: {counts:?}");
    test.drop_db().await;
}

/// A shard that held rows before migration 0012 starts with their usage.
async fn an_upgraded_shard_starts_with_the_usage_of_its_rows(test: TestDb) {
    let engine = match test.db.engine {
        Engine::Sqlite => "sqlite",
        Engine::Postgres => "postgres",
    };
    // The migrations before 0012, from a folder of their own.
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/shard").join(engine);
    let before = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(&all).unwrap() {
        let file = file.unwrap();
        let name = file.file_name().into_string().unwrap();
        if name.as_str() < "0012" {
            std::fs::copy(file.path(), before.path().join(&name)).unwrap();
        }
    }
    sqlx::migrate::Migrator::new(before.path()).await.unwrap().run(&test.db.pool).await.unwrap();
    for sql in [
        "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) VALUES \
         ('acme', 'c', 'a', 7, 1, 1, 0, '\"é\"', 1), ('acme', 'c', 'b', 7, 2, 1, 1, 'null', 1), \
         ('bob', 'c', 'a', 9, 1, 1, 0, '{}', 1)",
        "INSERT INTO spread_records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
         VALUES ('acme', 'h', 'a', 3, 1, 1, 0, '12', 1), ('acme', 'r', 'a', -1, 1, 1, 0, '123', 1)",
        "INSERT INTO blobs (tenant, path, vshard, version, deleted, upload_id, size, sha256, content_type, chunk_size, \
         chunk_count, created_at, updated_at) VALUES ('acme', 'x', 7, 1, 0, 'u1', 100, '', '', 1, 1, 1, 1), \
         ('acme', 'y', 7, 2, 1, NULL, 0, '', '', 1, 1, 1, 1)",
    ] {
        sqlx::query(sql).execute(&test.db.pool).await.unwrap();
    }
    entry(&test.db, &tenant("acme"), "v", 3, "live").await;
    entry(&test.db, &tenant("acme"), "w", 3, "pending").await;

    test.db.migrate(shardgate_shard_router::db::Schema::Shard).await.unwrap();
    let placed = assert_exact(&test.db, &tenant("acme"), "after the upgrade").await;
    assert_eq!(
        placed,
        [
            (Placement::Home, Usage { records: 1, record_bytes: 4, blobs: 1, blob_bytes: 100, index_entries: 0 }),
            (Placement::Range, Usage { records: 1, record_bytes: 3, ..Usage::default() }),
            (Placement::Vshard(3), Usage { records: 1, record_bytes: 2, index_entries: 1, ..Usage::default() }),
        ],
        "\"é\" is four bytes; the tombstones and the pending entry count for nothing"
    );
    assert_exact(&test.db, &tenant("bob"), "after the upgrade").await;
    // And the triggers run from then on.
    let id = shard_id();
    let records = Record {
        store: RecordStore::new(&test.db, &id),
        tenant: tenant("acme"),
        collection: CollectionName::parse("c").unwrap(),
        vshard: 7,
    };
    records.put("b", 10).await;
    assert_eq!(at(&assert_exact(&test.db, &tenant("acme"), "after a write").await, Placement::Home).records, 2);
    test.drop_db().await;
}

/// PostgreSQL: a transaction that wrote and holds a tenant's usage row makes no other writer of
/// the tenant wait for it, so a writer of a record it then waits for never waits for it in turn
/// (with one usage row per tenant, or a fixed stripe per connection that two connections share,
/// the second writer would wait for the first, which waits for the second's record: a deadlock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_writer_never_waits_for_a_usage_row_another_transaction_holds() {
    let test = TestDb::postgres("sg_usage_locks").await;
    let insert = "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
                  VALUES ('acme', 'c', $1, 7, 1, 1, 0, $2, 1)";
    let update = "UPDATE records SET value = $2, version = version + 1 WHERE tenant = 'acme' AND collection = 'c' \
                  AND key = $1";
    sqlx::query(insert).bind("k2").bind("\"two\"").execute(&test.db.pool).await.unwrap();
    let mut first = test.db.pool.begin().await.unwrap();
    sqlx::query(insert).bind("k1").bind("\"one\"").execute(&mut *first).await.unwrap();
    let mut second = test.db.pool.begin().await.unwrap();
    sqlx::query("SET LOCAL lock_timeout = '2s'").execute(&mut *second).await.unwrap();
    sqlx::query(update)
        .bind("k2")
        .bind("\"second\"")
        .execute(&mut *second)
        .await
        .expect("the second writer does not wait for the usage row the first holds");
    // The first now waits for the record the second holds, until the second commits.
    let waiting = tokio::spawn(async move {
        sqlx::query(update).bind("k2").bind("\"first\"").execute(&mut *first).await.unwrap();
        first.commit().await.unwrap();
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the first waits for the second's record");
    second.commit().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), waiting).await.unwrap().unwrap();
    let placed = assert_exact(&test.db, &tenant("acme"), "after both committed").await;
    assert_eq!(at(&placed, Placement::Home), Usage { records: 2, record_bytes: 5 + 7, ..Usage::default() });
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tenant_usage WHERE tenant = 'acme'")
        .fetch_one(&test.db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 2, "a second row when the first was held, and no more");
    test.drop_db().await;
}

/// Rows the map places on another shard are not counted here, whatever placed them: the range
/// copy a move made before its switch (or left until its clean-up), the spread rows of a
/// collection the map does not spread, and the home records of one it does (a change of
/// distribution's copy, or its old layout). Read alone and for every tenant at once alike.
async fn rows_the_map_places_elsewhere_are_not_counted(test: TestDb) {
    let db = &test.db;
    let id = shard_id();
    let shard = FencedShard::new(db, &id);
    let (acme, other) = (tenant("acme"), tenant("other"));
    let record = |t: &TenantId, collection: &str, layout: Layout, vshard: u32| Record {
        store: RecordStore::new(db, &id).in_layout(layout),
        tenant: t.clone(),
        collection: CollectionName::parse(collection).unwrap(),
        vshard,
    };
    let (home, hashed, ranged) = (
        record(&acme, "c", Layout::Home, 7),
        record(&acme, "h", Layout::Hash(3), 3),
        record(&acme, "r", Layout::Range, 7),
    );
    for key in ["a", "b"] {
        home.put(key, 10).await;
    }
    hashed.put("a", 20).await;
    for (key, len) in [("a", 100), ("k", 200), ("m", 400), ("z", 800)] {
        ranged.put(key, len).await;
    }
    // Another tenant's range rows, of a collection its map entry does not spread.
    record(&other, "r", Layout::Range, 7).put("a", 1000).await;
    let records = |records: u64, record_bytes: u64| Usage { records, record_bytes, ..Usage::default() };
    let spread = |range: SpreadHere| Placing {
        home: false,
        spread: vec![("h".to_owned(), SpreadHere::Hash), ("r".to_owned(), range)],
    };
    let read = async |tenant: &TenantId, placing: &Placing| tenant_usage(&shard, tenant, placing).await.unwrap();
    let whole = read(&acme, &spread(SpreadHere::Range(Vec::new()))).await;
    assert_eq!(whole, counted_tenant_usage(&shard, &acme).await.unwrap(), "nothing placed elsewhere");
    assert_eq!(at(&whole, Placement::Range), records(4, 1500));

    // A range move's copies: the keys from "m" on (and, apart, those before "b") are elsewhere.
    let moved = read(&acme, &spread(SpreadHere::Range(vec![("m".to_owned(), None)]))).await;
    assert_eq!(at(&moved, Placement::Range), records(2, 300));
    assert_eq!(at(&moved, Placement::Home), records(2, 20), "other parts are untouched");
    assert_eq!(at(&moved, Placement::Vshard(3)), records(1, 20));
    let apart = SpreadHere::Range(vec![(String::new(), Some("b".to_owned())), ("m".to_owned(), Some("n".to_owned()))]);
    assert_eq!(at(&read(&acme, &spread(apart)).await, Placement::Range), records(2, 1000));

    // The map spreads nothing of acme's: every spread row is a copy of a change of distribution.
    let unspread = read(&acme, &Placing::default()).await;
    assert_eq!(unspread, vec![(Placement::Home, records(2, 20))]);
    // The map spreads `c` and this is acme's home: its home records are the old layout.
    let mut respread = spread(SpreadHere::Range(Vec::new()));
    respread.home = true;
    respread.spread.insert(0, ("c".to_owned(), SpreadHere::Hash));
    assert_eq!(at(&read(&acme, &respread).await, Placement::Home), Usage::default());

    // Every tenant at once: acme as `moved` says, `other` (no spread collection) without its copy.
    let placings = HashMap::from([("acme".to_owned(), spread(SpreadHere::Range(vec![("m".to_owned(), None)])))]);
    let every = every_tenant_usage(&shard, &placings).await.unwrap();
    assert_eq!(every, vec![("acme".to_owned(), moved)], "other's only rows are placed elsewhere");
    test.drop_db().await;
}

mod unmigrated {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        an_upgraded_shard_starts_with_the_usage_of_its_rows(TestDb::sqlite_unmigrated()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        an_upgraded_shard_starts_with_the_usage_of_its_rows(TestDb::postgres_unmigrated("sg_usage_up").await).await;
    }
}

shardgate_shard_router::on_both_engines!(
    sqlite: TestDb::sqlite(),
    postgres: TestDb::postgres("sg_usage");
    usage_follows_every_kind_of_write,
    batched_concurrent_writers_keep_usage_exact,
    rows_the_map_places_elsewhere_are_not_counted,
);
