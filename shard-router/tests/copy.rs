//! Copying records between shards, on both engines and across them: a copy takes exactly the
//! rows selected, tombstones included, leaves the target's newer versions alone, and copying
//! again takes only what changed. Between two PostgreSQL shards the binary `COPY` and the page
//! method must leave the same rows.

mod common;

use common::TestDb;

use serde_json::value::RawValue;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::copy::{CopyMethod, Selection};
use shardgate_shard_router::records::{RecordAddress, RecordStore, WriteCondition};
use shardgate_shard_router::{CollectionName, Database, FencedShard, RecordKey, ShardId, TenantId};

/// A source and a target shard.
struct Pair {
    source: TestDb,
    target: TestDb,
}

impl Pair {
    async fn sqlite() -> Self {
        Self { source: TestDb::sqlite().await, target: TestDb::sqlite().await }
    }

    async fn postgres() -> Self {
        Self { source: TestDb::postgres("sg_copy_src").await, target: TestDb::postgres("sg_copy_dst").await }
    }

    async fn drop_dbs(self) {
        self.source.drop_db().await;
        self.target.drop_db().await;
    }
}

/// A row of `records`, every column.
type Row = (String, String, String, i64, i64, i64, i64, String, i64);

/// Every row of `records` on `db` that `tenant` owns (all tenants if `None`), in key order.
async fn rows(db: &Database, tenant: Option<&str>) -> Vec<Row> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT tenant, collection, key, vshard, version, updated_at, deleted, value, live_since \
         FROM records ORDER BY tenant, collection, key",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    rows.into_iter().filter(|row| tenant.is_none_or(|t| row.0 == t)).collect()
}

fn shard(name: &str) -> ShardId {
    ShardId::parse(name).unwrap()
}

fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).unwrap()
}

/// A transaction on `db` that has run `sql` and stays open until the caller ends it.
async fn open_transaction(db: &Database, sql: &str) -> sqlx::Transaction<'static, sqlx::Any> {
    let mut transaction = db.pool.begin().await.unwrap();
    sqlx::query(sql).execute(&mut *transaction).await.unwrap();
    transaction
}

/// Writes `value` at `collection/key` of `tenant` on vshard `vshard`.
async fn put(db: &Database, tenant: &str, collection: &str, key: &str, vshard: u32, value: &str) {
    put_at(db, (tenant, collection, key), vshard, value, 1_700_000_000_000).await;
}

/// [`put`] at time `now_ms`.
async fn put_at(db: &Database, (tenant, collection, key): (&str, &str, &str), vshard: u32, value: &str, now_ms: i64) {
    let (t, c, k) = (self::tenant(tenant), CollectionName::parse(collection).unwrap(), RecordKey::parse(key).unwrap());
    let addr = RecordAddress { tenant: &t, collection: &c, key: &k };
    let value = RawValue::from_string(value.to_owned()).unwrap();
    RecordStore::new(db, &shard("any")).put(addr, vshard, &value, &WriteCondition::Always, now_ms).await.unwrap();
}

async fn delete(db: &Database, tenant: &str, collection: &str, key: &str) {
    let (t, c, k) = (self::tenant(tenant), CollectionName::parse(collection).unwrap(), RecordKey::parse(key).unwrap());
    let addr = RecordAddress { tenant: &t, collection: &c, key: &k };
    RecordStore::new(db, &shard("any")).delete(addr, &WriteCondition::Always, 1_700_000_000_001).await.unwrap();
}

/// More than two pages of `acme` records whose keys sort differently by bytes and by letters
/// (upper case, accents, emoji, slashes), some written twice and some deleted; and a few
/// records of `other`.
async fn seed(db: &Database) -> usize {
    let spellings = ["a", "B", "é", "z/y", "Zürich", "🦀", "a b", "A-"];
    let mut written = 0;
    for i in 0..1_100 {
        let collection = if i % 3 == 0 { "orders" } else { "Users" };
        let key = format!("{}{i}", spellings[i % spellings.len()]);
        put(db, "acme", collection, &key, (i % 4) as u32, &format!("{{\"n\":{i}}}")).await;
        if i % 10 == 0 {
            put(db, "acme", collection, &key, (i % 4) as u32, &format!("{{\"n\":{i},\"again\":true}}")).await;
        }
        if i % 17 == 0 {
            delete(db, "acme", collection, &key).await;
        }
        written += 1;
    }
    for i in 0..10 {
        put(db, "other", "orders", &format!("o{i}"), 1, "{\"other\":true}").await;
    }
    written
}

