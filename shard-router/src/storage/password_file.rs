//! Database passwords kept in files (a mounted Kubernetes Secret, a file a vault agent renews)
//! rather than in URLs: `storage.shards[].password_file`, `storage.catalog_password_file`, and
//! (through the cache crate) `cache.redis_password_file` and `rate_limits.redis_password_file`.
//! A file's content (without its trailing line break) is the password of every connection
//! opened after it was read; the instance reads the files again on each catalog poll and,
//! when one changed, reopens the pools it feeds (the old ones drain), so a rotated secret needs
//! no restart.
//!
//! It knows files and URLs only: which pools a file feeds is the pools' business.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use crate::error::Error;
use crate::storage::hosts::url_parts;

/// A password file: where it is, and what it held when last read.
#[derive(Debug)]
pub struct PasswordFile {
    path: PathBuf,
    last: parking_lot::Mutex<Option<SecretString>>,
}

impl PasswordFile {
    /// The file at `path`, not read yet.
    pub fn new(path: PathBuf) -> Self {
        Self { path, last: parking_lot::Mutex::new(None) }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `url` with the password the file holds now in place of the URL's own (remembered as the
    /// one last read). [`Error::InvalidDatabaseUrl`] if the file cannot be read or is empty, or
    /// `url` cannot carry a password (a SQLite file).
    pub fn apply(&self, url: &SecretString) -> Result<SecretString, Error> {
        let password = self.read()?;
        let applied = with_password(url, &password, &self.path)?;
        *self.last.lock() = Some(password);
        Ok(applied)
    }

    /// Whether the file holds another password than when last read (an unreadable file has
    /// not changed: the pools keep what they have, and the next poll tries again).
    pub fn changed(&self) -> bool {
        match self.read() {
            Ok(now) => self.last.lock().as_ref().is_none_or(|last| last.expose_secret() != now.expose_secret()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a password file; connections keep the password last read");
                false
            }
        }
    }

    fn read(&self) -> Result<SecretString, Error> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| {
            Error::InvalidDatabaseUrl(format!("cannot read the password file {}: {e}", self.path.display()))
        })?;
        let password = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
        if password.is_empty() {
            return Err(Error::InvalidDatabaseUrl(format!("the password file {} is empty", self.path.display())));
        }
        Ok(SecretString::from(password.to_owned()))
    }
}

/// `url` with `password` as its password (percent-encoded as a URL's user information must be).
fn with_password(url: &SecretString, password: &SecretString, file: &Path) -> Result<SecretString, Error> {
    // A URL that names several hosts (`pg-a:5432,pg-b:5432`, `redis+sentinel://s1,s2/...`) does
    // not parse as one: the password is set with one stand-in host, and the hosts put back.
    let raw = url.expose_secret();
    if let Some(hosts) = url_parts(raw).map(|parts| parts.hosts).filter(|hosts| hosts.contains(',')) {
        const STAND_IN: &str = "several-hosts.invalid";
        let single = SecretString::from(raw.replacen(hosts, STAND_IN, 1));
        let applied = with_password(&single, password, file)?;
        return Ok(SecretString::from(applied.expose_secret().replacen(STAND_IN, hosts, 1)));
    }
    let mut parsed = url::Url::parse(url.expose_secret()).map_err(|_| {
        Error::InvalidDatabaseUrl(format!("a URL with a password file ({}) must parse", file.display()))
    })?;
    if parsed.scheme().starts_with("sqlite") {
        return Err(Error::InvalidDatabaseUrl(format!(
            "a password file ({}) is for a URL with a host (postgres://, redis://), not a SQLite file",
            file.display()
        )));
    }
    parsed.set_password(Some(password.expose_secret())).map_err(|()| {
        Error::InvalidDatabaseUrl(format!("the URL given with the password file {} takes no password", file.display()))
    })?;
    Ok(SecretString::from(String::from(parsed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_content_replaces_the_urls_password_and_a_change_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("password");
        std::fs::write(&path, "p@ss word/1\n").unwrap();
        let file = PasswordFile::new(path.clone());
        assert!(file.changed(), "never read: a change");
        let url = SecretString::from("postgres://app:old@db:5432/s?sslmode=require".to_owned());
        let applied = file.apply(&url).unwrap();
        assert_eq!(applied.expose_secret(), "postgres://app:p%40ss%20word%2F1@db:5432/s?sslmode=require");
        assert!(!file.changed());
        std::fs::write(&path, "second\r\n").unwrap();
        assert!(file.changed());
        let applied = file.apply(&SecretString::from("postgres://app@db/s".to_owned())).unwrap();
        assert_eq!(applied.expose_secret(), "postgres://app:second@db/s");
        std::fs::remove_file(&path).unwrap();
        assert!(!file.changed(), "an unreadable file keeps the last password");
        assert!(file.apply(&url).is_err());
        std::fs::write(&path, "x").unwrap();
        assert!(file.apply(&SecretString::from("sqlite:///tmp/s.db".to_owned())).is_err());
    }

    #[test]
    fn a_url_with_several_hosts_gets_the_password_and_keeps_its_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("password");
        std::fs::write(&path, "n3w/pw\n").unwrap();
        let file = PasswordFile::new(path);
        for (given, expected) in [
            (
                "postgres://app:old@pg-a:5432,pg-b:5433/s?target_session_attrs=read-write",
                "postgres://app:n3w%2Fpw@pg-a:5432,pg-b:5433/s?target_session_attrs=read-write",
            ),
            ("redis+sentinel://s1:26379,s2:26379/main", "redis+sentinel://:n3w%2Fpw@s1:26379,s2:26379/main"),
        ] {
            assert_eq!(file.apply(&SecretString::from(given.to_owned())).unwrap().expose_secret(), expected);
        }
    }
}
