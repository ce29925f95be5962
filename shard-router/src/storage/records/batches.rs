//! How point operations reach the database: alone (one statement per read or write) or in a
//! batch ([`crate::storage::batch`]), one statement per round of distinct keys.

use sqlx::Row;

use super::sql::Statements;
use crate::storage::batch::{BatchOutcome, RowKey, RowRead, RowSwap, RowWrite, Swap, Written};
use crate::storage::db::{Database, Engine};
use crate::storage::sql_comment::traced;

/// The row a point read returned, its columns from `first` on: key, version, updated_at, value,
/// deleted.
fn row_read(row: &sqlx::any::AnyRow, first: usize) -> Result<RowRead, sqlx::Error> {
    let deleted: i64 = row.try_get(first + 4)?;
    Ok(RowRead {
        key: row.try_get(first)?,
        version: row.try_get(first + 1)?,
        updated_at: row.try_get(first + 2)?,
        value: row.try_get(first + 3)?,
        deleted: deleted != 0,
    })
}

/// `sql`'s statement for `db`'s engine (SQLite's first).
fn for_engine<'a>(db: &Database, sql: &'a [String; 2]) -> &'a str {
    match db.engine {
        Engine::Sqlite => &sql[0],
        Engine::Postgres => &sql[1],
    }
}

/// The lone point read of the record at `[tenant, collection, key]`.
pub(super) async fn lone_read(
    db: &Database,
    sql: &'static Statements,
    [tenant, collection, key]: [&str; 3],
) -> Result<Option<RowRead>, sqlx::Error> {
    let statement = traced(&sql.read);
    let row = statement.query().bind(tenant).bind(collection).bind(key).fetch_optional(&db.pool).await?;
    row.as_ref().map(|row| row_read(row, 0)).transpose()
}

/// The lone unconditional write of the record at `[tenant, collection, key]`: its vshard tag,
/// time, value and map epoch.
pub(super) async fn lone_write(
    db: &Database,
    sql: &'static Statements,
    [tenant, collection, key]: [&str; 3],
    (tag, now_ms, value, epoch): (i64, i64, &str, i64),
) -> Result<Written, sqlx::Error> {
    let statement = traced(&sql.insert_or_update);
    let row = statement
        .query()
        .bind(tenant)
        .bind(collection)
        .bind(key)
        .bind(tag)
        .bind(now_ms)
        .bind(value)
        .bind(epoch)
        .fetch_optional(&db.pool)
        .await?;
    row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).transpose()
}

/// Runs a batch of point reads as one statement through `db`'s health (a read: once more on
/// another connection if the first broke). A batch of one runs the lone read; each address is
/// asked once however many reads name it.
pub(super) async fn read_batch(
    db: Database,
    sql: &'static Statements,
    keys: Vec<RowKey>,
) -> (BatchOutcome<Option<RowRead>>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [key] = keys.as_slice() {
        db.health().run_idempotent(|| lone_read(&db, sql, key.borrowed())).await.map(|row| vec![row])
    } else {
        let mut unique: Vec<&RowKey> = keys.iter().collect();
        unique.sort();
        unique.dedup();
        let json = serde_json::to_string(&unique).unwrap_or_default();
        let statement = traced(for_engine(&db, &sql.batch_read));
        let read = || statement.query().bind(&json).fetch_all(&db.pool);
        db.health().run_idempotent(read).await.and_then(|rows| {
            let mut found = std::collections::HashMap::with_capacity(rows.len());
            for row in &rows {
                let read = row_read(row, 2)?;
                let address = RowKey { tenant: row.try_get(0)?, collection: row.try_get(1)?, key: read.key.clone() };
                found.insert(address, read);
            }
            Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
        })
    };
    (outcome, started.elapsed())
}

/// Runs a batch of unconditional writes through `db`'s health as one statement, or, when it
/// writes one key more than once, as one statement per round (each key at most once per round,
/// in the order the writes came) in one transaction: PostgreSQL lets one statement change a row
/// only once. Either way the batch commits once. A batch of one runs the lone write.
pub(super) async fn write_batch(
    db: Database,
    sql: &'static Statements,
    writes: Vec<RowWrite>,
) -> (BatchOutcome<Written>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [w] = writes.as_slice() {
        let write = lone_write(&db, sql, w.address.borrowed(), (w.tag, w.now_ms, &w.value, w.epoch));
        db.health().run(write).await.map(|written| vec![written])
    } else {
        let statement = for_engine(&db, &sql.batch_write);
        let rounds = rounds_by_key(&writes.iter().map(|w| &w.address).collect::<Vec<_>>());
        let statements: Vec<(&str, Vec<usize>)> = rounds.into_iter().map(|round| (statement, round)).collect();
        db.health().run(run_statements(&db, &statements, &writes)).await
    };
    (outcome, started.elapsed())
}

/// Runs `statements` (each a statement and the writes of `ops` it takes, by index) in order:
/// alone if there is one, else in one transaction. What each write's statement returned for it,
/// in the order of `ops` (nothing for a write that changed no row).
async fn run_statements<W: RoundWrite>(
    db: &Database,
    statements: &[(&str, Vec<usize>)],
    ops: &[W],
) -> Result<Vec<Option<W::Out>>, sqlx::Error> {
    let mut written: Vec<Option<W::Out>> = ops.iter().map(|_| None).collect();
    if let [(statement, round)] = statements {
        run_round(&db.pool, statement, ops, round, &mut written).await?;
    } else {
        let mut tx = db.pool.begin().await?;
        for (statement, round) in statements {
            run_round(&mut *tx, statement, ops, round, &mut written).await?;
        }
        tx.commit().await?;
    }
    Ok(written)
}

