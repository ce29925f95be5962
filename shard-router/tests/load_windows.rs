//! The load picture's storage, on both engines: windows stored in one statement (a window stored
//! twice adds up), rolled up into wider windows and pruned; and the bound on tenants: 10,000
//! tenants making one request each leave at most `top_tenants` tenant rows per window, with the
//! heaviest tenant first.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use shardgate_shard_router::balance::{LoadFlusher, Span, picture};
use shardgate_shard_router::catalog::{Catalog, LoadRow, LoadScope};
use shardgate_shard_router::db::{Database, PoolConfig, Schema};
use shardgate_shard_router::records::{RecordAddress, RecordStore};
use shardgate_shard_router::router::{ShardRouter, StorageConfig};
use shardgate_shard_router::storage::meter::{Charge, LoadMeter, MeterConfig, Sample, Work};
use shardgate_shard_router::{CollectionName, LoadConfig, RecordKey, ShardId, ShardStore, TenantId};
use sqlx::Connection;

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A migrated catalog database of `engine`, and what drops it.
async fn catalog(engine: &str) -> (Catalog, Option<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (url, pg) = match engine {
        "sqlite" => (format!("sqlite://{}", dir.path().join("catalog.db").display()), None),
        _ => {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
            let name = format!("sglw_{:x}_{}", nanos % 0xffff_ffff, std::process::id());
            let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432");
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.unwrap();
            (format!("postgres://postgres@127.0.0.1:5432/{name}"), Some(name))
        }
    };
    let db = Database::open(&SecretString::from(url), &PoolConfig::default()).unwrap();
    db.migrate(Schema::Catalog).await.unwrap();
    (Catalog::new(db), pg, dir)
}

async fn drop_pg(catalog: Catalog, name: Option<String>) {
    catalog.database().close().await;
    if let Some(name) = name {
        let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
    }
}

fn shard(id: &str) -> ShardId {
    ShardId::parse(id).unwrap()
}

fn request(tenant: &str, vshard: i32) -> Charge {
    Charge { work: Work::Request, vshard, tenant: Some(TenantId::parse(tenant).unwrap()) }
}

async fn stores_rolls_up_and_prunes(engine: &str) {
    let (catalog, pg, _dir) = catalog(engine).await;
    let meter = LoadMeter::new(MeterConfig { window: Duration::from_secs(10), top_tenants: 10 });
    let read = Sample::statement(false, Duration::from_micros(100), false);
    let write = Sample::statement(true, Duration::from_micros(300), false);
    // Twelve 10 s windows (two minutes from t = 600 s): each with 2 reads and 1 write of tenant
    // `a` on vshard 5 of `s0`, and one move write on `s1`.
    let t0 = 600_000;
    for w in 0..12 {
        let at = t0 + w * 10_000;
        meter.record_at(at, &shard("s0"), &request("a", 5), read);
        meter.record_at(at + 1, &shard("s0"), &request("a", 5), read);
        meter.record_at(at + 2, &shard("s0"), &request("a", 5), write);
        meter.record_at(at + 3, &shard("s1"), &Charge { work: Work::Move, ..Charge::default() }, write);
    }
    let windows = meter.take_closed(t0 + 12 * 10_000);
    assert_eq!(windows.len(), 12);
    let rows: Vec<LoadRow> = windows.iter().flat_map(|w| LoadRow::of_window("i1", w)).collect();
    catalog.store_windows(&rows).await.unwrap();
    // The first window again, from the same instance: it adds up.
    catalog.store_windows(&LoadRow::of_window("i1", &windows[0])).await.unwrap();

    let stored = catalog.load_rows(LoadScope::Vshard, 0, i64::MAX).await.unwrap();
    assert_eq!(stored.len(), 24, "one vshard row per shard and work per window");
    let first = stored.iter().find(|r| r.start_ms == t0 && r.shard == "s0").unwrap();
    assert_eq!((first.counters.reads, first.counters.writes, first.counters.statement_us), (4, 2, 1000));
    assert_eq!((first.width_ms, first.subject.as_str(), first.work.as_str()), (10_000, "5", "request"));
    let tenants = catalog.load_rows(LoadScope::Tenant, 0, i64::MAX).await.unwrap();
    assert_eq!(tenants.len(), 12);
    assert_eq!(tenants[1].subject, "a");

    // Roll up everything that ended by t0 + 60 s into minutes: the first six windows.
    let rolled = catalog.roll_up_windows::<LoadRow>(10_000, 60_000, t0 + 60_000).await.unwrap();
    assert_eq!(rolled, 6 * 2 + 6, "six windows' vshard and tenant rows");
    let again = catalog.roll_up_windows::<LoadRow>(10_000, 60_000, t0 + 60_000).await.unwrap();
    assert_eq!(again, 0, "a second roll-up finds nothing left");
    let stored = catalog.load_rows(LoadScope::Vshard, 0, i64::MAX).await.unwrap();
    let minute = stored.iter().find(|r| r.width_ms == 60_000 && r.shard == "s0").unwrap();
    assert_eq!(minute.start_ms, t0);
    assert_eq!((minute.counters.reads, minute.counters.writes), (2 * 6 + 2, 6 + 1), "summed, the double store too");
    assert_eq!(stored.iter().filter(|r| r.width_ms == 10_000).count(), 12, "the second minute stays as it was");
    let total_reads: u64 = stored.iter().map(|r| r.counters.reads).sum();
    assert_eq!(total_reads, 12 * 2 + 2, "a roll-up loses and adds nothing");
    let tenants = catalog.load_rows(LoadScope::Tenant, 0, i64::MAX).await.unwrap();
    assert_eq!(tenants.iter().filter(|r| r.width_ms == 60_000).count(), 1);

    // A span reads only the windows wholly inside it.
    let overlapping = catalog.load_rows(LoadScope::Vshard, t0 + 60_000, t0 + 70_000).await.unwrap();
    assert!(overlapping.iter().all(|r| r.start_ms == t0 + 60_000 && r.width_ms == 10_000));

    // Pruning: the minute rows that ended by t0 + 60 s go; the 10 s rows stay.
    assert_eq!(catalog.prune_windows::<LoadRow>(60_000, t0 + 60_000).await.unwrap(), 3);
    assert_eq!(catalog.prune_windows::<LoadRow>(10_000, t0 + 90_000).await.unwrap(), 3 * 3);
    let left = catalog.load_rows(LoadScope::Vshard, 0, i64::MAX).await.unwrap();
    assert_eq!(left.len(), 6);
    assert!(left.iter().all(|r| r.start_ms >= t0 + 90_000));
    drop_pg(catalog, pg).await;
}

