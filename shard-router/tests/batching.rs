//! Smart batching on the shard path, on both engines: operations that meet in one batch each
//! keep the outcome a lone statement would have given them (created or not, their own version,
//! their own fence, 404 and 412), and two writes of one key in one batch are decided one after
//! the other.
//!
//! To put operations into one batch, a test takes every connection of the shard's pool: the
//! first operation's batch then waits for a connection, the operations sent meanwhile queue
//! behind it, and when the test gives the connections back they leave together as the next batch
//! (the batch size histogram shows it). The shard runs one batch of a kind at a time here
//! (`max_in_flight = 1`), so which operations meet is certain.
//!
//! On PostgreSQL, the plans of the batch statements and of a listing are checked too: each finds
//! its rows through the key index, whatever the size of the table.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::TestDb;
use serde_json::value::RawValue;
use shardgate_shard_router::batch::BatchKind;
use shardgate_shard_router::records::{PutOutcome, RecordAddress, RecordRead, RecordStore, WriteCondition};
use shardgate_shard_router::shard::{FencedShard, MoveSubject};
use shardgate_shard_router::storage::meter::{LoadMeter, MeterConfig, Work};
use shardgate_shard_router::{
    BatchingConfig, CollectionName, Database, Error, RecordKey, ShardId, ShardStore, TenantId,
};

fn value(n: usize) -> Box<RawValue> {
    RawValue::from_string(format!("{{\"n\":{n}}}")).unwrap()
}

/// One record's address, owned so that a task can hold it.
#[derive(Clone)]
struct Addr {
    tenant: TenantId,
    collection: CollectionName,
    key: RecordKey,
}

impl Addr {
    fn new(tenant: &str, key: &str) -> Self {
        Self {
            tenant: TenantId::parse(tenant).unwrap(),
            collection: CollectionName::parse("things").unwrap(),
            key: RecordKey::parse(key).unwrap(),
        }
    }

    fn get(&self) -> RecordAddress<'_> {
        RecordAddress { tenant: &self.tenant, collection: &self.collection, key: &self.key }
    }
}

/// `test`'s shard database, running one batch of a kind at a time.
fn one_in_flight(test: &TestDb) -> Database {
    test.db.clone().batching(BatchingConfig { max_in_flight: 1, ..BatchingConfig::default() })
}

fn shard_id() -> ShardId {
    ShardId::parse("shard-0").unwrap()
}

/// How many batches of `kind` the shard has sent, and how many of at least `size` operations.
fn batches(db: &Database, kind: BatchKind, size: usize) -> (u64, u64) {
    let (counts, _) = db.batches().sizes(kind);
    let bounds = shardgate_shard_router::batch::SIZE_BUCKETS;
    // A bucket holds sizes above the previous bound up to its own.
    let from = bounds.iter().position(|b| *b as usize >= size).unwrap_or(bounds.len());
    let lower = if from == 0 { 1 } else { bounds[from - 1] as usize + 1 };
    assert_eq!(lower, size, "ask for a size that starts a bucket");
    (counts.iter().sum(), counts[from..].iter().sum())
}

/// Runs `first`, then, once its batch waits for a connection, `rest`, all at once, and gives the
/// connections back: `rest` leaves as one batch. Returns their answers, `first`'s first.
async fn in_one_batch<T: Send + 'static>(
    db: &Database,
    first: impl std::future::Future<Output = T> + Send + 'static,
    rest: Vec<futures::future::BoxFuture<'static, T>>,
) -> Vec<T> {
    let mut held = Vec::new();
    for _ in 0..db.max_connections() {
        held.push(db.pool.acquire().await.unwrap());
    }
    let first = tokio::spawn(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rest: Vec<_> = rest.into_iter().map(tokio::spawn).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(held);
    let mut answers = vec![tokio::time::timeout(Duration::from_secs(20), first).await.unwrap().unwrap()];
    for task in rest {
        answers.push(tokio::time::timeout(Duration::from_secs(20), task).await.unwrap().unwrap());
    }
    answers
}

type Put = Result<PutOutcome, Error>;

/// An unconditional put of `value(n)` at `addr`, routed on the map of `epoch`.
fn put(db: &Database, addr: &Addr, n: usize, epoch: u64) -> futures::future::BoxFuture<'static, Put> {
    let (db, addr) = (db.clone(), addr.clone());
    Box::pin(async move {
        let id = shard_id();
        let store = RecordStore::new(&db, &id).routed_at(epoch);
        store.put(addr.get(), 3, &value(n), &WriteCondition::Always, 10).await
    })
}

