//! TLS to PostgreSQL as libpq's clients take it: a database URL's `sslmode`, `sslrootcert`,
//! `sslcert` and `sslkey` (or the `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY`
//! environment variables when the URL names none), for the catalog and every shard, on both pools
//! of a database ([`crate::storage::db`]: the engine-neutral one and the native one of bulk copies). sqlx
//! carries it out, on rustls with the ring provider.
//!
//! sqlx reads these parameters itself; [`prepare_url`] adds what libpq does and sqlx does not,
//! so that a URL means here what it means to `psql`:
//! - no `sslmode` is `prefer`, libpq's default (TLS when the server offers it, nothing
//!   verified), but `disable` for a database on this machine (a loopback host or a Unix socket)
//!   when the URL names no TLS file: its traffic never leaves the machine, and TLS there would
//!   cost every statement and protect nothing;
//! - `sslmode=require` with an `sslrootcert` verifies the server's certificate chain (libpq's
//!   rule: it becomes `verify-ca`);
//! - `sslrootcert=system` trusts the public web roots and needs `verify-full`, its default (as in
//!   libpq 16);
//! - the files named are read when the pool opens: a missing or unreadable file, one without a
//!   certificate or key, or a private key that group or others may read (libpq refuses those too)
//!   is a sentence naming the parameter, at start-up or at registration, instead of a failure at
//!   the first connection;
//! - what sqlx would ignore while the operator relies on it is refused: `sslmode=allow` (sqlx
//!   never upgrades it), `sslpassword` (encrypted keys), `sslcrl` and `sslcrldir` (revocation).
//!
//! [`tls_failure`] turns the driver's TLS failures into sentences that say what to fix.
//!
//! Two differences from libpq remain, both sqlx's:
//! - with an `sslrootcert` file, the public web roots (Mozilla's, built in) stay trusted besides
//!   the file's CAs, because sqlx adds the file to them. So `verify-full` is the mode to rely on:
//!   a certificate from a public CA passes it only when it was issued for the database's own host
//!   name;
//! - `verify-ca` checks the host name too, as `verify-full` does: sqlx 0.8 means to skip it, but
//!   misses the error rustls gives for a wrong name since 0.23.24 (sqlx issue #3793). A test pins
//!   this, so that an upgrade that fixes it is noticed.
//!
//! The files are read again for every new connection, so a rotated CA or client certificate is
//! used without a restart.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::Error;

/// The names sqlx accepts for each TLS parameter (libpq's first); the last one given wins.
const MODE_KEYS: &[&str] = &["sslmode", "ssl-mode"];
const ROOT_KEYS: &[&str] = &["sslrootcert", "ssl-root-cert", "ssl-ca"];
const CERT_KEYS: &[&str] = &["sslcert", "ssl-cert"];
const KEY_KEYS: &[&str] = &["sslkey", "ssl-key"];

/// libpq parameters that sqlx ignores (only logging them, value included) while the operator
/// relies on what they ask for: refused, with what to do instead.
const REFUSED: &[(&str, &str)] = &[
    (
        "sslpassword",
        "encrypted private keys are not supported: decrypt the key (openssl pkey -in key.pem -out plain.pem) and keep \
         it mode 0600",
    ),
    ("sslcrl", "certificate revocation lists are not checked by this gateway: remove sslcrl rather than rely on it"),
    (
        "sslcrldir",
        "certificate revocation lists are not checked by this gateway: remove sslcrldir rather than rely on it",
    ),
];

/// What a PostgreSQL URL asks of TLS, once libpq's rules are applied: what [`tls_failure`] needs
/// to say what went wrong.
#[derive(Debug, Clone)]
pub struct PgTls {
    /// The sslmode in force.
    pub mode: SslMode,
    /// The host name a `verify-full` certificate must carry.
    host: String,
    /// What the server's certificate is checked against, in words.
    roots: String,
    /// Whether a client certificate is given.
    client_cert: bool,
}

/// A PostgreSQL URL ready for sqlx, and what it asks of TLS.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The URL to give the driver (the input itself unless a libpq rule changed its sslmode).
    pub url: String,
    /// Its TLS settings.
    pub tls: PgTls,
}

