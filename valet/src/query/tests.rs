use super::*;
use crate::{GrantRequest, NOT_BEFORE_SKEW_SECS};

const NOW: u64 = 1500;
const GRANT_ID: &str = "00112233445566778899aabbccddeeff";

fn key_id(id: &str) -> KeyId {
    KeyId::parse(id).unwrap()
}

fn key() -> SigningKey {
    SigningKey::from_parts(key_id("k1"), [7; 32])
}

fn all_constraints() -> Constraints {
    Constraints {
        content_type: Some("text/plain; charset=utf-8".into()),
        max_size: Some(1024),
        content_disposition: Some("attachment; filename=\"a b.txt\"".into()),
        single_use: true,
    }
}

fn grant(permission: Permission, tenant: &str, path: &str, constraints: Constraints) -> Grant {
    let request = GrantRequest {
        permission,
        tenant: tenant.into(),
        path: path.into(),
        not_before: 1000,
        expires_at: 2000,
        grant_id: GrantId::parse(GRANT_ID).unwrap(),
        constraints,
    };
    Grant::new(request, &key()).unwrap()
}

/// A read grant on `acme` / `docs/a%2Fb.txt` with every constraint set, and its query.
fn signed() -> (Grant, String) {
    let grant = grant(Permission::Read, "acme", "docs/a%2Fb.txt", all_constraints());
    let query = grant.to_query(&key());
    (grant, query)
}

/// Parses and verifies with the test key at [`NOW`].
fn check(method: &str, tenant: &str, path: &str, query: &str) -> Result<Grant, ValetError> {
    UnverifiedGrant::parse(method, tenant, path, query)?.verify(&key(), NOW)
}

/// Asserts that a `GET` of the blob of [`signed`] with `query` is refused as malformed.
#[track_caller]
fn assert_malformed(query: &str, context: &str) {
    let outcome = check("GET", "acme", "docs/a%2Fb.txt", query).map_err(|e| e.code());
    assert_eq!(outcome, Err("valet_malformed"), "{context}");
}

/// `query` with parameter `name`'s raw value replaced (`Some`) or the parameter removed (`None`).
fn with_param(query: &str, name: &str, value: Option<&str>) -> String {
    let mut found = false;
    let pairs: Vec<String> = query
        .split('&')
        .filter_map(|pair| {
            let (n, _) = pair.split_once('=').unwrap();
            if n != name {
                return Some(pair.to_owned());
            }
            found = true;
            value.map(|value| format!("{n}={value}"))
        })
        .collect();
    assert!(found, "{name} not in {query}");
    pairs.join("&")
}

fn param<'q>(query: &'q str, name: &str) -> &'q str {
    query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')).unwrap()
}

#[test]
fn golden_canonical_string_and_signature() {
    // The signature was computed independently (Python's hmac module) over the literal below.
    let key = SigningKey::from_parts(key_id("k1"), std::array::from_fn(|i| i as u8));
    let request = GrantRequest {
        permission: Permission::Write,
        tenant: "acme".into(),
        path: "reports/2024%2Fq1.pdf".into(),
        not_before: 1_700_000_000,
        expires_at: 1_700_000_600,
        grant_id: GrantId::parse(GRANT_ID).unwrap(),
        constraints: Constraints {
            content_type: Some("application/pdf; charset=binary".into()),
            max_size: Some(1_048_576),
            content_disposition: None,
            single_use: true,
        },
    };
    let grant = Grant::new(request, &key).unwrap();
    assert_eq!(
        grant.canonical(),
        "shardgate-valet\nv=1\nperm=write\ntenant=acme\npath=reports/2024%2Fq1.pdf\nnbf=1700000000\n\
         exp=1700000600\nkid=k1\ngrant=00112233445566778899aabbccddeeff\nct=application/pdf; charset=binary\n\
         max=1048576\ncd\nonce=1\n"
    );
    assert_eq!(
        grant.to_query(&key),
        "sg-v=1&sg-perm=write&sg-nbf=1700000000&sg-exp=1700000600&sg-kid=k1\
         &sg-grant=00112233445566778899aabbccddeeff&sg-ct=application%2Fpdf%3B%20charset%3Dbinary\
         &sg-max=1048576&sg-once=1&sg-sig=iI2Asn8fsB-GFCNQTt6hxlbVGCi7AMydeBVcfprno40"
    );
}