async fn writes_in_one_batch_keep_their_own_outcomes(test: TestDb) {
    let db = &one_in_flight(&test);
    let id = shard_id();
    let store = RecordStore::new(db, &id);
    let (old, gone, fresh, twice) =
        (Addr::new("acme", "old"), Addr::new("acme", "gone"), Addr::new("acme", "fresh"), Addr::new("acme", "twice"));
    let (frozen, stale) = (Addr::new("moving", "x"), Addr::new("acme", "stale"));
    store.put(old.get(), 3, &value(0), &WriteCondition::Always, 1).await.unwrap();
    store.put(gone.get(), 3, &value(0), &WriteCondition::Always, 1).await.unwrap();
    store.delete(gone.get(), &WriteCondition::Always, 2).await.unwrap();
    let shard = FencedShard::new(db, &id);
    shard.freeze(MoveSubject::Tenant(&frozen.tenant), "job-1", 1).await.unwrap();
    store.raise_fence(5).await.unwrap();
    let (before, _) = batches(db, BatchKind::Write, 1);

    let answers = in_one_batch(
        db,
        put(db, &Addr::new("acme", "lead"), 1, 9),
        vec![
            put(db, &fresh, 2, 9),
            put(db, &old, 3, 9),
            put(db, &gone, 4, 9),
            put(db, &frozen, 5, 9),
            put(db, &stale, 6, 4),
            put(db, &twice, 7, 9),
            put(db, &twice, 8, 9),
        ],
    )
    .await;
    let (after, big) = batches(db, BatchKind::Write, 5);
    assert_eq!(after - before, 2, "the first write alone, then the seven that waited");
    assert_eq!(big, 1, "the seven left as one batch");

    let ok = |i: usize| answers[i].as_ref().unwrap_or_else(|e| panic!("write {i}: {e}"));
    assert!(ok(0).created);
    assert!(ok(1).created && ok(1).record.version == 1, "a new key: 201, version 1");
    assert!(!ok(2).created && ok(2).record.version == 2, "an existing key: 200, its next version");
    assert!(ok(3).created && ok(3).record.version == 3, "a tombstone revived: 201, past the tombstone's version");
    assert!(
        matches!(answers[4], Err(Error::TenantFenced { .. })),
        "the write of a tenant that is moving meets its fence, alone: {:?}",
        answers[4].as_ref().err()
    );
    assert!(
        matches!(answers[5], Err(Error::StaleMap(_))),
        "a write routed on a map older than the shard's fence is refused: {:?}",
        answers[5].as_ref().err()
    );
    let (a, b) = (ok(6), ok(7));
    let mut versions = [a.record.version, b.record.version];
    versions.sort_unstable();
    assert_eq!(versions, [1, 2], "two writes of one key in one batch: one after the other");
    assert!(a.created != b.created, "exactly one of them created the record");
    let last = if a.record.version == 2 { a } else { b };

    // Every acknowledged write reads back as acknowledged; the refused ones left nothing.
    for (addr, outcome) in [(&fresh, ok(1)), (&old, ok(2)), (&gone, ok(3)), (&twice, last)] {
        match store.read(addr.get()).await.unwrap() {
            RecordRead::Live(record) => {
                assert_eq!(record.version, outcome.record.version);
                assert_eq!(record.value.get(), outcome.record.value.get());
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(store.read(frozen.get()).await.unwrap(), RecordRead::Absent));
    assert!(matches!(store.read(stale.get()).await.unwrap(), RecordRead::Absent));
    test.drop_db().await;
}

/// What a read or conditional put in a batch answered, as the API would tell it.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Live(i64),
    Gone(i64),
    Absent,
    Moved,
    Written(i64),
    Deleted(i64),
    NotFound,
    Fenced,
    PreconditionFailed,
    Other(String),
}

fn read(db: &Database, addr: &Addr) -> futures::future::BoxFuture<'static, Answer> {
    let (db, addr) = (db.clone(), addr.clone());
    Box::pin(async move {
        let id = shard_id();
        match RecordStore::new(&db, &id).read(addr.get()).await {
            Ok(RecordRead::Live(record)) => Answer::Live(record.version),
            Ok(RecordRead::Gone(version)) => Answer::Gone(version),
            Ok(RecordRead::Absent) => Answer::Absent,
            Err(Error::TenantMoved { .. }) => Answer::Moved,
            Err(e) => Answer::Other(e.to_string()),
        }
    })
}

