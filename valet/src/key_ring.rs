//! The key ring: the signing keys a verifier knows, by id, each with its state; which one signs
//! new grants; which ones still verify.
//!
//! It holds no I/O: the caller fills it from wherever keys are stored (the catalog, for the api)
//! and keeps it fresh. The store stays the authority on a key's state; the ring is what one
//! instance has seen of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{KeyId, SigningKey, ValetError};

/// What a signing key may still do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyState {
    /// Signs new grants and verifies (at most one key of a ring at a time).
    Current,
    /// Verifies the grants it signed; signs no new ones.
    Active,
    /// Verifies nothing: every URL it ever signed is refused. Final: a retired key never comes
    /// back.
    Retired,
}

impl KeyState {
    /// Whether URLs signed by a key in this state still work: [`ValetError::KeyRetired`] when it
    /// is retired.
    pub fn check_verifies(self) -> Result<(), ValetError> {
        match self {
            KeyState::Current | KeyState::Active => Ok(()),
            KeyState::Retired => Err(ValetError::KeyRetired),
        }
    }
}

#[derive(Debug, Clone)]
struct RingKey {
    key: Arc<SigningKey>,
    state: KeyState,
}

/// Signing keys by id, with their states.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: BTreeMap<KeyId, RingKey>,
}

impl KeyRing {
    /// An empty ring.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key` in `state`, or moves the key with its id to `state`.
    ///
    /// - A key id never changes its secret: for an id the ring holds already, `key`'s secret is
    ///   ignored and only the state is taken.
    /// - Retirement is final: a retired key stays retired whatever state is given later.
    /// - One current key: making a key current makes the previous current key active.
    ///
    /// Returns the key the ring holds for that id.
    pub fn insert(&mut self, key: SigningKey, state: KeyState) -> Arc<SigningKey> {
        if state == KeyState::Current {
            for other in self.keys.values_mut().filter(|k| k.state == KeyState::Current) {
                other.state = KeyState::Active;
            }
        }
        let id = key.id().clone();
        let entry = self.keys.entry(id).or_insert_with(|| RingKey { key: Arc::new(key), state });
        if entry.state != KeyState::Retired {
            entry.state = state;
        }
        entry.key.clone()
    }

    /// Retires the key `id` (nothing if the ring does not hold it).
    pub fn retire(&mut self, id: &KeyId) {
        if let Some(entry) = self.keys.get_mut(id) {
            entry.state = KeyState::Retired;
        }
    }

    /// The key that signs new grants, if the ring has one.
    pub fn current(&self) -> Option<&Arc<SigningKey>> {
        self.keys.values().find(|k| k.state == KeyState::Current).map(|k| &k.key)
    }

    /// The state of the key `id`, if the ring holds it.
    pub fn state(&self, id: &KeyId) -> Option<KeyState> {
        self.keys.get(id).map(|k| k.state)
    }

    /// The key a URL names ([`crate::UnverifiedGrant::key_id`]), to check its signature with:
    /// [`ValetError::UnknownKey`] when the ring holds no key with that id.
    ///
    /// A retired key is returned too: its state is checked *after* the signature
    /// ([`KeyState::check_verifies`], with the store's word on the state), so that a genuine URL
    /// it signed is refused as retired and a tampered one as tampered.
    pub fn verifying_key(&self, id: &KeyId) -> Result<&Arc<SigningKey>, ValetError> {
        self.keys.get(id).map(|k| &k.key).ok_or(ValetError::UnknownKey)
    }

    /// How many keys the ring holds, in any state.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the ring holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(id: &str) -> KeyId {
        KeyId::parse(id).unwrap()
    }

    fn key(name: &str, byte: u8) -> SigningKey {
        SigningKey::from_parts(id(name), [byte; 32])
    }

    /// A ring holding `key(name, byte)` in `state` for each `(name, byte, state)`, inserted in order.
    fn ring_of(keys: &[(&str, u8, KeyState)]) -> KeyRing {
        let mut ring = KeyRing::new();
        for &(name, byte, state) in keys {
            ring.insert(key(name, byte), state);
        }
        ring
    }

    #[test]
    fn an_empty_ring_has_no_current_key_and_knows_no_id() {
        let ring = KeyRing::new();
        assert!(ring.is_empty());
        assert!(ring.current().is_none());
        assert_eq!(ring.verifying_key(&id("k1")).map(|_| ()), Err(ValetError::UnknownKey));
    }

    #[test]
    fn keys_are_found_by_id() {
        let ring = ring_of(&[("k1", 1, KeyState::Active), ("k2", 2, KeyState::Current)]);
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.verifying_key(&id("k1")).unwrap().expose_secret(), &[1; 32]);
        assert_eq!(ring.current().unwrap().id(), &id("k2"));
        assert_eq!(ring.verifying_key(&id("k3")).map(|_| ()), Err(ValetError::UnknownKey));
    }

    #[test]
    fn a_new_current_key_makes_the_old_one_active() {
        let ring = ring_of(&[("k1", 1, KeyState::Current), ("k2", 2, KeyState::Current)]);
        assert_eq!(ring.current().unwrap().id(), &id("k2"));
        assert_eq!(ring.state(&id("k1")), Some(KeyState::Active));
        assert_eq!(ring.state(&id("k2")), Some(KeyState::Current));
    }

    #[test]
    fn an_id_keeps_its_first_secret() {
        let mut ring = ring_of(&[("k1", 1, KeyState::Current)]);
        let held = ring.insert(key("k1", 9), KeyState::Active);
        assert_eq!(held.expose_secret(), &[1; 32]);
        assert_eq!(ring.verifying_key(&id("k1")).unwrap().expose_secret(), &[1; 32]);
        assert_eq!(ring.state(&id("k1")), Some(KeyState::Active));
    }

    #[test]
    fn retired_keys_are_refused_and_stay_retired() {
        let mut ring = ring_of(&[("k1", 1, KeyState::Current)]);
        ring.retire(&id("k1"));
        assert!(ring.current().is_none(), "a retired key signs nothing");
        assert_eq!(ring.state(&id("k1")).map(KeyState::check_verifies), Some(Err(ValetError::KeyRetired)));
        ring.insert(key("k1", 1), KeyState::Current);
        assert_eq!(ring.state(&id("k1")), Some(KeyState::Retired), "retirement is final");
        assert!(ring.current().is_none());
        ring.insert(key("k0", 0), KeyState::Retired);
        assert_eq!(ring.state(&id("k0")), Some(KeyState::Retired));
        ring.retire(&id("absent"));
        assert_eq!(ring.len(), 2);
    }

    #[test]
    fn a_retired_key_still_checks_signatures_so_tampering_is_told_apart() {
        let ring = ring_of(&[("k1", 1, KeyState::Retired)]);
        assert!(ring.verifying_key(&id("k1")).is_ok());
        assert_eq!(KeyState::Current.check_verifies(), Ok(()));
        assert_eq!(KeyState::Active.check_verifies(), Ok(()));
        assert_eq!(KeyState::Retired.check_verifies(), Err(ValetError::KeyRetired));
    }
}
