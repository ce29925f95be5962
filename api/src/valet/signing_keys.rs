//! The valet signing keys of this instance: a [`KeyRing`] filled from the catalog's key rows,
//! with rotation and retirement written through to the catalog.
//!
//! The catalog is the authority. Issuing reads its rows every time (a rotation on another
//! instance takes effect at once), a verifier that meets a key id it has not seen reads them once,
//! and every use of a URL checks its key's state in the catalog again (`valet/service.rs`), so a
//! retirement anywhere refuses the key's URLs everywhere at once.

use std::sync::Arc;

use parking_lot::RwLock;
use shardgate_shard_router::Error as StoreError;
use shardgate_shard_router::catalog::{Audit, Catalog, Retirement, ValetKeyRow, ValetKeyState};
use shardgate_valet::{KeyId, KeyRing, KeyState, SigningKey, ValetError};

/// The signing keys this instance has seen (secrets from the catalog), by id.
#[derive(Debug, Default)]
pub struct SigningKeys {
    ring: RwLock<KeyRing>,
}

/// The key ring's name for a catalog key state.
pub fn key_state(state: ValetKeyState) -> KeyState {
    match state {
        ValetKeyState::Current => KeyState::Current,
        ValetKeyState::Active => KeyState::Active,
        ValetKeyState::Retired => KeyState::Retired,
    }
}

impl SigningKeys {
    /// Takes `rows` into the ring (a row whose id is not a valid key id is skipped).
    fn remember(&self, rows: &[ValetKeyRow]) {
        let mut ring = self.ring.write();
        for row in rows {
            if let Ok(id) = KeyId::parse(&row.id) {
                ring.insert(SigningKey::from_parts(id, row.secret), key_state(row.state));
            }
        }
    }

    /// Every signing key row of the catalog, oldest first (and the ring refreshed from them).
    pub async fn rows(&self, catalog: &Catalog) -> Result<Vec<ValetKeyRow>, StoreError> {
        let rows = catalog.valet_keys().await?;
        self.remember(&rows);
        Ok(rows)
    }

    /// The key a valet URL names, to check its signature with, reading the catalog once if this
    /// instance has not seen it. The inner error is the refusal ([`ValetError::UnknownKey`]); the
    /// outer one, the catalog failing.
    pub async fn verifying_key(
        &self,
        catalog: &Catalog,
        id: &KeyId,
    ) -> Result<Result<Arc<SigningKey>, ValetError>, StoreError> {
        if let Ok(key) = self.ring.read().verifying_key(id) {
            return Ok(Ok(key.clone()));
        }
        self.rows(catalog).await?;
        Ok(self.ring.read().verifying_key(id).cloned())
    }

    /// The key that signs new grants, as the catalog has it now; the first one is made on first
    /// use (audited as the `system` actor under `request_id`).
    pub async fn current(&self, catalog: &Catalog, request_id: &str) -> Result<Arc<SigningKey>, StoreError> {
        self.rows(catalog).await?;
        if let Some(key) = self.ring.read().current() {
            return Ok(key.clone());
        }
        let audit = Audit {
            actor: "system".into(),
            tenant: None,
            action: "valet.key.rotate",
            target: "valet signing key".into(),
            request_id: request_id.to_owned(),
            client_request_id: None,
            client_address: None,
        };
        Ok(self.rotate_key(catalog, &audit).await?.1)
    }

    /// Makes a new current key (older keys keep verifying until retired); `audit`'s target
    /// becomes the new key's.
    pub async fn rotate(&self, catalog: &Catalog, audit: &Audit) -> Result<ValetKeyRow, StoreError> {
        Ok(self.rotate_key(catalog, audit).await?.0)
    }

    async fn rotate_key(&self, catalog: &Catalog, audit: &Audit) -> Result<(ValetKeyRow, Arc<SigningKey>), StoreError> {
        let key = SigningKey::generate(KeyId::generate());
        let audit = Audit { target: format!("valet-key:{}", key.id()), ..audit.clone() };
        let row = catalog.rotate_valet_key(key.id().as_str(), key.expose_secret(), &audit).await?;
        let key = self.ring.write().insert(key, KeyState::Current);
        Ok((row, key))
    }

    /// Retires the key `id` in the catalog (and in the ring): every URL it signed is refused.
    pub async fn retire(&self, catalog: &Catalog, id: &str, audit: &Audit) -> Result<Retirement, StoreError> {
        let retirement = catalog.retire_valet_key(id, audit).await?;
        if let (Retirement::Retired(_), Ok(id)) = (&retirement, KeyId::parse(id)) {
            self.ring.write().retire(&id);
        }
        Ok(retirement)
    }
}