async fn a_tenant_is_copied_whole_and_alone(pair: Pair) {
    let (source, target) = (&pair.source.db, &pair.target.db);
    let written = seed(source).await;
    let expected = rows(source, Some("acme")).await;
    assert_eq!(expected.len(), written);
    assert!(expected.iter().any(|row| row.6 == 1), "the seed has tombstones");
    let acme = tenant("acme");
    let (from, to) = (shard("s-src"), shard("s-dst"));
    for method in [CopyMethod::Binary, CopyMethod::Pages] {
        let copied = RecordStore::new(source, &from)
            .copy_to(&RecordStore::new(target, &to), Selection::Tenant(&acme), method)
            .await
            .unwrap();
        let ran = if method == CopyMethod::Binary { CopyMethod::best(source, target) } else { CopyMethod::Pages };
        assert_eq!(copied.method, ran, "asked for {method:?}");
        assert_eq!((copied.read, copied.written), (written as u64, written as u64), "{method:?}");
        assert_eq!(rows(target, None).await, expected, "{method:?}: the target holds acme's rows and nothing else");
        RecordStore::new(target, &to).purge_tenant(&acme).await.unwrap();
    }
    pair.drop_dbs().await;
}

async fn copying_again_takes_only_what_changed(pair: Pair) {
    let (source, target) = (&pair.source.db, &pair.target.db);
    for i in 0..20 {
        put(source, "acme", "orders", &format!("k{i:02}"), 3, "{\"v\":1}").await;
    }
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let (acme, from, to) = (&acme, &from, &to);
    let copy = |method| async move {
        RecordStore::new(source, from)
            .copy_to(&RecordStore::new(target, to), Selection::Tenant(acme), method)
            .await
            .unwrap()
    };
    assert_eq!(copy(CopyMethod::Binary).await.written, 20);
    for method in [CopyMethod::Binary, CopyMethod::Pages] {
        assert_eq!(copy(method).await.written, 0, "{method:?}: nothing changed, nothing written");
    }
    // Two updates and a delete on the source; on the target, a key moves ahead of the source.
    put(source, "acme", "orders", "k01", 3, "{\"v\":2}").await;
    put(source, "acme", "orders", "k02", 3, "{\"v\":2}").await;
    delete(source, "acme", "orders", "k03").await;
    for _ in 0..3 {
        put(target, "acme", "orders", "k04", 3, "{\"target\":\"ahead\"}").await;
    }
    put(source, "acme", "orders", "k04", 3, "{\"source\":\"behind\"}").await;
    let catch_up = copy(CopyMethod::best(source, target)).await;
    assert_eq!((catch_up.read, catch_up.written), (20, 3), "the three changed keys, not the key the target has ahead");
    let on_target = rows(target, None).await;
    let by_key = |key: &str| on_target.iter().find(|row| row.2 == key).unwrap().clone();
    assert_eq!((by_key("k01").4, by_key("k01").7.as_str()), (2, "{\"v\":2}"));
    assert_eq!((by_key("k03").4, by_key("k03").6), (2, 1), "the delete is copied as a tombstone");
    assert_eq!((by_key("k04").4, by_key("k04").7.as_str()), (4, "{\"target\":\"ahead\"}"), "a newer version is kept");
    let source_rows = rows(source, None).await;
    let unchanged = |rows: &[Row]| rows.iter().filter(|row| row.2 != "k04").cloned().collect::<Vec<_>>();
    assert_eq!(unchanged(&on_target), unchanged(&source_rows));
    pair.drop_dbs().await;
}

