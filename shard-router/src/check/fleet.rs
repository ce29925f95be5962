//! The fleet as `shardgate check` reaches it: the catalog that `storage` configures (or the
//! embedded default's `<data_dir>/catalog.db`), and each shard the catalog registers, opened
//! without creating, migrating or claiming anything (a missing SQLite file is reported, not
//! created).

use std::path::Path;
use std::time::Duration;

use secrecy::ExposeSecret;

use crate::catalog::{Catalog, SecretsKeyFile, ShardRow};
use crate::check::blobs::check_blobs;
use crate::check::fences::check_fences;
use crate::check::identity::{check_marker, shared_databases, sqlite_path};
use crate::check::rows::check_rows;
use crate::check::usage::check_usage;
use crate::check::{CatalogView, Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::config::StorageConfig;
use crate::error::Error;
use crate::startup::sqlite_url;
use crate::storage::db::{Database, Engine};
use crate::storage::password_file::PasswordFile;

/// The catalog and the registered shards, opened for reading.
#[derive(Debug)]
pub struct Fleet {
    /// The catalog.
    pub catalog: Catalog,
    /// Its identity (`shard_map.catalog_id`).
    pub catalog_id: String,
    /// The shards it registers.
    pub rows: Vec<ShardRow>,
    /// Those that answered, with their databases.
    pub shards: Vec<ShardUnderCheck>,
}

impl Fleet {
    /// Opens the catalog and every registered shard. An unreachable shard is a
    /// [`Kind::ShardUnreachable`] finding and is left out of [`Fleet::shards`]; an unreachable
    /// catalog is an error (nothing can be checked).
    pub async fn open(config: &StorageConfig, data_dir: &Path, findings: &mut Findings) -> Result<Self, Error> {
        let url = match &config.catalog_url {
            Some(url) => url.clone(),
            None => {
                let path = data_dir.join("catalog.db");
                if !path.exists() {
                    return Err(Error::InvalidDatabaseUrl(format!(
                        "no catalog at {} (the embedded default's): give the data directory of the fleet with \
                         --data-dir, or configure storage.catalog_url",
                        path.display()
                    )));
                }
                sqlite_url(&path)
            }
        };
        let url = match &config.catalog_password_file {
            Some(path) => PasswordFile::new(path.clone()).apply(&url)?,
            None => url,
        };
        let db = Database::open(&url, &config.pool)?;
        db.ping(config.pool.acquire_timeout).await?;
        let secrets_key = config.secrets_key_file.as_deref().map(SecretsKeyFile::read).transpose()?;
        let catalog = Catalog::new(db).read_secrets(secrets_key.as_ref()).await?;
        let catalog_id = catalog.identity().await?;
        let rows = catalog.list_shards().await?;
        let mut shards = Vec::new();
        for row in &rows {
            match open_shard(row, config).await {
                Ok(db) => shards.push(ShardUnderCheck { id: row.id.clone(), db }),
                Err(reason) => unreachable(findings, row, &reason),
            }
        }
        Ok(Self { catalog, catalog_id, rows, shards })
    }

    /// Runs the identity, row, blob, usage and fence checks on every reachable shard. A shard that fails
    /// midway is reported as unreachable, and the others are still checked.
    pub async fn check_shards(&self, view: &CatalogView, findings: &mut Findings) {
        let pairs: Vec<(&ShardRow, &ShardUnderCheck)> = self
            .shards
            .iter()
            .filter_map(|shard| self.rows.iter().find(|row| row.id == shard.id).map(|row| (row, shard)))
            .collect();
        let shared = shared_databases(&pairs, findings).await;
        for (row, shard) in pairs {
            let in_shared = shared.iter().any(|ids| ids.iter().any(|id| id == shard.id.as_str()));
            let checked = async {
                check_marker(shard, &self.catalog_id, in_shared, findings).await?;
                check_rows(shard, view, findings).await?;
                check_blobs(shard, view, findings).await?;
                check_usage(shard, findings).await?;
                check_fences(shard, view, findings).await
            }
            .await;
            if let Err(e) = checked {
                unreachable(findings, row, &e.to_string());
            }
        }
    }
}

/// Opens `row`'s database and runs one statement on it; why not, if it cannot.
async fn open_shard(row: &ShardRow, config: &StorageConfig) -> Result<Database, String> {
    if row.engine == Engine::Sqlite
        && let Some(path) = sqlite_path(row.url.expose_secret())
        && !Path::new(path).exists()
    {
        return Err(format!("its SQLite file {path} does not exist"));
    }
    let password_file = config.shards.iter().find(|seed| seed.id == row.id).and_then(|seed| seed.password_file.clone());
    let url = match password_file {
        Some(path) => PasswordFile::new(path).apply(&row.url).map_err(|e| e.to_string())?,
        None => row.url.clone(),
    };
    let db = Database::open(&url, &config.pool).map_err(|e| e.to_string())?;
    let timeout = config.pool.acquire_timeout.max(Duration::from_secs(1));
    db.ping(timeout).await.map_err(|e| e.to_string())?;
    Ok(db)
}

fn unreachable(findings: &mut Findings, row: &ShardRow, reason: &str) {
    let id = &row.id;
    findings.push(Finding {
        kind: Kind::ShardUnreachable,
        place: Place::shard(id),
        found: format!("shard {id} ({}) could not be checked: {reason}", row.state.as_str()),
        action: format!(
            "Make shard {id}'s database reachable at the URL the catalog registers (restore it, start its server, \
             or run `shardgate migrate` if its schema is missing), then run `shardgate check` again."
        ),
    });
}