/// The operations on `addresses` (by index) in rounds where each key appears at most once, in order:
/// a key's n-th write is in the n-th round.
fn rounds_by_key(addresses: &[&RowKey]) -> Vec<Vec<usize>> {
    let mut seen: std::collections::HashMap<&RowKey, usize> = std::collections::HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, address) in addresses.iter().enumerate() {
        let n = seen.entry(*address).or_insert(0);
        if rounds.len() <= *n {
            rounds.push(Vec::new());
        }
        rounds[*n].push(i);
        *n += 1;
    }
    rounds
}

/// A write a batch sends in rounds: its record, and what its statement returns for it (after
/// the tenant, collection and key that name its row).
trait RoundWrite: serde::Serialize {
    type Out;
    fn address(&self) -> &RowKey;
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error>;
}

impl RoundWrite for RowWrite {
    /// Version and live-since version.
    type Out = (i64, i64);
    fn address(&self) -> &RowKey {
        &self.address
    }
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error> {
        Ok((row.try_get(3)?, row.try_get(4)?))
    }
}

impl RoundWrite for RowSwap {
    /// The new version.
    type Out = i64;
    fn address(&self) -> &RowKey {
        &self.address
    }
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error> {
        row.try_get(3)
    }
}

/// Runs the writes `round` (indexes into `ops`, each key at most once) in one `statement`; what
/// it returns for each goes to its place in `written` (nothing for a write that changed no
/// row).
async fn run_round<'e, E, W: RoundWrite>(
    executor: E,
    statement: &str,
    ops: &[W],
    round: &[usize],
    written: &mut [Option<W::Out>],
) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let json = serde_json::to_string(&round.iter().map(|&i| &ops[i]).collect::<Vec<_>>())
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let statement = traced(statement);
    let rows = statement.query().bind(json).fetch_all(executor).await?;
    let mut returned = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        let address = RowKey { tenant: row.try_get(0)?, collection: row.try_get(1)?, key: row.try_get(2)? };
        returned.insert(address, W::decode(row)?);
    }
    for &i in round {
        written[i] = returned.remove(ops[i].address());
    }
    Ok(())
}

/// The lone statement of one compare-and-swap write, as an unbatched write runs it.
pub(super) async fn lone_swap(
    db: &Database,
    sql: &'static Statements,
    op: &RowSwap,
) -> Result<Option<i64>, sqlx::Error> {
    let RowKey { tenant, collection, key } = &op.address;
    let value = op.value.as_deref().unwrap_or("null");
    let from = op.from.unwrap_or(0);
    let statement = traced(match op.swap {
        Swap::Insert => &sql.insert_or_nothing,
        Swap::Update => &sql.update,
        Swap::Delete => &sql.delete_version,
        Swap::DeleteLive => &sql.delete,
    });
    let query = match op.swap {
        Swap::Insert => statement
            .query_scalar()
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(op.tag)
            .bind(op.now_ms)
            .bind(value)
            .bind(op.epoch),
        Swap::Update => statement
            .query_scalar()
            .bind(from + 1)
            .bind(op.now_ms)
            .bind(value)
            .bind(op.tag)
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(from)
            .bind(op.epoch),
        Swap::Delete => statement
            .query_scalar()
            .bind(from + 1)
            .bind(op.now_ms)
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(from)
            .bind(op.epoch),
        Swap::DeleteLive => {
            statement.query_scalar().bind(op.now_ms).bind(tenant).bind(collection).bind(key).bind(op.epoch)
        }
    };
    query.fetch_optional(&db.pool).await
}

/// Runs a batch of compare-and-swap writes through `db`'s health: per round (each key at most
/// once, in the order the writes came), the inserts in one statement and the updates and
/// tombstones in another; in one transaction when that is more than one statement. A batch of
/// one runs the lone statement.
pub(super) async fn swap_batch(
    db: Database,
    sql: &'static Statements,
    swaps: Vec<RowSwap>,
) -> (BatchOutcome<Option<i64>>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [op] = swaps.as_slice() {
        db.health().run(lone_swap(&db, sql, op)).await.map(|written| vec![written])
    } else {
        let addresses: Vec<&RowKey> = swaps.iter().map(|s| &s.address).collect();
        let rounds = rounds_by_key(&addresses);
        // Per round, the statements it needs: the inserts', the updates'.
        let statements: Vec<(&str, Vec<usize>)> = rounds
            .iter()
            .flat_map(|round| {
                let (inserts, others): (Vec<usize>, Vec<usize>) =
                    round.iter().partition(|&&i| swaps[i].swap == Swap::Insert);
                [(for_engine(&db, &sql.batch_swap[0]), inserts), (for_engine(&db, &sql.batch_swap[1]), others)]
            })
            .filter(|(_, ops)| !ops.is_empty())
            .collect();
        db.health().run(run_statements(&db, &statements, &swaps)).await
    };
    (outcome, started.elapsed())
}