async fn a_vshard_is_copied_alone(pair: Pair) {
    let (source, target) = (&pair.source.db, &pair.target.db);
    for i in 0..30 {
        put(source, if i % 2 == 0 { "acme" } else { "other" }, "orders", &format!("k{i}"), i % 3, "{}").await;
    }
    let copied = RecordStore::new(source, &shard("s-src"))
        .copy_to(&RecordStore::new(target, &shard("s-dst")), Selection::Vshards(&[1]), CopyMethod::best(source, target))
        .await
        .unwrap();
    assert_eq!(copied.written, 10);
    let expected: Vec<Row> = rows(source, None).await.into_iter().filter(|row| row.3 == 1).collect();
    assert_eq!(rows(target, None).await, expected);
    pair.drop_dbs().await;
}

/// Writes `n` records `k00`… of `acme` on the source, copies them to the target, and takes a
/// moment on the source. Gives it, and the change time later writes carry: after the moment on
/// SQLite, which compares change times, and before it on PostgreSQL, which ignores them.
async fn copy_then_take_a_moment(pair: &Pair, n: usize) -> (shardgate_shard_router::copy::Since, i64) {
    use shardgate_shard_router::copy::Since;
    let (source, target) = (&pair.source.db, &pair.target.db);
    let t0 = 1_700_000_000_000;
    for i in 0..n {
        put_at(source, ("acme", "orders", &format!("k{i:02}")), 3, &format!("{{\"v\":{i}}}"), t0).await;
    }
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let method = CopyMethod::best(source, target);
    RecordStore::new(source, &from)
        .copy_to(&RecordStore::new(target, &to), Selection::Tenant(&acme), method)
        .await
        .unwrap();
    let since = Since::now(FencedShard::new(source, &from), std::time::Duration::ZERO).await.unwrap();
    let later = match since {
        Since::Transactions { .. } => t0 - 1,
        Since::Time(ms) => ms + 10,
    };
    (since, later)
}

/// Split at a moment taken after a copy, on a source that keeps changing: the settled rows
/// (not changed since) compare equal while the target lags, the changed rows compare equal once
/// the delta since the moment is copied, and a row that differs in either part is found. On
/// PostgreSQL the moment is a transaction, so the rows' change times play no part: the later
/// writes here carry a time from before the moment.
async fn a_split_at_a_moment_compares_settled_and_changed_rows(pair: Pair) {
    use shardgate_shard_router::copy::{Part, Pass, RECORDS, Window, checksums, copy_rows, split_checksums};
    let (source, target) = (&pair.source.db, &pair.target.db);
    let (since, later) = copy_then_take_a_moment(&pair, 30).await;
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let selection = Selection::Tenant(&acme);
    let method = CopyMethod::best(source, target);
    let (src, dst) = (FencedShard::new(source, &from), FencedShard::new(target, &to));
    // After the moment, the source goes on changing: two updates and a new key.
    for key in ["k01", "k02", "k30"] {
        put_at(source, ("acme", "orders", key), 3, "{\"later\":true}", later).await;
    }
    let all = Pass { selection, window: Window::All, pace: None };
    let (a, b) = checksums(&RECORDS, src, dst, &all).await.unwrap();
    assert_ne!(a, b, "the target lags");
    let split = |part| split_checksums(&RECORDS, (src, dst), selection, &since, part);
    let (a, b) = split(Part::Settled).await.unwrap().unwrap();
    assert_eq!(a, b, "the keys changed since are left out on both sides");
    assert_eq!(a.rows, 28);
    let (a, b) = split(Part::Changed).await.unwrap().unwrap();
    assert_ne!(a, b, "the target holds old versions of the changed keys");
    assert_eq!((a.rows, b.rows), (3, 2), "k30 is not on the target yet");
    // The delta since the moment brings the target up to date.
    let delta = Pass { selection, window: Window::ChangedSince(&since), pace: None };
    let copied = copy_rows(&RECORDS, src, dst, &delta, method).await.unwrap();
    assert_eq!(copied.read, 3, "the pass takes the rows changed since the moment, and only those");
    let (a, b) = split(Part::Changed).await.unwrap().unwrap();
    assert_eq!(a, b);
    assert_eq!(a.rows, 3);
    assert_eq!(rows(source, None).await, rows(target, None).await);
    // A row that differs on the target is found, in the part it belongs to.
    let tamper = |key: &'static str| async move {
        sqlx::query(&format!("UPDATE records SET value = '{{\"tampered\":true}}' WHERE key = '{key}'"))
            .execute(&target.pool)
            .await
            .unwrap();
    };
    tamper("k05").await;
    let (a, b) = split(Part::Settled).await.unwrap().unwrap();
    assert_ne!(a, b, "a settled row that differs");
    let (a, b) = split(Part::Changed).await.unwrap().unwrap();
    assert_eq!(a, b, "k05 is not in the changed part");
    tamper("k30").await;
    let (a, b) = split(Part::Changed).await.unwrap().unwrap();
    assert_ne!(a, b, "a changed row that differs");
    pair.drop_dbs().await;
}

