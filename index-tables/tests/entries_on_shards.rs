//! Index entries placed by `entry_vshard` on several real shards, on both engines: values
//! written in random order come back in value order (the encoding's order survives SQL on
//! SQLite and PostgreSQL), range look-ups fan out and merge into pages that a cursor walks
//! without gaps or repeats, an equality look-up runs one statement on one shard, and a unique
//! index's write flow (claim, commit, live, move, remove) driven by the definition.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_index_tables::{
    EntryCursor, FieldPath, IndexDef, IndexName, Layout, RecordVersion, ValueKey, entry_vshard, merge_pages,
};
use shardgate_shard_router::db::{Database, PoolConfig, Schema};
use shardgate_shard_router::index_entries::{Claim, EntryState, IndexEntryStore, IndexScope, StoredEntry};
use shardgate_shard_router::map::spread_vshards;
use shardgate_shard_router::{CollectionName, RecordKey, ShardId, TenantId};
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

/// A small deterministic generator (xorshift64*).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Scalars with many ties and every ordering hazard: signs, decimals, huge magnitudes,
    /// strings with separators and escape characters, prefixes of each other, non-ASCII.
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
    let mut g = Gen(seed);
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
            let record = RecordVersion { tenant: &tenant, collection: &collection, key, vshard: 0, version: 1, value };
            let Some(entry) = index.entry_for(&record, VSHARDS, 1_000).unwrap() else { continue };
            assert!(shards.store(shards.shard_of(entry.vshard)).put_live(&entry).await.unwrap());
        }
    }
    Fixture { tenant, collection, records }
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
            expected(&fixture, &["/score"], |v| ValueKey::encode(&[&v[0]]).unwrap() == Some(value.clone()))
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
    let v1 = json!({"email": "a@x"});
    let change = index.change(None, Some(&v1)).unwrap();
    let key = change.write.unwrap();
    let entry = index.entry(&version(&ann, 1, &v1), &key, VSHARDS, 1_000);
    let store = shards.store(shards.shard_of(entry.vshard));
    assert_eq!(store.claim_unique(&entry).await.unwrap(), Claim::Won);
    assert!(store.mark_live(entry.key(), 1, entry.copy.as_deref()).await.unwrap());

    // Bob wants a@x too: held by Ann, whose record holds it, so the caller answers 409.
    let bob_value = json!({"email": "a@x"});
    let bob_entry = index.entry(&version(&bob, 1, &bob_value), &key, VSHARDS, 2_000);
    let Claim::Held(holder) = store.claim_unique(&bob_entry).await.unwrap() else { panic!("a@x is Ann's") };
    assert_eq!((holder.record_key.as_str(), holder.state, holder.record_vshard), ("ann", EntryState::Live, 9));

    // Ann moves to b@x: the new value is claimed first, the old one released after the commit.
    let v2 = json!({"email": "b@x"});
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

macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Shards::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Shards::postgres().await).await;
                }
            )*
        }
    };
}

on_both_engines!(
    values_come_back_in_value_order,
    ranges_fan_out_and_merge,
    an_equality_look_up_touches_one_shard,
    a_unique_index_write_flow,
);