#[test]
fn round_trip_for_every_method() {
    let (read, query) = signed();
    assert_eq!(check("GET", "acme", "docs/a%2Fb.txt", &query), Ok(read.clone()));
    assert_eq!(check("HEAD", "acme", "docs/a%2Fb.txt", &query), Ok(read));

    let write = grant(Permission::Write, "acme", "up/load.bin", Constraints::default());
    let query = write.to_query(&key());
    assert_eq!(query.matches("sg-").count(), 7, "absent constraints leave no parameter: {query}");
    let verified = check("PUT", "acme", "up/load.bin", &query).unwrap();
    assert_eq!(verified, write);
    assert_eq!(verified.version(), 1);
    assert_eq!(verified.key_id().as_str(), "k1");
    assert_eq!(verified.grant_id().as_str(), GRANT_ID);
}

#[test]
fn every_value_is_percent_encoded() {
    let (_, query) = signed();
    assert_eq!(param(&query, "sg-cd"), "attachment%3B%20filename%3D%22a%20b.txt%22");
    assert_eq!(param(&query, "sg-ct"), "text%2Fplain%3B%20charset%3Dutf-8");
    assert!(!query.contains(' ') && !query.contains('"') && !query.contains(';'), "{query}");
}

#[test]
fn signed_values_are_compared_decoded() {
    // Another spelling of the same value carries the same signed content.
    let (grant, query) = signed();
    let respelled = with_param(&query, "sg-ct", Some("text/plain%3b%20charset=utf-8"));
    let respelled = with_param(&respelled, "sg-max", Some("%31024"));
    assert_eq!(check("GET", "acme", "docs/a%2Fb.txt", &respelled), Ok(grant));
}

#[test]
fn tampering_with_any_query_value_fails() {
    let (_, query) = signed();
    let sig = param(&query, "sg-sig");
    let flipped = format!("{}{}", if sig.starts_with('A') { 'B' } else { 'A' }, &sig[1..]);
    let other_grant = "ffeeddccbbaa99887766554433221100";
    let cases: &[(&str, Option<&str>, ValetError)] = &[
        ("sg-v", Some("2"), ValetError::Malformed("unsupported sg-v")),
        ("sg-perm", Some("write"), ValetError::WrongMethod),
        ("sg-nbf", Some("999"), ValetError::BadSignature),
        ("sg-nbf", Some("1001"), ValetError::BadSignature),
        ("sg-exp", Some("2001"), ValetError::BadSignature),
        ("sg-exp", Some("1999"), ValetError::BadSignature),
        ("sg-kid", Some("k2"), ValetError::BadSignature),
        ("sg-grant", Some(other_grant), ValetError::BadSignature),
        ("sg-ct", Some("text%2Fhtml"), ValetError::BadSignature),
        ("sg-ct", None, ValetError::BadSignature),
        ("sg-max", Some("1025"), ValetError::BadSignature),
        ("sg-max", None, ValetError::BadSignature),
        ("sg-cd", Some("inline"), ValetError::BadSignature),
        ("sg-cd", None, ValetError::BadSignature),
        ("sg-once", None, ValetError::BadSignature),
        ("sg-sig", Some(&flipped), ValetError::BadSignature),
    ];
    for (name, value, expected) in cases {
        let tampered = with_param(&query, name, *value);
        assert_eq!(check("GET", "acme", "docs/a%2Fb.txt", &tampered), Err(*expected), "{name} -> {value:?}");
    }
    // Granting write by editing sg-perm, then using PUT.
    let tampered = with_param(&query, "sg-perm", Some("write"));
    assert_eq!(check("PUT", "acme", "docs/a%2Fb.txt", &tampered), Err(ValetError::BadSignature));
}