/// Under a fence, the rows changed since a moment are copied and compared in one read: the
/// target ends equal to the source, and a target row the merge would not replace (a newer
/// version there) makes the comparison differ.
async fn the_last_delta_is_copied_and_compared_at_once(pair: Pair) {
    use shardgate_shard_router::copy::{RECORDS, copy_and_compare};
    let (source, target) = (&pair.source.db, &pair.target.db);
    let (since, later) = copy_then_take_a_moment(&pair, 10).await;
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let selection = Selection::Tenant(&acme);
    let (src, dst) = (FencedShard::new(source, &from), FencedShard::new(target, &to));
    for key in ["k01", "k02", "new"] {
        put_at(source, ("acme", "orders", key), 3, "{\"v\":2}", later).await;
    }
    let (copied, ours, theirs) = copy_and_compare(&RECORDS, (src, dst), selection, &since).await.unwrap().unwrap();
    assert_eq!((copied.read, copied.written), (3, 3));
    assert_eq!(ours, theirs);
    assert_eq!(ours.rows, 3);
    assert_eq!(rows(source, None).await, rows(target, None).await);
    // A newer version on the target is left alone by the merge, and found.
    sqlx::query("UPDATE records SET version = 99 WHERE key = 'k01'").execute(&target.pool).await.unwrap();
    put_at(source, ("acme", "orders", "k01"), 3, "{\"v\":3}", later + 1).await;
    let (_, ours, theirs) = copy_and_compare(&RECORDS, (src, dst), selection, &since).await.unwrap().unwrap();
    assert_ne!(ours, theirs);
    pair.drop_dbs().await;
}

/// The comparison of a move's settled rows scans in pages of the key ([`KeyPages`]) so that the
/// pace can rest between them: the pages together count every row once, rows written after
/// the bounds were read too (at either end of the key space, and between two bounds), and the
/// paged comparison says what the one-statement comparison says (on SQLite it is that one).
async fn a_comparison_in_pages_counts_every_row_once(pair: Pair) {
    use shardgate_shard_router::copy::{
        KeyPages, Part, Pass, RECORDS, Since, Window, copy_rows, split_checksums, split_checksums_in_pages,
    };
    let (source, target) = (&pair.source.db, &pair.target.db);
    let written = seed(source).await;
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let selection = Selection::Tenant(&acme);
    let method = CopyMethod::best(source, target);
    let (src, dst) = (FencedShard::new(source, &from), FencedShard::new(target, &to));
    let pages = KeyPages::of(&RECORDS, src, selection, 97).await.unwrap();
    let conditions = pages.conditions(&RECORDS).unwrap();
    assert_eq!(conditions.len(), written / 97 + 1, "{conditions:?}");
    // Written after the bounds were read: before the first, after the last, between two.
    for key in ["!first", "~last", "a5x"] {
        put(source, "acme", "Users", key, 1, "{\"late\":true}").await;
    }
    let all = Pass { selection, window: Window::All, pace: None };
    let copied = copy_rows(&RECORDS, src, dst, &all, method).await.unwrap();
    assert_eq!(copied.read as usize, written + 3);
    assert_eq!(rows(target, None).await, rows(source, Some("acme")).await);
    // A moment, then changes: the settled part leaves them out.
    let since = Since::now(src, std::time::Duration::ZERO).await.unwrap();
    if matches!(since, Since::Time(_)) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let now = shardgate_shard_router::now_ms();
    for key in ["!first", "B1", "🦀5"] {
        put_at(source, ("acme", "Users", key), 1, "{\"again\":true}", now).await;
    }
    let since = &since;
    let settled = |pages: &KeyPages| {
        let pages = pages.clone();
        async move {
            split_checksums_in_pages(&RECORDS, (src, dst), selection, (since, Part::Settled), (&pages, None)).await
        }
    };
    let (a, b) = settled(&pages).await.unwrap().unwrap();
    assert_eq!(
        (a.clone(), b.clone()),
        split_checksums(&RECORDS, (src, dst), selection, since, Part::Settled).await.unwrap().unwrap()
    );
    assert_eq!(a, b, "the settled rows are on the target");
    assert_eq!(a.rows as usize, written, "all but the three changed since");
    let delta = Pass { selection, window: Window::ChangedSince(since), pace: None };
    let copied = copy_rows(&RECORDS, src, dst, &delta, method).await.unwrap();
    assert_eq!((copied.read, copied.written), (3, 3));
    assert_eq!(rows(target, None).await, rows(source, Some("acme")).await);
    // A settled row that differs is found by the paged comparison too.
    sqlx::query("UPDATE records SET value = '{\"tampered\":true}' WHERE key = 'a5x'")
        .execute(&target.pool)
        .await
        .unwrap();
    let (a, b) = settled(&pages).await.unwrap().unwrap();
    assert_ne!(a, b);
    pair.drop_dbs().await;
}

