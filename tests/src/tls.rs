//! [`TestCa`]: a certificate authority of a test's own, which issues server and client
//! certificates for loopback names, so TLS tests run against real TLS servers the test starts
//! (PostgreSQL, Redis, the gateway's own listeners) with no certificate from the machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use shardgate_api::config::ListenerTls;

/// A certificate authority that lives as long as the test: its certificate is written to a file
/// a client can name as its root (`sslrootcert`, a Redis CA file, an HTTPS client's root).
#[derive(Debug)]
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    /// The CA's certificate, PEM.
    pub cert_pem: String,
    /// Where the CA's certificate is written.
    pub cert_path: PathBuf,
    dir: tempfile::TempDir,
}

/// A certificate and its private key, PEM, and the files they are written to.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key (PKCS#8), PEM.
    pub key_pem: String,
    /// The certificate's file.
    pub cert_path: PathBuf,
    /// The key's file (mode 0600).
    pub key_path: PathBuf,
}

impl TestCa {
    /// A new CA named `name`, its certificate written in a new temporary directory.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("a CA key");
        let cert = params.self_signed(&key).expect("a self-signed CA certificate");
        let dir = tempfile::Builder::new().prefix("sg-ca-").tempdir().expect("temp dir");
        let cert_path = dir.path().join("ca.crt");
        std::fs::write(&cert_path, cert.pem()).expect("the CA certificate is written");
        let issuer = Issuer::new(params, key);
        Self { issuer, cert_pem: cert.pem(), cert_path, dir }
    }

    /// The directory the CA writes its files to (removed with it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A certificate for `names` (DNS names, or IP addresses such as `127.0.0.1`) with common
    /// name `names[0]`, signed by this CA, written as `<file>.crt` and `<file>.key` in the CA's
    /// directory (a second call with the same `file` replaces them, as a rotation would).
    pub fn issue(&self, file: &str, names: &[&str]) -> Issued {
        self.issue_in(self.dir.path(), file, names)
    }

    /// [`TestCa::issue`], written in `dir`.
    pub fn issue_in(&self, dir: &Path, file: &str, names: &[&str]) -> Issued {
        let owned: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(owned).expect("certificate parameters");
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("a certificate signed by the CA");
        let issued = Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_path: dir.join(format!("{file}.crt")),
            key_path: dir.join(format!("{file}.key")),
        };
        write_private(&issued.cert_path, &issued.cert_pem, 0o644);
        write_private(&issued.key_path, &issued.key_pem, 0o600);
        issued
    }

    /// An HTTPS client that trusts this CA alone, follows no redirect, gives up after 30 s, and
    /// records each connection's peer certificate (`tls_info`).
    pub fn https_client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(self.cert_pem.as_bytes()).unwrap())
            .tls_built_in_root_certs(false)
            .tls_info(true)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
    }
}

impl Issued {
    /// A listener's TLS table (`tls`, `admin.tls`, `valet.tls`) for these files.
    pub fn listener_tls(&self) -> ListenerTls {
        ListenerTls { cert_file: self.cert_path.clone(), key_file: self.key_path.clone() }
    }
}

/// Writes `contents` to `path` through a temporary file and a rename (a reader never sees half a
/// file), with `mode`.
fn write_private(path: &Path, contents: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let partial = path.with_extension("partial");
    std::fs::write(&partial, contents).expect("the file is written");
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(mode)).expect("its mode is set");
    std::fs::rename(&partial, path).expect("the file is renamed into place");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_names_its_hosts_and_its_key_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let ca = TestCa::new("shardgate test CA");
        let issued = ca.issue("server", &["localhost", "127.0.0.1"]);
        assert!(ca.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"), "{}", ca.cert_pem);
        assert!(issued.key_pem.contains("PRIVATE KEY"), "{}", issued.key_pem);
        let mode = std::fs::metadata(&issued.key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = ca.issue("server", &["localhost"]);
        assert_ne!(again.cert_pem, issued.cert_pem, "a second issue replaces the first");
        assert_eq!(std::fs::read_to_string(&issued.cert_path).unwrap(), again.cert_pem);
    }
}