#[test]
fn adding_an_absent_constraint_fails() {
    let bare = grant(Permission::Write, "acme", "up/load.bin", Constraints::default());
    let query = bare.to_query(&key());
    for extra in ["sg-ct=text%2Fplain", "sg-max=10", "sg-cd=inline", "sg-once=1"] {
        let tampered = format!("{extra}&{query}");
        assert_eq!(check("PUT", "acme", "up/load.bin", &tampered), Err(ValetError::BadSignature), "{extra}");
    }
}

#[test]
fn the_method_is_bound() {
    let (_, query) = signed();
    for method in ["PUT", "POST", "DELETE", "PATCH", "get", "OPTIONS"] {
        assert_eq!(check(method, "acme", "docs/a%2Fb.txt", &query), Err(ValetError::WrongMethod), "{method}");
    }
    let write = grant(Permission::Write, "acme", "up/load.bin", Constraints::default()).to_query(&key());
    for method in ["GET", "HEAD", "DELETE"] {
        assert_eq!(check(method, "acme", "up/load.bin", &write), Err(ValetError::WrongMethod), "{method}");
    }
}

#[test]
fn the_tenant_is_bound() {
    let (_, query) = signed();
    assert_eq!(check("GET", "globex", "docs/a%2Fb.txt", &query), Err(ValetError::BadSignature));
    assert_eq!(check("GET", "acme-2", "docs/a%2Fb.txt", &query), Err(ValetError::BadSignature));
    assert_eq!(check("GET", "ACME", "docs/a%2Fb.txt", &query).map_err(|e| e.code()), Err("valet_malformed"));
    assert_eq!(check("GET", "acme%0A", "docs/a%2Fb.txt", &query).map_err(|e| e.code()), Err("valet_malformed"));
}

#[test]
fn the_raw_path_is_bound() {
    let (_, query) = signed();
    // An encoded control character is a valid raw path (the canonical string holds it encoded);
    // whether it names a valid blob is the caller's question.
    let bad_signature = [
        "docs/a/b.txt",
        "docs/a%2fb.txt",
        "docs/a%2Fb.txt.bak",
        "docs/a%2Fc.txt",
        "docs%2Fa%2Fb.txt",
        "docs/a%2Fb.txt%0A",
        "other.txt",
    ];
    for path in bad_signature {
        assert_eq!(check("GET", "acme", path, &query), Err(ValetError::BadSignature), "{path}");
    }
    let malformed = [
        "docs/../docs/a%2Fb.txt",
        "docs/%2e%2e/docs/a%2Fb.txt",
        "docs/%2E%2E/docs/a%2Fb.txt",
        "docs/./a%2Fb.txt",
        "/docs/a%2Fb.txt",
        "docs/a%2Fb.txt/",
        "docs//a%2Fb.txt",
        "docs/a%2Fb.txt\n",
        "docs/a%2Fb.txt?x",
        "docs/a%2Fb.txt%",
        "",
    ];
    for path in malformed {
        assert_eq!(check("GET", "acme", path, &query).map_err(|e| e.code()), Err("valet_malformed"), "{path:?}");
    }

    // `a/b` and `a%2Fb` never collide, in either direction.
    let slash = grant(Permission::Read, "acme", "a/b", Constraints::default()).to_query(&key());
    assert_eq!(check("GET", "acme", "a%2Fb", &slash), Err(ValetError::BadSignature));
    assert_eq!(check("GET", "acme", "a/b", &slash).map(|g| g.path().to_owned()), Ok("a/b".to_owned()));
}

