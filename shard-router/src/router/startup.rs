//! Opening the router at start-up ([`ShardRouter::open`]): the catalog (migrated if
//! configured, checked for TLS first), the shards named in configuration that the catalog does
//! not know yet (or, on the embedded default, SQLite shards of its own), a pool per registered
//! shard whose database carries its identity marker, and the map. Also `shardgate migrate`
//! ([`ShardRouter::migrate_all`]).
//!
//! It runs once per process, before any request; it knows nothing of routing a request, of
//! admin changes after start-up, or of jobs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use secrecy::SecretString;

use crate::catalog::{Audit, Catalog, SecretsKeyFile, ShardRow};
use crate::clock::now_ms;
use crate::config::{ShardSeed, StorageConfig};
use crate::error::Error;
use crate::ids::ShardId;
use crate::map::hash::DEFAULT_VSHARD_COUNT;
use crate::map::{ShardState, spread_vshards};
use crate::pools::{
    Quarantine, REGISTER_TIMEOUT, ShardPasswords, ShardPools, connect_shard, pool_share, pools_per_server,
};
use crate::router::ShardRouter;
use crate::storage::db::{Database, Schema};
use crate::storage::meter::LoadMeter;
use crate::storage::password_file::PasswordFile;
use crate::storage::registration::{Claim, check_shard_url, claim_identity};

impl ShardRouter {
    /// Opens the catalog (migrating it if configured), registers configured shards the catalog
    /// does not know yet, opens a pool per shard and loads the map.
    pub async fn open(config: &StorageConfig, data_dir: &Path) -> Result<Self, Error> {
        let embedded = config.catalog_url.is_none();
        let catalog_url = match &config.catalog_url {
            Some(url) => url.clone(),
            None => {
                std::fs::create_dir_all(data_dir).map_err(|e| {
                    Error::InvalidDatabaseUrl(format!("cannot create data dir {}: {e}", data_dir.display()))
                })?;
                sqlite_url(&data_dir.join("catalog.db"))
            }
        };
        let secrets_key = config.secrets_key_file.as_deref().map(SecretsKeyFile::read).transpose()?;
        let catalog_target = "the catalog (storage.catalog_url)";
        let catalog_password = match &config.catalog_password_file {
            Some(_) if embedded => {
                return Err(Error::InvalidDatabaseUrl(
                    "storage.catalog_password_file needs storage.catalog_url (a postgres:// URL)".to_owned(),
                ));
            }
            Some(path) => Some(PasswordFile::new(path.clone())),
            None => None,
        };
        let opened_url = match &catalog_password {
            Some(file) => file.apply(&catalog_url).map_err(|e| match e {
                Error::InvalidDatabaseUrl(reason) => Error::InvalidDatabaseUrl(format!("the catalog: {reason}")),
                other => other,
            })?,
            None => catalog_url.clone(),
        };
        let catalog_db = Database::open(&opened_url, &config.pool).map_err(|e| e.tls_to(catalog_target))?;
        // A TLS failure stops the start with what failed; anything else (the catalog not up
        // yet) is left to the steps below, as before.
        if catalog_db.tls().is_some()
            && let Ok(Err(e @ Error::Tls { .. })) =
                tokio::time::timeout(config.pool.acquire_timeout, catalog_db.check_connect(catalog_target)).await
        {
            return Err(e);
        }
        if config.migrate_on_start {
            catalog_db.migrate(Schema::Catalog).await?;
        }
        let catalog = match catalog_password {
            Some(file) => Catalog::new(catalog_db).with_password_file(file, catalog_url.clone()),
            None => Catalog::new(catalog_db),
        };
        let catalog = catalog.open_secrets(secrets_key.as_ref()).await?;
        let catalog_id = catalog.identity().await?;
        let catalog_engine = catalog.database().engine;
        for seed in &config.shards {
            check_shard_url(&seed.url, catalog_engine).map_err(|e| match e {
                Error::UnsafeShardUrl(reason) => {
                    Error::UnsafeShardUrl(format!("storage.shards, shard {}: {reason}", seed.id))
                }
                Error::InvalidDatabaseUrl(reason) => {
                    Error::InvalidDatabaseUrl(format!("storage.shards, shard {}: {reason}", seed.id))
                }
                other => other.tls_to(format!("shard {} (storage.shards)", seed.id)),
            })?;
        }

        let passwords = ShardPasswords::of(&config.shards);
        let registered = catalog.list_shards().await?;
        let mut seeds = config.shards.clone();
        if seeds.is_empty() && embedded && registered.is_empty() {
            let dir = data_dir.join("shards");
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::InvalidDatabaseUrl(format!("cannot create {}: {e}", dir.display())))?;
            for i in 0..config.embedded_shards {
                let id = ShardId::parse(&format!("shard-{i}")).map_err(|e| Error::Corrupt(e.to_string()))?;
                seeds.push(ShardSeed { id, url: sqlite_url(&dir.join(format!("shard-{i}.db"))), password_file: None });
            }
        }
        // A shard removed through the API stays removed, though `storage.shards` still lists it.
        let removed = catalog.removed_shards().await?;
        seeds.retain(|seed| {
            let skip = removed.iter().any(|id| id == seed.id.as_str()) && !registered.iter().any(|r| r.id == seed.id);
            if skip {
                tracing::warn!(
                    shard = %seed.id,
                    "shard {} was removed through the API (DELETE /v1/admin/shards/{}) and is not registered again; \
                     delete its entry from storage.shards (or register it again with POST /v1/admin/shards)",
                    seed.id,
                    seed.id
                );
            }
            !skip
        });
        let now = now_ms();
        let mut new_rows = Vec::new();
        for seed in &seeds {
            if registered.iter().any(|r| r.id == seed.id) {
                continue;
            }
            let url = passwords.url_for(&seed.id, &seed.url)?;
            let (db, claim) = connect_shard(&seed.id, &url, &config.pool, &catalog_id).await?;
            db.close().await;
            claim.refuse_other(&seed.id, &catalog_id, |id| registered.iter().any(|r| r.id.as_str() == id))?;
            new_rows.push(ShardRow {
                id: seed.id.clone(),
                url: seed.url.clone(),
                engine: check_shard_url(&seed.url, catalog_engine)?,
                state: ShardState::Active,
                created_at_ms: now,
                updated_at_ms: now,
            });
        }
        if !new_rows.is_empty() {
            let owners: Vec<ShardId> = spread_vshards(DEFAULT_VSHARD_COUNT, seeds.len())
                .into_iter()
                .map(|i| seeds[usize::from(i)].id.clone())
                .collect();
            let audit = Audit {
                actor: "system".to_owned(),
                tenant: None,
                action: "shard.bootstrap",
                target: new_rows.iter().map(|r| format!("shard:{}", r.id)).collect::<Vec<_>>().join(" "),
                request_id: "start-up".to_owned(),
                client_request_id: None,
                client_address: None,
            };
            catalog.bootstrap_shards(&new_rows, &owners, &audit).await?;
        }