shardgate_shard_router::on_both_engines!(
    sqlite: Pair::sqlite(),
    postgres: Pair::postgres();
    a_comparison_in_pages_counts_every_row_once,
    a_split_at_a_moment_compares_settled_and_changed_rows,
    the_last_delta_is_copied_and_compared_at_once,
    a_tenant_is_copied_whole_and_alone,
    copying_again_takes_only_what_changed,
    a_vshard_is_copied_alone,
);

/// From PostgreSQL to SQLite and back: the page method carries every value unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_cross_engines_unchanged() {
    let (postgres, sqlite, back) =
        (TestDb::postgres("sg_copy_x").await, TestDb::sqlite().await, TestDb::sqlite().await);
    let written = seed(&postgres.db).await;
    let (acme, s) = (tenant("acme"), shard("s"));
    let stores = |db| RecordStore::new(db, &s);
    let there = stores(&postgres.db).copy_to(&stores(&sqlite.db), Selection::Tenant(&acme), CopyMethod::Binary).await;
    assert_eq!(there.unwrap().method, CopyMethod::Pages, "no binary copy into SQLite");
    let back_again = stores(&sqlite.db).copy_to(&stores(&back.db), Selection::Tenant(&acme), CopyMethod::Pages).await;
    assert_eq!(back_again.unwrap().written, written as u64);
    let expected = rows(&postgres.db, Some("acme")).await;
    assert_eq!(rows(&sqlite.db, None).await, expected);
    assert_eq!(rows(&back.db, None).await, expected);
    postgres.drop_db().await;
}

/// A binary copy whose source fails ends the target's `COPY` and rolls back: the target is
/// unchanged and its connection serves the next copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_binary_copy_leaves_the_target_unchanged() {
    let pair = Pair::postgres().await;
    let (source, target) = (&pair.source.db, &pair.target.db);
    put(target, "acme", "orders", "kept", 1, "{\"kept\":true}").await;
    let before = rows(target, None).await;
    sqlx::query("ALTER TABLE records RENAME TO records_elsewhere").execute(&source.pool).await.unwrap();
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let (from, to) = (RecordStore::new(source, &from), RecordStore::new(target, &to));
    let copy = || from.copy_to(&to, Selection::Tenant(&acme), CopyMethod::Binary);
    let failed = copy().await.unwrap_err();
    assert!(failed.to_string().contains("shard s-src"), "the error names the source: {failed}");
    assert_eq!(rows(target, None).await, before);
    sqlx::query("ALTER TABLE records_elsewhere RENAME TO records").execute(&source.pool).await.unwrap();
    put(source, "acme", "orders", "new", 1, "{}").await;
    for _ in 0..3 {
        // More copies than the native pool has connections: none was left mid-COPY.
        assert_eq!(copy().await.unwrap().method, CopyMethod::Binary);
    }
    assert_eq!(rows(target, None).await.len(), 2);
    pair.drop_dbs().await;
}