#[test]
fn another_tenants_path_fails() {
    // A URL for acme's `shared/report.pdf` does not open globex's blob with the same path, nor
    // another blob of acme's.
    let acme = grant(Permission::Read, "acme", "shared/report.pdf", Constraints::default()).to_query(&key());
    assert_eq!(check("GET", "globex", "shared/report.pdf", &acme), Err(ValetError::BadSignature));
    assert_eq!(check("GET", "acme", "shared/secret.pdf", &acme), Err(ValetError::BadSignature));
    // Nor can globex's signature be moved onto acme's URL.
    let globex = grant(Permission::Read, "globex", "shared/report.pdf", Constraints::default()).to_query(&key());
    let spliced = with_param(&acme, "sg-sig", Some(param(&globex, "sg-sig")));
    assert_eq!(check("GET", "acme", "shared/report.pdf", &spliced), Err(ValetError::BadSignature));
}

#[test]
fn repeated_and_unknown_parameters_are_refused() {
    let (_, query) = signed();
    let exp = param(&query, "sg-exp");
    let sig = param(&query, "sg-sig");
    let extras = [
        format!("sg-exp={exp}"),
        format!("sg%2Dexp={exp}"),
        format!("sg-sig={sig}"),
        "sg-once=1".to_owned(),
        "sg-foo=1".to_owned(),
        "SG-EXP=3000".to_owned(),
        "Sg-v=1".to_owned(),
        "sg-".to_owned(),
    ];
    for extra in extras {
        for tampered in [format!("{query}&{extra}"), format!("{extra}&{query}")] {
            assert_malformed(&tampered, &tampered);
        }
    }
}

#[test]
fn other_parameters_are_ignored() {
    let (grant, query) = signed();
    for tampered in [
        format!("x=1&{query}&x=2"),
        format!("{query}&utm_source=mail&download"),
        format!("&{query}&&"),
        format!("{query}&%zz=%zz"),
        format!("{query}&response-content-type=text%2Fhtml"),
    ] {
        assert_eq!(check("GET", "acme", "docs/a%2Fb.txt", &tampered), Ok(grant.clone()), "{tampered}");
    }
}

#[test]
fn missing_required_parameters_are_refused() {
    let (_, query) = signed();
    for name in ["sg-v", "sg-perm", "sg-nbf", "sg-exp", "sg-kid", "sg-grant", "sg-sig"] {
        assert_malformed(&with_param(&query, name, None), name);
    }
    assert_malformed("", "no query");
}

#[test]
fn badly_written_values_are_refused() {
    let (_, query) = signed();
    let cases = [
        ("sg-nbf", "abc"),
        ("sg-nbf", "+1000"),
        ("sg-nbf", "01000"),
        ("sg-nbf", "1000.0"),
        ("sg-nbf", "3000"),
        ("sg-exp", ""),
        ("sg-exp", "-2000"),
        ("sg-exp", "18446744073709551616"),
        ("sg-max", "1e3"),
        ("sg-max", "-1"),
        ("sg-once", "0"),
        ("sg-once", "true"),
        ("sg-once", ""),
        ("sg-perm", "delete"),
        ("sg-perm", "READ"),
        ("sg-v", "01"),
        ("sg-kid", "K1"),
        ("sg-kid", "k1%0A"),
        ("sg-grant", "0011"),
        ("sg-ct", "text%2Fplain%0Amax%3D1"),
        ("sg-ct", "text%2Fplain%0D%0AX-Evil%3A%201"),
        ("sg-ct", ""),
        ("sg-cd", "inline%00"),
        ("sg-cd", "%zz"),
        ("sg-cd", "%C3"),
        ("sg-sig", "not-base64!"),
        ("sg-sig", "AAAA"),
        ("sg-sig", ""),
    ];
    for (name, value) in cases {
        assert_malformed(&with_param(&query, name, Some(value)), &format!("{name}={value}"));
    }
}