fn put_if(db: &Database, addr: &Addr, condition: WriteCondition) -> futures::future::BoxFuture<'static, Answer> {
    let (db, addr) = (db.clone(), addr.clone());
    Box::pin(async move {
        let id = shard_id();
        match RecordStore::new(&db, &id).put(addr.get(), 3, &value(1), &condition, 10).await {
            Ok(outcome) => Answer::Written(outcome.record.version),
            Err(Error::PreconditionFailed) => Answer::PreconditionFailed,
            Err(e) => Answer::Other(e.to_string()),
        }
    })
}

async fn reads_in_one_batch_keep_their_own_outcomes(test: TestDb) {
    let db = &one_in_flight(&test);
    let id = shard_id();
    let store = RecordStore::new(db, &id);
    let (live, gone, absent, away) = (
        Addr::new("acme", "live"),
        Addr::new("acme", "gone"),
        Addr::new("acme", "absent"),
        Addr::new("gone-away", "k"),
    );
    let (matching, other) = (Addr::new("acme", "matching"), Addr::new("acme", "other"));
    for addr in [&live, &gone, &away, &matching, &other] {
        store.put(addr.get(), 3, &value(0), &WriteCondition::Always, 1).await.unwrap();
    }
    store.delete(gone.get(), &WriteCondition::Always, 2).await.unwrap();
    FencedShard::new(db, &id).mark_moved(MoveSubject::Tenant(&away.tenant), "job-1", 1).await.unwrap();
    let (before, _) = batches(db, BatchKind::Read, 1);

    let answers = in_one_batch(
        db,
        read(db, &live),
        vec![
            read(db, &live),
            read(db, &gone),
            read(db, &absent),
            read(db, &away),
            put_if(db, &matching, WriteCondition::VersionIn(vec![1])),
            put_if(db, &other, WriteCondition::VersionIn(vec![7])),
            put_if(db, &absent, WriteCondition::Exists),
            put_if(db, &gone, WriteCondition::Absent),
        ],
    )
    .await;
    let (after, big) = batches(db, BatchKind::Read, 5);
    assert!(after - before >= 2, "the first read alone, then the ones that waited");
    assert!(big >= 1, "the eight that waited left as one batch");
    assert_eq!(
        answers,
        [
            Answer::Live(1),
            Answer::Live(1),
            Answer::Gone(2),
            Answer::Absent,
            Answer::Moved,
            Answer::Written(2),
            Answer::PreconditionFailed,
            Answer::PreconditionFailed,
            Answer::Written(3),
        ],
        "each read and each precondition decided on its own row"
    );
    test.drop_db().await;
}

fn delete_if(db: &Database, addr: &Addr, condition: WriteCondition) -> futures::future::BoxFuture<'static, Answer> {
    let (db, addr) = (db.clone(), addr.clone());
    Box::pin(async move {
        let id = shard_id();
        match RecordStore::new(&db, &id).delete(addr.get(), &condition, 10).await {
            Ok(version) => Answer::Deleted(version),
            Err(Error::RecordNotFound) => Answer::NotFound,
            Err(Error::PreconditionFailed) => Answer::PreconditionFailed,
            Err(e) => Answer::Other(e.to_string()),
        }
    })
}