/// An sslmode this gateway honours (libpq's, but `allow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it, nothing verified (the default).
    Prefer,
    /// TLS, nothing verified.
    Require,
    /// TLS, the server's certificate chain verified.
    VerifyCa,
    /// TLS, the chain and the host name verified.
    VerifyFull,
}

impl SslMode {
    /// The mode as URLs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Applies libpq's TLS rules to the PostgreSQL URL `raw` (see the module) and checks the files it
/// names; `env` reads an environment variable (`PGSSLMODE` and the like, used when the URL names
/// no such parameter). Errors: [`Error::InvalidDatabaseUrl`] for parameters that cannot be
/// honoured, [`Error::Tls`] for files that cannot be used. Neither message contains the URL.
pub(crate) fn prepare_url(raw: &str, env: impl Fn(&str) -> Option<String>) -> Result<Prepared, Error> {
    let invalid = Error::InvalidDatabaseUrl;
    let mut url = url::Url::parse(raw).map_err(|e| invalid(format!("the URL does not parse: {e}")))?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    if let Some((key, why)) = REFUSED.iter().find(|(key, _)| pairs.iter().any(|(k, _)| k == key)) {
        return Err(invalid(format!("{key}: {why}")));
    }
    let last = |keys: &[&str]| pairs.iter().rev().find(|(k, _)| keys.contains(&k.as_str())).map(|(_, v)| v.clone());
    let given = |keys: &[&str], var: &str| match last(keys) {
        Some(value) => Some((value, keys[0].to_owned())),
        None => env(var).map(|value| (value, var.to_owned())),
    };
    let host = last(&["host"]).or_else(|| url.host_str().map(str::to_owned)).unwrap_or_default();
    let mode_given = given(MODE_KEYS, "PGSSLMODE");
    let root = given(ROOT_KEYS, "PGSSLROOTCERT");
    let cert = given(CERT_KEYS, "PGSSLCERT");
    let key = given(KEY_KEYS, "PGSSLKEY");

    let system_roots = root.as_ref().is_some_and(|(value, _)| value == "system");
    if system_roots && root.as_ref().is_some_and(|(_, from)| from == "PGSSLROOTCERT") {
        return Err(invalid("PGSSLROOTCERT=system is not supported: write sslrootcert=system in the URL".to_owned()));
    }
    let given_mode = mode_given.as_ref().map(|(text, from)| parse_mode(text, from)).transpose()?;
    let names_tls_files = root.is_some() || cert.is_some() || key.is_some();
    let asked = given_mode.unwrap_or(if system_roots {
        SslMode::VerifyFull
    } else if is_loopback(&host) && !names_tls_files {
        SslMode::Disable
    } else {
        SslMode::Prefer
    });
    if system_roots && asked != SslMode::VerifyFull {
        return Err(invalid(format!(
            "sslrootcert=system trusts every public CA, so it needs sslmode=verify-full (libpq refuses it too), not \
             {}: set sslmode=verify-full, or name the CA's certificate file in sslrootcert",
            asked.as_str()
        )));
    }
    if asked == SslMode::VerifyFull && pairs.iter().any(|(k, _)| k == "hostaddr") {
        return Err(invalid(
            "hostaddr replaces the host name the server's certificate is checked against under sslmode=verify-full: \
             give the name in the host instead"
                .to_owned(),
        ));
    }
    // libpq: "if a root CA file exists, the behavior of sslmode=require will be the same as that
    // of verify-ca".
    let mode = if asked == SslMode::Require && root.is_some() { SslMode::VerifyCa } else { asked };

    if mode != SslMode::Disable {
        if let Some((value, from)) = root.as_ref().filter(|_| !system_roots) {
            check_certificates(&read_pem(from, value)?, &describe(from, value))?;
        }
        match (&cert, &key) {
            (Some((cert, cert_from)), Some((key, key_from))) => {
                check_certificates(&read_pem(cert_from, cert)?, &describe(cert_from, cert))?;
                check_private_key(key_from, key)?;
            }
            (None, None) => {}
            _ => {
                return Err(invalid(
                    "sslcert and sslkey go together: give both (the client certificate and its private key) or neither"
                        .to_owned(),
                ));
            }
        }
    }

    // Without a mode the driver assumes `prefer`: any other is said in the URL itself. `system`
    // is no file (the public roots are always trusted, see the module).
    let url = if system_roots || mode != given_mode.unwrap_or(SslMode::Prefer) {
        let kept: Vec<(String, String)> = pairs
            .into_iter()
            .filter(|(k, _)| !(MODE_KEYS.contains(&k.as_str()) || system_roots && ROOT_KEYS.contains(&k.as_str())))
            .collect();
        url.query_pairs_mut().clear().extend_pairs(kept).append_pair("sslmode", mode.as_str());
        url.to_string()
    } else {
        raw.to_owned()
    };
    let roots = match &root {
        None => "the public web roots".to_owned(),
        Some(_) if system_roots => "the public web roots (sslrootcert=system)".to_owned(),
        Some((value, from)) => format!("{} and the public web roots", describe(from, value)),
    };
    Ok(Prepared { url, tls: PgTls { mode, host, roots, client_cert: cert.is_some() } })
}

/// Whether a URL's host is this machine (a loopback name or address, a Unix socket's directory,
/// or none: the driver's default is local), where TLS protects nothing.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.is_empty()
        || host.starts_with('/')
        || host.starts_with("%2F")
        || host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Parses an sslmode, refusing `allow` (sqlx treats it as `disable`).
fn parse_mode(text: &str, from: &str) -> Result<SslMode, Error> {
    let mode = match text {
        "disable" => SslMode::Disable,
        "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        "allow" => {
            return Err(Error::InvalidDatabaseUrl(format!(
                "{from}=allow is not supported (this gateway would never use TLS with it): use verify-full, require \
                 or prefer, or disable"
            )));
        }
        other => {
            return Err(Error::InvalidDatabaseUrl(format!(
                "{from}={other:?} is not an sslmode: use one of disable, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    Ok(mode)
}

/// Whether a parameter's value is PEM itself rather than a file's path (sqlx takes both).
fn is_inline(value: &str) -> bool {
    value.trim_start().starts_with("-----BEGIN")
}

/// A parameter and its file in words, for messages (inline PEM is never quoted).
fn describe(from: &str, value: &str) -> String {
    if is_inline(value) { format!("the inline {from}") } else { format!("{from} {value}") }
}

fn tls_setup(reason: String) -> Error {
    Error::Tls { target: "PostgreSQL".to_owned(), reason }
}

/// The PEM a parameter gives: its file's contents, or the value itself if it is PEM.
fn read_pem(from: &str, value: &str) -> Result<Vec<u8>, Error> {
    if is_inline(value) {
        return Ok(value.as_bytes().to_vec());
    }
    std::fs::read(value).map_err(|e| tls_setup(format!("{from} {value} cannot be read: {e}")))
}

/// Checks that `pem` holds at least one certificate, parsed as the driver will parse it.
fn check_certificates(pem: &[u8], what: &str) -> Result<(), Error> {
    let certificates: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    match certificates {
        Ok(certificates) if !certificates.is_empty() => Ok(()),
        Ok(_) => Err(tls_setup(format!("{what} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"))),
        Err(e) => Err(tls_setup(format!("{what} is not valid PEM: {e}"))),
    }
}

/// Checks a client's private key as libpq does: readable, a PEM private key, and (a file) not
/// readable by group or others; a key owned by root may be group-readable (mode 0640).
fn check_private_key(from: &str, value: &str) -> Result<(), Error> {
    let what = describe(from, value);
    if !is_inline(value) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(Path::new(value)).map_err(|e| tls_setup(format!("{what} cannot be read: {e}")))?;
        let mode = meta.mode() & 0o777;
        let forbidden = if meta.uid() == 0 { 0o037 } else { 0o077 };
        if mode & forbidden != 0 {
            return Err(tls_setup(format!(
                "{what} may be read by group or others (mode {mode:04o}); as libpq does, the gateway refuses such a \
                 private key: chmod 600 it (or 640 if root owns it)"
            )));
        }
    }
    let pem = read_pem(from, value)?;
    match PrivateKeyDer::from_pem_slice(&pem) {
        Ok(_) => Ok(()),
        // The error's text is not quoted: it could carry a piece of the key.
        Err(_) => Err(tls_setup(format!(
            "{what} holds no PEM private key (-----BEGIN PRIVATE KEY-----, or its RSA or EC form)"
        ))),
    }
}

/// What went wrong, in words that say what to fix, if `error` is a failure of TLS to a database
/// whose URL asked for `tls`: the server offers no TLS, its certificate is not trusted or not for
/// the host name, it refused the client's certificate or asked for one, or it accepts only TLS.
/// `None` for any other failure.
pub fn tls_failure(error: &sqlx::Error, tls: &PgTls) -> Option<String> {
    let mode = tls.mode.as_str();
    match error {
        sqlx::Error::Tls(inner) => {
            if let Some(rustls) = inner.downcast_ref::<rustls::Error>() {
                return Some(rustls_failure(rustls, tls));
            }
            let text = inner.to_string();
            if text.contains("does not support TLS") {
                return Some(format!(
                    "the server does not offer TLS, and sslmode={mode} needs it: turn ssl on at the server (ssl = on \
                     with a certificate), or on a network you trust lower sslmode to prefer or disable"
                ));
            }
            Some(format!("the TLS handshake failed: {text}"))
        }
        sqlx::Error::Io(io) => {
            io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()).map(|e| rustls_failure(e, tls))
        }
        sqlx::Error::Database(db) if db.code().as_deref() == Some("28000") => {
            let message = db.message();
            if message.contains("requires a valid client certificate") {
                Some(format!(
                    "the server requires a client certificate ({message}): give sslcert and sslkey, a certificate \
                     signed by a CA the server trusts (its ssl_ca_file) for the user name"
                ))
            } else if message.contains("certificate") {
                Some(format!(
                    "the server refused the client certificate ({message}): its common name must be the user name, \
                     and it must be signed by a CA the server trusts (its ssl_ca_file)"
                ))
            } else if message.contains("no encryption") {
                Some(format!(
                    "the server accepts this connection only over TLS ({message}), and sslmode={mode} did not use \
                     it: set sslmode=verify-full (or require)"
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A rustls failure in words.
fn rustls_failure(error: &rustls::Error, tls: &PgTls) -> String {
    use rustls::{AlertDescription, CertificateError};
    // sqlx 0.8 means to skip the host name under verify-ca, but misses the error rustls gives
    // for it since 0.23.24 (sqlx issue #3793): verify-ca checks the name as verify-full does.
    let checked_by = match tls.mode {
        SslMode::VerifyCa => "sslmode=verify-ca checks it too here, as verify-full does (sqlx issue #3793)",
        _ => "sslmode=verify-full checks it",
    };
    match error {
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => format!(
            "the server's certificate is not valid for the host name {} ({checked_by}): connect by a name the \
             certificate carries, or have it issued for {}",
            tls.host, tls.host
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { presented, .. }) => format!(
            "the server's certificate is not valid for the host name {} ({checked_by}); it names {}: connect by one \
             of those names, or have the certificate issued for {}",
            tls.host,
            presented.iter().map(|name| unquoted(name)).collect::<Vec<_>>().join(", "),
            tls.host
        ),
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "the server's certificate is not signed by a CA this gateway trusts ({}): name the CA that signed it in \
             sslrootcert",
            tls.roots
        ),
        rustls::Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            "the server's certificate has expired: renew it on the server".to_owned()
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
        ) => "the server's certificate is not valid yet: check the clocks of the server and the gateway".to_owned(),
        rustls::Error::InvalidCertificate(other) => {
            format!("the server's certificate was refused ({other:?}), checked against {}", tls.roots)
        }
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::CertificateRequired
            | AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::AccessDenied),
        ) if tls.client_cert => format!(
            "the server refused the client certificate (TLS alert {alert:?}): give in sslcert a certificate signed \
             by a CA the server trusts (its ssl_ca_file)"
        ),
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::CertificateRequired | AlertDescription::HandshakeFailure),
        ) => {
            format!(
                "the server asks for a client certificate (TLS alert {alert:?}): give sslcert and sslkey, signed by a \
                 CA the server trusts"
            )
        }
        other => format!("the TLS handshake failed: {other}"),
    }
}

/// A name as rustls presents it (`DnsName("db.example.com")`), without its wrapping.
fn unquoted(name: &str) -> &str {
    match (name.find('"'), name.rfind('"')) {
        (Some(start), Some(end)) if start < end => &name[start + 1..end],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(url: &str) -> Result<Prepared, Error> {
        prepare_url(url, |_| None)
    }

    fn reason(result: Result<Prepared, Error>) -> String {
        match result {
            Err(Error::InvalidDatabaseUrl(reason) | Error::Tls { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn query_of(prepared: &Prepared) -> Vec<(String, String)> {
        url::Url::parse(&prepared.url).unwrap().query_pairs().into_owned().collect()
    }

    /// A directory with a certificate, a key and files of the wrong kind (PEM framing is all
    /// these checks read; the handshake tests use real certificates).
    struct Files {
        dir: tempfile::TempDir,
    }

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

    impl Files {
        fn new() -> Self {
            use std::os::unix::fs::PermissionsExt;
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("ca.pem"), CERT).unwrap();
            std::fs::write(dir.path().join("client.key"), KEY).unwrap();
            std::fs::set_permissions(dir.path().join("client.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
            std::fs::write(dir.path().join("open.key"), KEY).unwrap();
            std::fs::set_permissions(dir.path().join("open.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
            std::fs::write(dir.path().join("notes.txt"), "not a certificate").unwrap();
            std::fs::write(dir.path().join("cert-as.key"), CERT).unwrap();
            std::fs::set_permissions(dir.path().join("cert-as.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
            Self { dir }
        }

        fn path(&self, name: &str) -> String {
            self.dir.path().join(name).display().to_string()
        }
    }

    #[test]
    fn a_url_without_tls_parameters_is_left_as_it_is_and_prefers_tls() {
        let raw = "postgres://app:s3cret@db.example.com:5432/shard1";
        let prepared = prepare(raw).unwrap();
        assert_eq!(prepared.url, raw);
        assert_eq!(prepared.tls.mode, SslMode::Prefer);
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            let raw = format!("postgres://db.example.com/s?sslmode={mode}");
            let prepared = prepare(&raw).unwrap();
            assert_eq!(prepared.url, raw, "{mode}");
            assert_eq!(prepared.tls.mode.as_str(), mode);
        }
    }

    #[test]
    fn a_database_on_this_machine_is_reached_without_tls_unless_the_url_asks_for_it() {
        for host in ["127.0.0.1", "localhost", "[::1]", "127.0.1.1"] {
            let prepared = prepare(&format!("postgres://u:pw@{host}:5432/s")).unwrap();
            assert_eq!(prepared.tls.mode, SslMode::Disable, "{host}");
            assert_eq!(query_of(&prepared), vec![("sslmode".to_owned(), "disable".to_owned())], "{host}");
            let asked = format!("postgres://u:pw@{host}:5432/s?sslmode=prefer");
            assert_eq!(prepare(&asked).unwrap().url, asked, "{host}: what the URL says is kept");
            let from_env =
                prepare_url(&format!("postgres://{host}/s"), |v| (v == "PGSSLMODE").then(|| "require".into()));
            assert_eq!(from_env.unwrap().tls.mode, SslMode::Require, "{host}");
        }
        let files = Files::new();
        let with_root = prepare(&format!("postgres://127.0.0.1/s?sslrootcert={}", files.path("ca.pem"))).unwrap();
        assert_eq!(with_root.tls.mode, SslMode::Prefer, "a URL that names a TLS file is not taken as plain");
        let socket = prepare("postgres://u@%2Fvar%2Frun%2Fpostgresql/s").unwrap();
        assert_eq!(socket.tls.mode, SslMode::Disable);
        for host in ["db.example.com", "10.0.0.5", "[2001:db8::1]"] {
            assert_eq!(prepare(&format!("postgres://u@{host}/s")).unwrap().tls.mode, SslMode::Prefer, "{host}");
        }
    }

    #[test]
    fn require_with_a_root_certificate_verifies_the_chain_as_libpq_does() {
        let files = Files::new();
        let raw =
            format!("postgres://u:pw@db/s?sslmode=require&sslrootcert={}&application_name=x", files.path("ca.pem"));
        let prepared = prepare(&raw).unwrap();
        assert_eq!(prepared.tls.mode, SslMode::VerifyCa);
        let query = query_of(&prepared);
        assert!(query.contains(&("sslmode".to_owned(), "verify-ca".to_owned())), "{query:?}");
        assert!(query.contains(&("application_name".to_owned(), "x".to_owned())), "{query:?}");
        assert_eq!(query.iter().filter(|(k, _)| k == "sslmode").count(), 1);
        assert!(prepared.url.starts_with("postgres://u:pw@db/s?"), "{}", prepared.url);
    }

    #[test]
    fn the_environment_applies_when_the_url_names_nothing() {
        let files = Files::new();
        let ca = files.path("ca.pem");
        let env = |var: &str| match var {
            "PGSSLMODE" => Some("require".to_owned()),
            "PGSSLROOTCERT" => Some(ca.clone()),
            _ => None,
        };
        let prepared = prepare_url("postgres://db/s", env).unwrap();
        assert_eq!(prepared.tls.mode, SslMode::VerifyCa);
        let prepared = prepare_url("postgres://db/s?sslmode=verify-full", env).unwrap();
        assert_eq!(prepared.tls.mode, SslMode::VerifyFull, "the URL wins over the environment");
        let bad = |var: &str| (var == "PGSSLMODE").then(|| "sometimes".to_owned());
        assert!(reason(prepare_url("postgres://db/s", bad)).contains("PGSSLMODE=\"sometimes\""));
    }

    #[test]
    fn system_roots_need_verify_full_which_is_their_default() {
        let prepared = prepare("postgres://db.example.com/s?sslrootcert=system").unwrap();
        assert_eq!(prepared.tls.mode, SslMode::VerifyFull);
        assert_eq!(query_of(&prepared), vec![("sslmode".to_owned(), "verify-full".to_owned())]);
        let prepared = prepare("postgres://db.example.com/s?sslmode=verify-full&sslrootcert=system").unwrap();
        assert_eq!(prepared.tls.mode, SslMode::VerifyFull);
        for weak in ["require", "verify-ca", "prefer", "disable"] {
            let refused = reason(prepare(&format!("postgres://db/s?sslmode={weak}&sslrootcert=system")));
            assert!(refused.contains("needs sslmode=verify-full"), "{weak}: {refused}");
        }
    }

    #[test]
    fn modes_and_parameters_that_cannot_be_honoured_are_refused_without_quoting_the_url() {
        for (query, expected) in [
            ("sslmode=allow", "sslmode=allow is not supported"),
            ("sslmode=verify_full", "is not an sslmode"),
            ("sslmode=require&sslpassword=hunter2", "sslpassword: encrypted private keys"),
            ("sslcrl=/etc/crl.pem", "sslcrl: certificate revocation lists"),
            ("sslmode=verify-full&sslcert=/etc/c.pem", "sslcert and sslkey go together"),
            ("sslmode=verify-full&hostaddr=10.0.0.5", "hostaddr replaces the host name"),
        ] {
            let refused = reason(prepare(&format!("postgres://u:pw@db/s?{query}")));
            assert!(refused.contains(expected), "{query}: {refused}");
            assert!(!refused.contains("pw@") && !refused.contains("hunter2"), "{refused}");
        }
    }

    #[test]
    fn files_that_cannot_be_used_are_named_with_what_is_wrong() {
        let files = Files::new();
        let missing = files.path("missing.pem");
        let refused = reason(prepare(&format!("postgres://db/s?sslmode=verify-full&sslrootcert={missing}")));
        assert!(refused.contains(&format!("sslrootcert {missing} cannot be read")), "{refused}");
        let notes = files.path("notes.txt");
        let refused = reason(prepare(&format!("postgres://db/s?sslmode=verify-full&sslrootcert={notes}")));
        assert!(refused.contains("holds no PEM certificate"), "{refused}");
        let (ca, open) = (files.path("ca.pem"), files.path("open.key"));
        let refused = reason(prepare(&format!("postgres://db/s?sslmode=verify-full&sslcert={ca}&sslkey={open}")));
        assert!(refused.contains("may be read by group or others (mode 0644)"), "{refused}");
        let not_a_key = files.path("cert-as.key");
        let refused = reason(prepare(&format!("postgres://db/s?sslmode=verify-full&sslcert={ca}&sslkey={not_a_key}")));
        assert!(refused.contains("holds no PEM private key"), "{refused}");
        let key = files.path("client.key");
        let prepared =
            prepare(&format!("postgres://db/s?sslmode=verify-full&sslrootcert={ca}&sslcert={ca}&sslkey={key}"));
        assert!(prepared.unwrap().tls.client_cert);
        // Under disable nothing is read, as with libpq.
        assert!(prepare(&format!("postgres://db/s?sslmode=disable&sslrootcert={missing}")).is_ok());
    }
}