#[test]
fn validity_is_half_open_with_no_grace() {
    let (grant, query) = signed();
    let unverified = UnverifiedGrant::parse("GET", "acme", "docs/a%2Fb.txt", &query).unwrap();
    let at = |now| unverified.verify(&key(), now);
    assert_eq!(at(grant.not_before() - 1), Err(ValetError::NotYetValid));
    assert_eq!(at(0), Err(ValetError::NotYetValid));
    assert_eq!(at(grant.not_before()), Ok(grant.clone()));
    assert_eq!(at(grant.expires_at() - 1), Ok(grant.clone()));
    assert_eq!(at(grant.expires_at()), Err(ValetError::Expired));
    assert_eq!(at(u64::MAX), Err(ValetError::Expired));
}

#[test]
fn the_signature_is_checked_before_the_clock() {
    let (_, query) = signed();
    let tampered = with_param(&query, "sg-exp", Some("1200"));
    let unverified = UnverifiedGrant::parse("GET", "acme", "docs/a%2Fb.txt", &tampered).unwrap();
    assert_eq!(unverified.verify(&key(), 5000), Err(ValetError::BadSignature));
    assert_eq!(unverified.verify(&key(), 0), Err(ValetError::BadSignature));
}

#[test]
fn not_before_in_the_past_covers_a_slow_clock() {
    let issued_at = 1_700_000_000;
    let request = GrantRequest {
        permission: Permission::Write,
        tenant: "acme".into(),
        path: "up/load.bin".into(),
        not_before: issued_at - NOT_BEFORE_SKEW_SECS,
        expires_at: issued_at + 600,
        grant_id: GrantId::generate(),
        constraints: Constraints::default(),
    };
    let grant = Grant::new(request, &key()).unwrap();
    let unverified = UnverifiedGrant::parse("PUT", "acme", "up/load.bin", &grant.to_query(&key())).unwrap();
    // The verifier's clock is one minute behind the issuer's.
    assert_eq!(unverified.verify(&key(), issued_at - 60), Ok(grant));
    assert_eq!(unverified.verify(&key(), issued_at - NOT_BEFORE_SKEW_SECS - 1), Err(ValetError::NotYetValid));
}

#[test]
fn only_the_signing_key_verifies() {
    let (_, query) = signed();
    let unverified = UnverifiedGrant::parse("GET", "acme", "docs/a%2Fb.txt", &query).unwrap();
    assert_eq!(unverified.key_id(), &key_id("k1"));
    let other_secret = SigningKey::from_parts(key_id("k1"), [8; 32]);
    let other_id = SigningKey::from_parts(key_id("k2"), [7; 32]);
    let generated = SigningKey::generate(key_id("k1"));
    for wrong in [other_secret, other_id, generated] {
        assert_eq!(unverified.verify(&wrong, NOW), Err(ValetError::BadSignature), "{wrong:?}");
    }
    // A URL relabelled to another key id with the same secret fails too: the key id is signed.
    let relabelled = with_param(&query, "sg-kid", Some("k2"));
    let unverified = UnverifiedGrant::parse("GET", "acme", "docs/a%2Fb.txt", &relabelled).unwrap();
    let same_secret = SigningKey::from_parts(key_id("k2"), [7; 32]);
    assert_eq!(unverified.verify(&same_secret, NOW), Err(ValetError::BadSignature));
}

#[test]
#[should_panic(expected = "signed by the key it names")]
fn signing_with_another_key_is_a_bug() {
    let (grant, _) = signed();
    grant.to_query(&SigningKey::from_parts(key_id("k2"), [7; 32]));
}

#[test]
fn debug_never_prints_the_signature() {
    let (_, query) = signed();
    let unverified = UnverifiedGrant::parse("GET", "acme", "docs/a%2Fb.txt", &query).unwrap();
    let printed = format!("{unverified:?}");
    assert!(!printed.contains(param(&query, "sg-sig")), "{printed}");
    assert!(printed.contains("redacted"), "{printed}");
}
