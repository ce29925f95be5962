//! Signing keys: an id and a secret.

use hmac::{Hmac, Mac};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretBox};
use sha2::Sha256;

use crate::KeyId;

/// An HMAC-SHA256 signing key: an id and 32 secret bytes. The secret is zeroed on drop and
/// never printed by `Debug`.
#[derive(Debug)]
pub struct SigningKey {
    id: KeyId,
    secret: SecretBox<[u8; 32]>,
}

impl SigningKey {
    /// A new key with 32 bytes from the thread-local CSPRNG (ChaCha, seeded from the OS).
    pub fn generate(id: KeyId) -> Self {
        let secret = SecretBox::init_with_mut(|bytes: &mut [u8; 32]| rand::rng().fill_bytes(bytes));
        Self { id, secret }
    }

    /// A key from its stored parts, for example loaded from the catalog or configuration.
    pub fn from_parts(id: KeyId, secret: [u8; 32]) -> Self {
        Self { id, secret: SecretBox::new(Box::new(secret)) }
    }

    /// The key's id.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    /// The secret bytes, to store the key. Handle with care: never log them.
    pub fn expose_secret(&self) -> &[u8; 32] {
        self.secret.expose_secret()
    }

    /// An HMAC-SHA256 instance keyed with this key's secret.
    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(self.secret.expose_secret()).expect("HMAC takes keys of any length")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_random() {
        let id = KeyId::parse("k1").unwrap();
        let a = SigningKey::generate(id.clone());
        let b = SigningKey::generate(id);
        assert_ne!(a.expose_secret(), b.expose_secret());
        assert_ne!(a.expose_secret(), &[0; 32]);
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let key = SigningKey::from_parts(KeyId::parse("k1").unwrap(), [0xab; 32]);
        let printed = format!("{key:?}");
        assert!(printed.contains("k1"), "{printed}");
        assert!(printed.contains("REDACTED"), "{printed}");
        assert!(!printed.to_lowercase().contains("abab"), "{printed}");
        assert!(!printed.contains("171"), "{printed}");
    }
}