#[tokio::test]
async fn load_windows_are_stored_rolled_up_and_pruned_on_sqlite() {
    stores_rolls_up_and_prunes("sqlite").await;
}

#[tokio::test]
async fn load_windows_are_stored_rolled_up_and_pruned_on_postgres() {
    stores_rolls_up_and_prunes("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tenants_leave_at_most_k_rows_per_window_and_the_heaviest_first() {
    let dir = tempfile::tempdir().unwrap();
    let hour = Duration::from_secs(3600);
    let load =
        LoadConfig { window: hour, rollup: hour, full_resolution: hour, top_tenants: 100, ..LoadConfig::default() };
    let config = StorageConfig { load, ..StorageConfig::default() };
    let router = Arc::new(ShardRouter::open(&config, dir.path()).await.unwrap());
    let id = shard("shard-0");
    let collection = CollectionName::parse("c").unwrap();
    let key = RecordKey::parse("k").unwrap();
    // One request (a record read, run on the shard) per tenant, and one of every four by the
    // heavy tenant: it leads by statement time too, whatever single statement of another
    // tenant stalls (a checkpoint) meanwhile.
    let read = async |tenant: &str| {
        let db = router.shard_db(&id).unwrap().charged(request(tenant, 3));
        let tenant = TenantId::parse(tenant).unwrap();
        let addr = RecordAddress { tenant: &tenant, collection: &collection, key: &key };
        RecordStore::new(&db, &id).get(addr).await.unwrap();
    };
    for i in 0..10_000 {
        read(&format!("t{i}")).await;
        if i % 4 == 0 {
            read("heavy").await;
        }
    }
    let flusher = LoadFlusher::new(&router, config.load.clone()).expect("the load picture is on");
    assert!(flusher.flush_all().await >= 1);

    let rows = router.catalog().load_rows(LoadScope::Tenant, 0, i64::MAX).await.unwrap();
    let mut per_window = std::collections::BTreeMap::<i64, usize>::new();
    for row in &rows {
        *per_window.entry(row.start_ms).or_default() += 1;
    }
    assert!(per_window.values().all(|n| *n <= 100), "at most K tenant rows per window: {per_window:?}");
    assert_eq!(per_window.values().max(), Some(&100), "a window of 10,000 tenants keeps K");
    let span = Span { since_ms: 0, until_ms: i64::MAX / 2, step_ms: None };
    let load = picture(&router, span, 10).await.unwrap();
    assert_eq!(load.tenants[0].tenant, "heavy", "{:?}", load.tenants.iter().map(|t| &t.tenant).collect::<Vec<_>>());
    // Every read of an absent record runs the same statements (the look-up, then the checks
    // that tell "absent" from "moved away").
    let statements: u64 = load.shards.iter().map(|s| s.load.request.reads).sum();
    assert_eq!(statements % 12_500, 0, "the shards count every statement: {statements}");
    let per_read = statements / 12_500;
    assert!(per_read >= 1);
    assert_eq!(load.tenants[0].load.reads, 2_500 * per_read, "the heavy tenant's statements, all of them");
    assert_eq!(load.tenants[0].overcount_us, 0, "the heavy tenant never had to displace another");
}
