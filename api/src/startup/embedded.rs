//! The embedded default's data directory: its generated HS256 secret, kept there and reused on
//! restart, and the lock that keeps a second `shardgate serve` off it.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use secrecy::SecretString;
use shardgate_gatekeeper::IssuerConfig;

/// The `iss` of tokens signed with the embedded secret.
pub const EMBEDDED_ISSUER: &str = "shardgate";

const SECRET_FILE: &str = "jwt-secret";

/// The lock file of the data directory (it holds the pid of the process holding the lock).
const LOCK_FILE: &str = "lock";

/// Reads the data directory's secret, for `shardgate token`: never creates one (a secret made
/// here would sign tokens no server accepts). Without one, the error says where it looked and
/// how to point the command at the server's data directory.
pub fn load_secret(data_dir: &Path) -> anyhow::Result<SecretString> {
    let path = data_dir.join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Ok(SecretString::from(text.trim().to_owned())),
        Ok(_) => Err(anyhow::anyhow!("{} is empty: start `shardgate serve` once to generate it", shown(&path))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(anyhow::anyhow!(
            "no token secret at {}: `shardgate token` signs with the secret `shardgate serve` generated in its \
             data directory, and creates none. Run it from the directory the server was started in, or pass the \
             server's data directory: `shardgate token --data-dir <dir> ...` (or SHARDGATE_DATA_DIR)",
            shown(&path)
        )),
        Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", shown(&path))),
    }
}

/// `path` as the user gave it, and where that is when it is relative.
fn shown(path: &Path) -> String {
    match std::path::absolute(path) {
        Ok(absolute) if absolute != path => format!("{} ({})", path.display(), absolute.display()),
        _ => path.display().to_string(),
    }
}

/// An exclusive lock on an embedded data directory, held while `shardgate serve` runs on it:
/// two servers on one directory would each cache what the other overwrites. The lock is the
/// operating system's (`flock` on `<data_dir>/lock`), so it goes with its process, however that
/// ends (`kill -9` too): no stale lock is left behind. The file names the holder's pid.
#[derive(Debug)]
pub struct DataDirLock {
    /// Kept open: closing it releases the lock.
    _file: std::fs::File,
}

impl DataDirLock {
    /// Takes the lock of `data_dir` (created if missing), or fails at once naming the process
    /// that holds it.
    pub fn acquire(data_dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", shown(data_dir)))?;
        let path = data_dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", shown(&path)))?;
        if let Err(e) = try_lock_exclusive(&file) {
            if e.kind() != std::io::ErrorKind::WouldBlock {
                anyhow::bail!("cannot lock {}: {e}", shown(&path));
            }
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            let holder = if holder.is_empty() { "another process".to_owned() } else { holder.to_owned() };
            anyhow::bail!(
                "the data directory {} is in use by another shardgate ({holder}, which holds the lock on {}): two \
                 servers on one directory would serve each other's stale data. Stop that one first, or give this one \
                 a directory of its own (--data-dir)",
                shown(data_dir),
                path.display()
            );
        }
        file.set_len(0)?;
        writeln!(file, "pid {}", std::process::id())?;
        file.sync_all()?;
        Ok(Self { _file: file })
    }
}

#[cfg(unix)]
fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(std::io::Error::from)
}

#[cfg(not(unix))]
fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<()> {
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::WouldBlock => std::io::ErrorKind::WouldBlock.into(),
        std::fs::TryLockError::Error(e) => e,
    })
}

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
    // Its secret is generated by this gateway for itself and held by no other service: only
    // `shardgate token` mints with it, so no token meant for another audience can carry its
    // signature, and the tokens minted before audiences were checked keep working.
    IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256(EMBEDDED_ISSUER, secret) }
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

    #[test]
    fn reading_the_secret_never_creates_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_secret(dir.path()).unwrap_err().to_string();
        assert!(err.contains("--data-dir") && err.contains(&dir.path().display().to_string()), "{err}");
        assert!(!dir.path().join(SECRET_FILE).exists(), "no secret was made");
        let made = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(load_secret(dir.path()).unwrap().expose_secret(), made.expose_secret());
    }

    #[test]
    fn a_locked_data_directory_names_its_holder_and_frees_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let lock = DataDirLock::acquire(dir.path()).unwrap();
        let err = DataDirLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(err.contains("in use"), "{err}");
        drop(lock);
        DataDirLock::acquire(dir.path()).expect("free again once its holder let go");
    }
}