async fn conditional_writes_and_deletes_in_one_batch_keep_their_own_outcomes(test: TestDb) {
    let db = &one_in_flight(&test);
    let id = shard_id();
    let store = RecordStore::new(db, &id);
    let [lead, a, b, c, d, fresh, absent] =
        ["lead", "a", "b", "c", "d", "fresh", "absent"].map(|k| Addr::new("acme", k));
    let frozen = Addr::new("moving", "x");
    for addr in [&lead, &a, &b, &c, &d] {
        store.put(addr.get(), 3, &value(0), &WriteCondition::Always, 1).await.unwrap();
    }
    store.delete(d.get(), &WriteCondition::Always, 2).await.unwrap();
    FencedShard::new(db, &id).freeze(MoveSubject::Tenant(&frozen.tenant), "job-1", 1).await.unwrap();
    let (before, _) = batches(db, BatchKind::Conditional, 1);

    let fenced = {
        let (db, frozen) = (db.clone(), frozen.clone());
        Box::pin(async move {
            let id = shard_id();
            match RecordStore::new(&db, &id).put(frozen.get(), 3, &value(1), &WriteCondition::Absent, 10).await {
                Err(Error::TenantFenced { .. }) => Answer::Fenced,
                other => Answer::Other(format!("{:?}", other.map(|o| o.record.version))),
            }
        })
    };
    let answers = in_one_batch(
        db,
        delete_if(db, &lead, WriteCondition::Always),
        vec![
            delete_if(db, &c, WriteCondition::Always),
            delete_if(db, &absent, WriteCondition::Always),
            delete_if(db, &d, WriteCondition::Always),
            put_if(db, &a, WriteCondition::VersionIn(vec![1])),
            put_if(db, &b, WriteCondition::VersionIn(vec![5])),
            put_if(db, &fresh, WriteCondition::Absent),
            delete_if(db, &b, WriteCondition::VersionIn(vec![1])),
            fenced,
        ],
    )
    .await;
    assert_eq!(
        answers,
        [
            Answer::Deleted(2),
            Answer::Deleted(2),
            Answer::NotFound,
            Answer::NotFound,
            Answer::Written(2),
            Answer::PreconditionFailed,
            Answer::Written(1),
            Answer::Deleted(2),
            Answer::Fenced,
        ],
        "each conditional write and delete decided on its own row: 200, 201, 404, 412, its fence"
    );
    let (after, big) = batches(db, BatchKind::Conditional, 2);
    assert!(after - before >= 2 && big >= 1, "the writes that waited met in batches ({big} of {})", after - before);
    for (addr, version) in [(&a, 2), (&fresh, 1)] {
        let read = store.read(addr.get()).await.unwrap();
        assert!(matches!(&read, RecordRead::Live(r) if r.version == version), "{read:?}");
    }
    for addr in [&lead, &b, &c] {
        assert!(matches!(store.read(addr.get()).await.unwrap(), RecordRead::Gone(2)));
    }
    assert!(matches!(store.read(frozen.get()).await.unwrap(), RecordRead::Absent));
    test.drop_db().await;
}

/// Many writers of a few keys through the batchers at once: every acknowledged write has its own
/// version, no version is skipped, and each key ends at its last acknowledged write.
async fn concurrent_writers_lose_nothing_in_batches(test: TestDb) {
    const WRITERS: usize = 16;
    const WRITES: usize = 20;
    let keys: Arc<Vec<Addr>> = Arc::new((0..4).map(|k| Addr::new("acme", &format!("k{k}"))).collect());
    // Counted as requests are, so the load picture's totals show what it counted.
    let meter = Arc::new(LoadMeter::new(MeterConfig { window: Duration::from_secs(10), top_tenants: 10 }));
    let metered = test.db.clone().metered(meter.clone()).working_as(Work::Request);
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (db, keys) = (metered.clone(), keys.clone());
        tasks.push(tokio::spawn(async move {
            let id = shard_id();
            let store = RecordStore::new(&db, &id);
            let mut acknowledged = Vec::new();
            for i in 0..WRITES {
                let k = (w + i) % keys.len();
                let outcome = store.put(keys[k].get(), 3, &value(w * 1000 + i), &WriteCondition::Always, 1).await;
                acknowledged.push((k, outcome.unwrap().record.version, w * 1000 + i));
            }
            acknowledged
        }));
    }
    let mut per_key: Vec<Vec<(i64, usize)>> = vec![Vec::new(); keys.len()];
    for task in tasks {
        for (k, version, n) in task.await.unwrap() {
            per_key[k].push((version, n));
        }
    }
    let id = shard_id();
    let store = RecordStore::new(&test.db, &id);
    for (k, mut writes) in per_key.into_iter().enumerate() {
        writes.sort_unstable();
        let versions: Vec<i64> = writes.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, (1..=writes.len() as i64).collect::<Vec<_>>(), "key {k}: every write its own version");
        let (version, n) = *writes.last().unwrap();
        let RecordRead::Live(record) = store.read(keys[k].get()).await.unwrap() else { panic!("key {k} is gone") };
        assert_eq!((record.version, record.value.get()), (version, value(n).get()));
    }
    let (batches, big) = batches(&test.db, BatchKind::Write, 2);
    assert!(big > 0, "some writes met in batches ({big} of {batches})");
    // The load picture counts each write, not each batch, with its share of the time.
    let counted = meter.requests_on(&id);
    let writes = (WRITERS * WRITES) as u64;
    assert_eq!((counted.writes, counted.rows_written), (writes, writes), "{counted:?}");
    assert!(counted.statement_us > 0 && batches < writes, "{counted:?}, {batches} batches");
    test.drop_db().await;
}