/// On PostgreSQL a moment is the transactions not yet committed: a write that was running when
/// the moment was taken and commits after it is in the next pass, and a transaction that was
/// running elsewhere in the cluster all along (here, a write in the target's database begun
/// before the source's rows were written) does not make the pass take older rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_moment_takes_what_was_running_and_nothing_older() {
    use shardgate_shard_router::copy::{Pass, RECORDS, Since, Window, copy_rows};
    let pair = Pair::postgres().await;
    let (source, target) = (&pair.source.db, &pair.target.db);
    // A write elsewhere in the cluster, open throughout.
    let elsewhere = open_transaction(
        target,
        "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, value) VALUES ('zed', 'c', 'k', 0, 1, 0, '1')",
    )
    .await;
    for i in 0..30 {
        put(source, "acme", "orders", &format!("k{i:02}"), 3, "{\"v\":1}").await;
    }
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let selection = Selection::Tenant(&acme);
    RecordStore::new(source, &from)
        .copy_to(&RecordStore::new(target, &to), selection, CopyMethod::Binary)
        .await
        .unwrap();
    // A write of the source running across the moment.
    let running =
        open_transaction(source, "UPDATE records SET value = '{\"v\":2}', version = version + 1 WHERE key = 'k03'")
            .await;
    // A later write that commits before the moment: the running one is then older than the
    // first id not yet assigned, and is found among the running.
    put(source, "other", "orders", "k", 3, "{}").await;
    let (src, dst) = (FencedShard::new(source, &from), FencedShard::new(target, &to));
    let since = Since::now(src, std::time::Duration::ZERO).await.unwrap();
    running.commit().await.unwrap();
    let delta = Pass { selection, window: Window::ChangedSince(&since), pace: None };
    let copied = copy_rows(&RECORDS, src, dst, &delta, CopyMethod::Binary).await.unwrap();
    assert_eq!((copied.read, copied.written), (1, 1), "k03 alone changed since the moment");
    elsewhere.rollback().await.unwrap();
    assert_eq!(rows(source, Some("acme")).await, rows(target, Some("acme")).await);
    pair.drop_dbs().await;
}

/// Into a target that holds none of the rows, a binary copy writes them straight into the table
/// (no staging, no merge); if one is there after all, that copy is undone and the rows are
/// merged the usual way: the target's newer version stays, and nothing is written twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_copy_into_an_empty_target_falls_back_to_the_merge_on_a_conflict() {
    use shardgate_shard_router::copy::{Pass, RECORDS, Window, copy_batch};
    // One batch that takes every row.
    let everything = u64::MAX;
    let pair = Pair::postgres().await;
    let (source, target) = (&pair.source.db, &pair.target.db);
    let written = seed(source).await;
    let (acme, from, to) = (tenant("acme"), shard("s-src"), shard("s-dst"));
    let (src, dst) = (FencedShard::new(source, &from), FencedShard::new(target, &to));
    let all = Pass { selection: Selection::Tenant(&acme), window: Window::All, pace: None };
    let copied = copy_batch(&RECORDS, (src, dst), &all, None, everything, CopyMethod::Binary).await.unwrap().copied;
    assert_eq!((copied.read, copied.written), (written as u64, written as u64));
    assert_eq!(rows(target, None).await, rows(source, Some("acme")).await);

    // Again, into a target that now holds every key, one of them at a newer version.
    sqlx::query("UPDATE records SET version = 99, value = '\"newer\"' WHERE key = (SELECT MIN(key) FROM records)")
        .execute(&target.pool)
        .await
        .unwrap();
    let before = rows(target, None).await;
    let copied = copy_batch(&RECORDS, (src, dst), &all, None, everything, CopyMethod::Binary).await.unwrap().copied;
    assert_eq!((copied.read, copied.written), (written as u64, 0), "merged: nothing older replaced");
    assert_eq!(rows(target, None).await, before);
    pair.drop_dbs().await;
}