        let mut pools = HashMap::new();
        let mut quarantined = HashMap::new();
        let rows = catalog.list_shards().await?;
        let sharing = pools_per_server(&rows);
        for shard in &rows {
            let url = passwords.url_for(&shard.id, &shard.url)?;
            let db = Database::open(&url, &pool_share(&config.pool, &shard.url, &sharing))
                .map_err(|e| e.tls_to(format!("shard {}", shard.id)))?;
            if shard.state != ShardState::Offline {
                if config.migrate_on_start
                    && let Err(e) = db.migrate(Schema::Shard).await
                {
                    tracing::warn!(shard = %shard.id, error = %e, "shard migration failed at start-up; the shard will report unready");
                }
                if let Some(reason) = check_identity_at_open(&db, shard, &catalog_id, &rows).await {
                    db.close().await;
                    quarantined.insert(shard.id.clone(), Quarantine { reason, url: shard.url.clone() });
                    continue;
                }
            }
            pools.insert(shard.id.clone(), db);
        }
        let map = catalog.load_map().await?;
        tracing::info!(epoch = map.epoch, shards = map.shards.len(), tenants = map.tenants.len(), "shard map loaded");
        let meter = config.load.enabled.then(|| Arc::new(LoadMeter::new(config.load.meter())));
        let pools = ShardPools::new(
            pools,
            quarantined,
            catalog_id,
            config.pool.clone(),
            (meter, config.batching, config.replica_reads.clone()),
            passwords,
        );
        Ok(Self::new(catalog, map, pools, config.moves.clone(), config.fan_out_deadline))
    }

    /// Applies catalog and shard migrations to every configured and registered database, then
    /// closes. Used by `shardgate migrate`.
    pub async fn migrate_all(config: &StorageConfig, data_dir: &Path) -> Result<Vec<String>, Error> {
        let mut config = config.clone();
        config.migrate_on_start = true;
        let router = Self::open(&config, data_dir).await?;
        let mut migrated = vec!["catalog".to_owned()];
        let pools = router.pools().all();
        for (id, db) in pools {
            db.migrate(Schema::Shard)
                .await
                .map_err(|e| Error::ShardUnreachable { shard: id.clone(), reason: e.to_string() })?;
            migrated.push(format!("shard {id}"));
        }
        Ok(migrated)
    }
}

/// A `sqlite://` URL for a file path.
pub fn sqlite_url(path: &Path) -> SecretString {
    let path: PathBuf = path.to_path_buf();
    SecretString::from(format!("sqlite://{}", path.display()))
}

/// At start-up, checks that registered shard `shard`'s database carries its identity marker,
/// writing it if the database has none (a shard registered before markers existed). Returns
/// why the shard must not be used if the database carries another shard's marker; a database
/// that cannot be checked now (unreachable) is used, with a warning.
async fn check_identity_at_open(
    db: &Database,
    shard: &ShardRow,
    catalog_id: &str,
    rows: &[ShardRow],
) -> Option<String> {
    let claim = match tokio::time::timeout(REGISTER_TIMEOUT, claim_identity(db, &shard.id, catalog_id)).await {
        Ok(Ok(claim)) => claim,
        Ok(Err(e)) => {
            tracing::warn!(shard = %shard.id, error = %e, "could not check the shard's identity marker at start-up");
            return None;
        }
        Err(_) => {
            tracing::warn!(shard = %shard.id, "checking the shard's identity marker timed out at start-up");
            return None;
        }
    };
    if claim == Claim::Written {
        tracing::info!(shard = %shard.id, "wrote the identity marker of a shard registered before markers existed");
    }
    let registered = |id: &str| rows.iter().any(|r| r.id.as_str() == id);
    let Err(e) = claim.refuse_other(&shard.id, catalog_id, registered) else { return None };
    let reason = match e {
        Error::ShardDatabaseClaimed { holder, .. } => format!("its database is already {holder}"),
        other => other.to_string(),
    };
    tracing::error!(shard = %shard.id, reason, "shard not used: its database carries another shard's identity marker");
    Some(reason)
}