/// Every batch statement of a PostgreSQL shard finds its rows by key, never by a scan of the
/// table: the planner expects a hundred rows of a batch's JSON array, and on a table of some
/// thousands of rows a hash join over a scan of it looked cheaper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batches_look_rows_up_by_key() {
    let test = TestDb::postgres("sg_batch_plans").await;
    for table in ["records", "spread_records"] {
        let fill = format!(
            "INSERT INTO {table} (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
             SELECT 'acme', 'things', 'k' || i, 3, 1, 0, 0, '{{}}', 1 FROM generate_series(1, 20000) AS i"
        );
        sqlx::query(&fill).execute(&test.db.pool).await.unwrap();
    }
    // Every table, the empty fence tables too: what the planner knows of them changes its plans.
    sqlx::query("ANALYZE").execute(&test.db.pool).await.unwrap();
    let batch = serde_json::json!([
        {"t": "acme", "c": "things", "k": "k5", "x": "u", "ver": 1, "val": "{}", "v": 3, "n": 1, "e": 1},
        {"t": "acme", "c": "things", "k": "k7", "x": "a", "v": 3, "n": 1, "e": 1},
    ])
    .to_string();
    for (table, statement) in shardgate_shard_router::records::postgres_batch_sql() {
        // A plan for the values bound, and the generic plan a prepared statement may end up with.
        let mut plans = Vec::new();
        let mut conn = test.db.pool.acquire().await.unwrap();
        for mode in ["auto", "force_generic_plan"] {
            sqlx::query(&format!("SET plan_cache_mode = {mode}")).execute(&mut *conn).await.unwrap();
            let sql = format!("EXPLAIN {statement}");
            let lines: Vec<String> = sqlx::query_scalar(&sql).bind(&batch).fetch_all(&mut *conn).await.unwrap();
            plans.push(lines.join("\n"));
        }
        sqlx::query("RESET plan_cache_mode").execute(&mut *conn).await.unwrap();
        for plan in plans {
            assert!(!plan.contains(&format!("Seq Scan on {table}")), "{statement}\n{plan}");
            assert!(plan.contains("Index"), "{statement}\n{plan}");
        }
    }
    test.drop_db().await;
}

/// A listing of a hash-distributed collection on a PostgreSQL shard reads the key index in key
/// order and stops at its limit, whatever the planner knows of the fence tables. Its fences
/// were once an anti join per row: with the (empty) fence tables analyzed, the planner expected
/// that join to leave one row and sorted every row of the collection after the start key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_listings_read_the_key_index_in_order() {
    let test = TestDb::postgres("sg_list_plans").await;
    let fill = "INSERT INTO spread_records (tenant, collection, key, vshard, version, updated_at, deleted, value, \
                live_since) SELECT 'acme', 'things', 'k' || lpad(i::text, 6, '0'), i % 64, 1, 0, 0, '{}', 1 \
                FROM generate_series(1, 20000) AS i";
    sqlx::query(fill).execute(&test.db.pool).await.unwrap();
    sqlx::query("ANALYZE").execute(&test.db.pool).await.unwrap();
    let pages = [
        shardgate_shard_router::records::ListBounds { start: Some("k000100".into()), ..Default::default() },
        shardgate_shard_router::records::ListBounds { after: Some("k010000".into()), ..Default::default() },
        shardgate_shard_router::records::ListBounds::default(),
    ];
    let mut conn = test.db.pool.acquire().await.unwrap();
    for bounds in pages {
        let (statement, binds) = shardgate_shard_router::records::listing_in_vshards_sql(&[(0, 1023)], &bounds).bounded;
        for mode in ["auto", "force_generic_plan"] {
            sqlx::query(&format!("SET plan_cache_mode = {mode}")).execute(&mut *conn).await.unwrap();
            let sql = format!("EXPLAIN {statement}");
            let mut explain = sqlx::query_scalar::<_, String>(&sql).bind("acme").bind("things");
            for value in &binds {
                explain = explain.bind(value.as_str());
            }
            let lines: Vec<String> = explain.bind(16_i64).fetch_all(&mut *conn).await.unwrap();
            let plan = lines.join("\n");
            assert!(plan.contains("Index Scan using spread_records_pkey"), "{mode}: {statement}\n{plan}");
            assert!(!plan.contains("Sort"), "{mode}: {statement}\n{plan}");
        }
    }
    sqlx::query("RESET plan_cache_mode").execute(&mut *conn).await.unwrap();
    drop(conn);
    test.drop_db().await;
}

shardgate_shard_router::on_both_engines!(
    sqlite: TestDb::sqlite(),
    postgres: TestDb::postgres("sg_batch");
    writes_in_one_batch_keep_their_own_outcomes,
    reads_in_one_batch_keep_their_own_outcomes,
    conditional_writes_and_deletes_in_one_batch_keep_their_own_outcomes,
    concurrent_writers_lose_nothing_in_batches,
);
