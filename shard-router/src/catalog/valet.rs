//! Valet keys in the catalog: the signing keys (`valet_keys`) and every grant issued
//! (`valet_grants`). Every instance reads them here, so a rotation, a retirement, a revocation or
//! the one use of a single-use grant is seen by all instances at once.

use super::sealing::valet_secret_context;
use super::{
    AUDIT_COLUMNS, Audit, Catalog, bind_audit, bump_valet_generation, catalog_err, column, commit_if_changed,
    commit_with, corrupt, incarnation_column, incarnation_value, require_incarnation,
};
use crate::error::Error;

/// State of a signing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValetKeyState {
    /// Signs new grants (exactly one key at a time, once any exists).
    Current,
    /// Verifies the grants it signed, signs no new ones.
    Active,
    /// Verifies nothing: every URL it signed is refused.
    Retired,
}

impl ValetKeyState {
    fn as_str(self) -> &'static str {
        match self {
            ValetKeyState::Current => "current",
            ValetKeyState::Active => "active",
            ValetKeyState::Retired => "retired",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        match value {
            "current" => Some(ValetKeyState::Current),
            "active" => Some(ValetKeyState::Active),
            "retired" => Some(ValetKeyState::Retired),
            _ => None,
        }
    }

    /// The name the API shows.
    pub fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A signing key as the catalog stores it.
#[derive(Clone)]
pub struct ValetKeyRow {
    /// Key id (in every URL it signs).
    pub id: String,
    /// The 32-byte HMAC secret.
    pub secret: [u8; 32],
    /// Its state.
    pub state: ValetKeyState,
    /// Creation time (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// When it was retired.
    pub retired_at_ms: Option<i64>,
}

impl std::fmt::Debug for ValetKeyRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValetKeyRow").field("id", &self.id).field("state", &self.state).finish_non_exhaustive()
    }
}

/// What retiring a key did.
#[derive(Debug, Clone)]
pub enum Retirement {
    /// Retired (or already was).
    Retired(ValetKeyRow),
    /// No key has that id.
    NotFound,
    /// It is the current key, which cannot be retired: rotate first.
    IsCurrent,
}

/// A grant as the catalog stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValetGrantRow {
    /// Grant id (in the URL).
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Blob path, raw (percent-encoded) as in the URL.
    pub path: String,
    /// `read` or `write`.
    pub permission: String,
    /// The key that signed it.
    pub key_id: String,
    /// Valid from (unix seconds).
    pub not_before: i64,
    /// Valid until (unix seconds, exclusive).
    pub expires_at: i64,
    /// Whether it works once only.
    pub single_use: bool,
    /// When it was used (single-use grants).
    pub used_at_ms: Option<i64>,
    /// When it was revoked.
    pub revoked_at_ms: Option<i64>,
    /// When it was issued.
    pub created_at_ms: i64,
    /// The incarnation of the tenant it was issued to: it opens nothing of another one.
    pub incarnation: u64,
}

fn key_row(catalog: &Catalog, row: &sqlx::any::AnyRow) -> Result<ValetKeyRow, Error> {
    let id: String = column(row, 0)?;
    let secret = catalog.open_secret(&valet_secret_context(&id), column(row, 1)?)?;
    let state: String = column(row, 2)?;
    let secret = hex::decode(&secret)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| corrupt(format!("valet key {id} has a malformed secret")))?;
    Ok(ValetKeyRow {
        state: ValetKeyState::parse(&state).ok_or_else(|| corrupt(format!("valet key {id} state {state:?}")))?,
        created_at_ms: column(row, 3)?,
        retired_at_ms: column(row, 4)?,
        secret,
        id,
    })
}

const GRANT_COLUMNS: &str = "id, tenant, path, permission, key_id, not_before, expires_at, single_use, used_at, \
                             revoked_at, created_at, incarnation";

