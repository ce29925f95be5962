//! The embedded default's generated HS256 secret, kept in the data directory and reused on
//! restart.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use secrecy::SecretString;
use shardgate_gatekeeper::IssuerConfig;

/// The `iss` of tokens signed with the embedded secret.
pub const EMBEDDED_ISSUER: &str = "shardgate";

const SECRET_FILE: &str = "jwt-secret";

/// Reads the data directory's secret, generating it (32 random bytes, base64url) on first use.
pub fn load_or_create_secret(data_dir: &Path) -> anyhow::Result<SecretString> {
    let path = data_dir.join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(SecretString::from(text.trim().to_owned())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    }
    std::fs::create_dir_all(data_dir)?;
    let bytes: [u8; 32] = rand::random();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(&path) {
        Ok(mut file) => {
            file.write_all(secret.as_bytes())?;
            file.sync_all()?;
            Ok(SecretString::from(secret))
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create_secret(data_dir),
        Err(e) => Err(anyhow::anyhow!("cannot write {}: {e}", path.display())),
    }
}

/// The issuer that verifies tokens signed with the embedded secret.
pub fn embedded_issuer(secret: SecretString) -> IssuerConfig {
    IssuerConfig::hs256(EMBEDDED_ISSUER, secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn the_secret_is_generated_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(dir.path()).unwrap();
        let second = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(first.expose_secret(), second.expose_secret());
        assert!(first.expose_secret().len() >= 32);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(load_or_create_secret(other.path()).unwrap().expose_secret(), first.expose_secret());
    }
}
