//! When a listener's certificate expires: the `notAfter` of an X.509 certificate (RFC 5280,
//! §4.1.2.5), read from its DER by walking the few elements before it. Nothing else of the
//! certificate is read or checked here (rustls checks that the key goes with it when the pair
//! loads); a certificate this reader cannot follow gives `None`, and its listener shows no
//! expiry in `/metrics` rather than a wrong one.

/// The `notAfter` of the DER certificate `der`, in seconds since the Unix epoch.
pub(crate) fn not_after(der: &[u8]) -> Option<i64> {
    let (certificate, _) = element(der, SEQUENCE)?;
    let (tbs, _) = element(certificate, SEQUENCE)?;
    // version ([0], optional), serialNumber, signature, issuer, then validity.
    let mut rest = tbs;
    if rest.first() == Some(&VERSION) {
        rest = element(rest, VERSION)?.1;
    }
    rest = element(rest, INTEGER)?.1;
    rest = element(rest, SEQUENCE)?.1;
    rest = element(rest, SEQUENCE)?.1;
    let (validity, _) = element(rest, SEQUENCE)?;
    let (_, tag, after_not_before) = any_element(validity)?;
    if tag != UTC_TIME && tag != GENERALIZED_TIME {
        return None;
    }
    let (time, tag, _) = any_element(after_not_before)?;
    match tag {
        UTC_TIME => utc_time(time),
        GENERALIZED_TIME => generalized_time(time),
        _ => None,
    }
}

const INTEGER: u8 = 0x02;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const SEQUENCE: u8 = 0x30;
/// `[0] EXPLICIT Version`.
const VERSION: u8 = 0xa0;

/// The content of the element at the start of `input` if its tag is `tag`, and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (content, found, rest) = any_element(input)?;
    (found == tag).then_some((content, rest))
}

/// The content, tag and what follows of the element at the start of `input` (definite lengths
/// of up to four bytes, as DER has them).
fn any_element(input: &[u8]) -> Option<(&[u8], u8, &[u8])> {
    let (&tag, input) = input.split_first()?;
    let (&first, mut input) = input.split_first()?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let bytes = usize::from(first & 0x7f);
        if bytes == 0 || bytes > 4 || input.len() < bytes {
            return None;
        }
        let (length, rest) = input.split_at(bytes);
        input = rest;
        length.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b))
    };
    (input.len() >= length).then(|| (&input[..length], tag, &input[length..]))
}

/// `YYMMDDHHMMSSZ` (RFC 5280: years 50 to 99 are 19xx, 00 to 49 are 20xx).
fn utc_time(text: &[u8]) -> Option<i64> {
    if text.len() != 13 || text[12] != b'Z' {
        return None;
    }
    let yy = digits(&text[0..2])?;
    let year = if yy >= 50 { 1900 + yy } else { 2000 + yy };
    seconds(year, &text[2..12])
}

/// `YYYYMMDDHHMMSSZ`.
fn generalized_time(text: &[u8]) -> Option<i64> {
    if text.len() != 15 || text[14] != b'Z' {
        return None;
    }
    seconds(digits(&text[0..4])?, &text[4..14])
}

/// Seconds since the Unix epoch of `year` and `MMDDHHMMSS`.
fn seconds(year: i64, rest: &[u8]) -> Option<i64> {
    let [month, day, hour, minute, second] = [0, 2, 4, 6, 8].map(|at| digits(&rest[at..at + 2]));
    let (month, day, hour, minute, second) = (month?, day?, hour?, minute?, second?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

fn digits(text: &[u8]) -> Option<i64> {
    text.iter().try_fold(0i64, |n, b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    #[test]
    fn times_in_both_forms_give_their_unix_seconds() {
        assert_eq!(utc_time(b"700101000000Z"), Some(0));
        assert_eq!(utc_time(b"000101000000Z"), Some(946_684_800));
        assert_eq!(utc_time(b"491231235959Z"), Some(2_524_607_999), "49 is 2049");
        assert_eq!(utc_time(b"500101000000Z"), Some(-631_152_000), "50 is 1950");
        assert_eq!(generalized_time(b"20500101000000Z"), Some(2_524_608_000));
        assert_eq!(generalized_time(b"20240229120000Z"), Some(1_709_208_000), "a leap day");
        assert_eq!(utc_time(b"701301000000Z"), None, "month 13");
        assert_eq!(utc_time(b"7001010000000"), None, "no Z");
        assert_eq!(generalized_time(b"2050010100000Z"), None, "too short");
    }

    #[test]
    fn the_dev_overlays_certificate_expires_when_openssl_says() {
        // `openssl x509 -noout -enddate -in deploy/kubernetes/overlays/dev/tls/tls.crt`:
        // notAfter=Nov 25 08:58:13 2036 GMT.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/kubernetes/overlays/dev/tls/tls.crt");
        let der = CertificateDer::from_pem_file(path).unwrap();
        assert_eq!(not_after(&der), Some(2_111_216_293));
    }

    #[test]
    fn what_is_not_a_certificate_gives_no_time() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/kubernetes/overlays/dev/tls/tls.crt");
        let der = CertificateDer::from_pem_file(path).unwrap().to_vec();
        assert_eq!(not_after(&[]), None);
        assert_eq!(not_after(&der[..der.len() / 3]), None, "cut short");
        assert_eq!(not_after(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None, "a length past the end");
        let mut not_a_sequence = der.clone();
        not_a_sequence[0] = 0x31;
        assert_eq!(not_after(&not_a_sequence), None);
    }
}