fn grant_row(row: &sqlx::any::AnyRow) -> Result<ValetGrantRow, Error> {
    let single_use: i64 = column(row, 7)?;
    Ok(ValetGrantRow {
        id: column(row, 0)?,
        tenant: column(row, 1)?,
        path: column(row, 2)?,
        permission: column(row, 3)?,
        key_id: column(row, 4)?,
        not_before: column(row, 5)?,
        expires_at: column(row, 6)?,
        single_use: single_use != 0,
        used_at_ms: column(row, 8)?,
        revoked_at_ms: column(row, 9)?,
        created_at_ms: column(row, 10)?,
        incarnation: incarnation_column(row, 11)?,
    })
}

impl Catalog {
    /// Every signing key, oldest first.
    pub async fn valet_keys(&self) -> Result<Vec<ValetKeyRow>, Error> {
        self.guarded(async {
            let rows =
                sqlx::query("SELECT id, secret, state, created_at, retired_at FROM valet_keys ORDER BY created_at, id")
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            rows.iter().map(|row| key_row(self, row)).collect()
        })
        .await
    }

    /// Makes a new current key (the previous current one keeps verifying as `active`).
    pub async fn rotate_valet_key(&self, id: &str, secret: &[u8; 32], audit: &Audit) -> Result<ValetKeyRow, Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            sqlx::query("UPDATE valet_keys SET state = 'active' WHERE state = 'current'")
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            let now = crate::clock::now_ms();
            let statement =
                sqlx::query("INSERT INTO valet_keys (id, secret, state, created_at) VALUES ($1, $2, 'current', $3)")
                    .bind(id)
                    .bind(self.seal_secret(&valet_secret_context(id), &hex::encode(secret)))
                    .bind(now);
            commit_with(tx, statement).await?;
            Ok(ValetKeyRow {
                id: id.to_owned(),
                secret: *secret,
                state: ValetKeyState::Current,
                created_at_ms: now,
                retired_at_ms: None,
            })
        })
        .await
    }

    /// Retires a key that is not the current one.
    pub async fn retire_valet_key(&self, id: &str, audit: &Audit) -> Result<Retirement, Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            let row = sqlx::query("SELECT id, secret, state, created_at, retired_at FROM valet_keys WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(catalog_err)?;
            let Some(row) = row.as_ref().map(|row| key_row(self, row)).transpose()? else {
                return Ok(Retirement::NotFound);
            };
            if row.state == ValetKeyState::Current {
                return Ok(Retirement::IsCurrent);
            }
            bump_valet_generation(&mut tx).await?;
            let now = crate::clock::now_ms();
            let statement = sqlx::query(
                "UPDATE valet_keys SET state = 'retired', retired_at = COALESCE(retired_at, $1) WHERE id = $2",
            )
            .bind(now)
            .bind(id);
            commit_with(tx, statement).await?;
            Ok(Retirement::Retired(ValetKeyRow {
                state: ValetKeyState::Retired,
                retired_at_ms: row.retired_at_ms.or(Some(now)),
                ..row
            }))
        })
        .await
    }

    /// Records an issued grant, with its audit entry, in one transaction.
    /// [`Error::TenantNotFound`] if its tenant is gone or is another incarnation by now.
    pub async fn insert_valet_grant(&self, grant: &ValetGrantRow, audit: &Audit) -> Result<(), Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            let incarnation = incarnation_value(grant.incarnation)?;
            require_incarnation(&mut tx, &grant.tenant, incarnation).await?;
            let sql = format!(
                "INSERT INTO valet_grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
            );
            let statement = sqlx::query(&sql)
                .bind(&grant.id)
                .bind(&grant.tenant)
                .bind(&grant.path)
                .bind(&grant.permission)
                .bind(&grant.key_id)
                .bind(grant.not_before)
                .bind(grant.expires_at)
                .bind(i64::from(grant.single_use))
                .bind(grant.used_at_ms)
                .bind(grant.revoked_at_ms)
                .bind(grant.created_at_ms)
                .bind(incarnation);
            commit_with(tx, statement).await
        })
        .await
    }

    /// One grant with the state of the key that signed it (`None` for the state: the key is
    /// gone).
    pub async fn valet_grant(&self, id: &str) -> Result<Option<(ValetGrantRow, Option<ValetKeyState>)>, Error> {
        self.guarded(async {
            let columns = GRANT_COLUMNS.split(", ").map(|c| format!("g.{c}")).collect::<Vec<_>>().join(", ");
            let row = sqlx::query(&format!(
            "SELECT {columns}, k.state FROM valet_grants g LEFT JOIN valet_keys k ON k.id = g.key_id WHERE g.id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.db.pool)
        .await
        .map_err(catalog_err)?;
            let Some(row) = row else { return Ok(None) };
            let state: Option<String> = column(&row, 12)?;
            Ok(Some((grant_row(&row)?, state.as_deref().and_then(ValetKeyState::parse))))
        })
        .await
    }

    /// Uses a single-use grant: true for exactly one caller, however many try at once.
    pub async fn use_valet_grant(&self, id: &str) -> Result<bool, Error> {
        self.guarded(async {
            let statement = sqlx::query("UPDATE valet_grants SET used_at = $1 WHERE id = $2 AND used_at IS NULL")
                .bind(crate::clock::now_ms())
                .bind(id);
            self.changes_one_row(statement).await
        })
        .await
    }

    /// Gives a single-use grant its use back (its upload failed before anything was stored).
    pub async fn release_valet_grant(&self, id: &str) -> Result<(), Error> {
        self.execute(sqlx::query("UPDATE valet_grants SET used_at = NULL WHERE id = $1").bind(id)).await?;
        Ok(())
    }

    /// Revokes a tenant's grant. `false`: the tenant has no such grant.
    pub async fn revoke_valet_grant(&self, tenant: &str, id: &str, audit: &Audit) -> Result<bool, Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            bump_valet_generation(&mut tx).await?;
            let revoke = sqlx::query(
                "UPDATE valet_grants SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 AND tenant = $3",
            )
            .bind(crate::clock::now_ms())
            .bind(id)
            .bind(tenant);
            commit_if_changed(tx, revoke).await
        })
        .await
    }

    /// Appends one audit entry on its own (events that change nothing in the catalog, such as a
    /// valet download or a refused valet request).
    pub async fn append_audit(&self, audit: &Audit) -> Result<(), Error> {
        self.guarded(async {
            let tx = self.begin_audited(audit).await?;
            tx.commit().await.map_err(catalog_err)
        })
        .await
    }

    /// Appends audit entries that change nothing else, each at the time it happened, in one
    /// transaction: multi-row `INSERT`s of at most [`AUDIT_ROWS_PER_INSERT`] rows each, in order
    /// (so ids follow the slice). All or none of them are recorded.
    pub async fn append_audits(&self, entries: &[TimedAudit]) -> Result<(), Error> {
        self.guarded(async {
            if entries.is_empty() {
                return Ok(());
            }
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            for batch in entries.chunks(AUDIT_ROWS_PER_INSERT) {
                let rows = (0..batch.len())
                    .map(|i| {
                        let n = i * 8;
                        let places: Vec<String> = (1..=8).map(|k| format!("${}", n + k)).collect();
                        format!("({})", places.join(", "))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let sql = format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES {rows}");
                let insert = batch.iter().fold(sqlx::query(&sql), |q, t| bind_audit(q, t.at_ms, &t.audit));
                insert.execute(&mut *tx).await.map_err(catalog_err)?;
            }
            tx.commit().await.map_err(catalog_err)
        })
        .await
    }
}

/// The most rows one statement of [`Catalog::append_audits`] inserts (8 parameters each, well
/// under the parameter limits of both engines).
pub const AUDIT_ROWS_PER_INSERT: usize = 100;

/// An audit entry and when it happened (ms since the Unix epoch), for entries recorded after the
/// fact ([`Catalog::append_audits`]).
#[derive(Debug, Clone)]
pub struct TimedAudit {
    /// When the audited event happened.
    pub at_ms: i64,
    /// What it was.
    pub audit: Audit,
}
