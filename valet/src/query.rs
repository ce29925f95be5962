//! The URL form of a grant: the `sg-` query parameters, signing them into a URL and parsing and
//! verifying them out of a request.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::fields::{parse_decimal, percent_decode_strict};
use crate::{Constraints, Grant, GrantId, KeyId, Permission, SCHEME_VERSION, SigningKey, ValetError};

/// Query parameter: scheme version (`1`).
pub const PARAM_VERSION: &str = "sg-v";
/// Query parameter: permission (`read` or `write`).
pub const PARAM_PERMISSION: &str = "sg-perm";
/// Query parameter: not-before, unix seconds.
pub const PARAM_NOT_BEFORE: &str = "sg-nbf";
/// Query parameter: expiry, unix seconds.
pub const PARAM_EXPIRES_AT: &str = "sg-exp";
/// Query parameter: signing key id.
pub const PARAM_KEY_ID: &str = "sg-kid";
/// Query parameter: grant id.
pub const PARAM_GRANT_ID: &str = "sg-grant";
/// Query parameter (optional): content type constraint.
pub const PARAM_CONTENT_TYPE: &str = "sg-ct";
/// Query parameter (optional): maximum upload size, bytes.
pub const PARAM_MAX_SIZE: &str = "sg-max";
/// Query parameter (optional): content disposition constraint.
pub const PARAM_CONTENT_DISPOSITION: &str = "sg-cd";
/// Query parameter (optional): `1` when the grant is single-use.
pub const PARAM_SINGLE_USE: &str = "sg-once";
/// Query parameter: the signature, base64url without padding. Never log it.
pub const PARAM_SIGNATURE: &str = "sg-sig";

/// The prefix reserved for valet parameters, matched without regard to ASCII case.
const RESERVED_PREFIX: &str = "sg-";

/// Everything except RFC 3986 unreserved characters is percent-encoded in a value.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// HMAC-SHA256 output length.
const SIGNATURE_LEN: usize = 32;

impl Grant {
    /// The query string of a valet URL for this grant, signed with `key`, without the leading `?`:
    ///
    /// `sg-v=1&sg-perm=..&sg-nbf=..&sg-exp=..&sg-kid=..&sg-grant=..[&sg-ct=..][&sg-max=..][&sg-cd=..][&sg-once=1]&sg-sig=..`
    ///
    /// Every value is percent-encoded (all but RFC 3986 unreserved characters). The URL is
    /// `/valet/{tenant}/{path}?{query}`, with the tenant and the raw path exactly as in the grant.
    ///
    /// # Panics
    ///
    /// If `key` is not the key the grant was made for (`key.id() != self.key_id()`): such a URL
    /// could never verify.
    pub fn to_query(&self, key: &SigningKey) -> String {
        assert_eq!(key.id(), &self.key_id, "a grant must be signed by the key it names");
        let signature = URL_SAFE_NO_PAD.encode(sign(key, &self.canonical()));
        let c = &self.constraints;
        let not_before = self.not_before.to_string();
        let expires_at = self.expires_at.to_string();
        let max_size = c.max_size.map(|max| max.to_string());
        let params = [
            (PARAM_VERSION, Some("1")),
            (PARAM_PERMISSION, Some(self.permission.as_str())),
            (PARAM_NOT_BEFORE, Some(&not_before)),
            (PARAM_EXPIRES_AT, Some(&expires_at)),
            (PARAM_KEY_ID, Some(self.key_id.as_str())),
            (PARAM_GRANT_ID, Some(self.grant_id.as_str())),
            (PARAM_CONTENT_TYPE, c.content_type.as_deref()),
            (PARAM_MAX_SIZE, max_size.as_deref()),
            (PARAM_CONTENT_DISPOSITION, c.content_disposition.as_deref()),
            (PARAM_SINGLE_USE, c.single_use.then_some("1")),
            (PARAM_SIGNATURE, Some(&signature)),
        ];
        let mut query = String::with_capacity(256);
        for (name, value) in params {
            let Some(value) = value else { continue };
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(name);
            query.push('=');
            query.extend(utf8_percent_encode(value, QUERY_VALUE));
        }
        query
    }
}

fn sign(key: &SigningKey, canonical: &str) -> [u8; SIGNATURE_LEN] {
    let mut mac = key.mac();
    mac.update(canonical.as_bytes());
    mac.finalize().into_bytes().into()
}

/// A grant read from a request whose signature has not been checked yet. Look its key up by
/// [`UnverifiedGrant::key_id`], then call [`UnverifiedGrant::verify`]; nothing in it may be
/// trusted before.
#[derive(Clone)]
pub struct UnverifiedGrant {
    grant: Grant,
    signature: [u8; SIGNATURE_LEN],
}

impl fmt::Debug for UnverifiedGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnverifiedGrant").field("grant", &self.grant).field("signature", &"[redacted]").finish()
    }
}

/// The `sg-` parameters of one request, each seen at most once.
#[derive(Default)]
struct Params<'q> {
    version: Option<&'q str>,
    permission: Option<&'q str>,
    not_before: Option<&'q str>,
    expires_at: Option<&'q str>,
    key_id: Option<&'q str>,
    grant_id: Option<&'q str>,
    content_type: Option<&'q str>,
    max_size: Option<&'q str>,
    content_disposition: Option<&'q str>,
    single_use: Option<&'q str>,
    signature: Option<&'q str>,
}

impl<'q> Params<'q> {
    /// Splits a raw query into its `sg-` parameters (values still raw), refusing repeated and
    /// unknown ones. Parameter names are percent-decoded before they are classified, so
    /// `sg%2Dexp` is `sg-exp`; other parameters are skipped.
    fn split(raw_query: &'q str) -> Result<Self, ValetError> {
        let mut params = Params::default();
        for pair in raw_query.split('&').filter(|pair| !pair.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name_bytes: Vec<u8> = percent_decode_str(raw_name).collect();
            let name = String::from_utf8_lossy(&name_bytes);
            let reserved = name.get(..RESERVED_PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(RESERVED_PREFIX));
            if !reserved {
                continue;
            }
            let slot = match &*name {
                PARAM_VERSION => &mut params.version,
                PARAM_PERMISSION => &mut params.permission,
                PARAM_NOT_BEFORE => &mut params.not_before,
                PARAM_EXPIRES_AT => &mut params.expires_at,
                PARAM_KEY_ID => &mut params.key_id,
                PARAM_GRANT_ID => &mut params.grant_id,
                PARAM_CONTENT_TYPE => &mut params.content_type,
                PARAM_MAX_SIZE => &mut params.max_size,
                PARAM_CONTENT_DISPOSITION => &mut params.content_disposition,
                PARAM_SINGLE_USE => &mut params.single_use,
                PARAM_SIGNATURE => &mut params.signature,
                _ => return Err(ValetError::Malformed("unknown sg- parameter")),
            };
            if slot.replace(raw_value).is_some() {
                return Err(ValetError::Malformed("repeated sg- parameter"));
            }
        }
        Ok(params)
    }
}

/// A required parameter's decoded value.
fn required(raw: Option<&str>, missing: &'static str) -> Result<String, ValetError> {
    decoded(raw.ok_or(ValetError::Malformed(missing))?)
}

fn decoded(raw: &str) -> Result<String, ValetError> {
    percent_decode_strict(raw).map_err(|_| ValetError::Malformed("bad percent-encoding in an sg- parameter"))
}

fn decimal(raw: &str, bad: &'static str) -> Result<u64, ValetError> {
    parse_decimal(&decoded(raw)?).ok_or(ValetError::Malformed(bad))
}

impl UnverifiedGrant {
    /// Reads a valet request: its HTTP `method`, the `tenant` of `/valet/{tenant}/`, the
    /// `raw_path` after `/valet/{tenant}/` exactly as it appears in the request target (still
    /// percent-encoded: never a decoded or normalised path) and the `raw_query` (without `?`).
    ///
    /// Refuses, in this order:
    /// 1. a method other than `GET`, `HEAD` or `PUT`: [`ValetError::WrongMethod`];
    /// 2. a tenant or path that breaks its rule, a repeated `sg-` parameter (even with the same
    ///    value, even spelled `sg%2D..`), an unknown `sg-` parameter (the prefix is matched
    ///    without regard to case), a missing required one, a version other than `1`, a number
    ///    not in canonical decimal, a bad percent escape, a forbidden character, a signature that
    ///    is not 32 bytes of unpadded base64url, `sg-once` other than `1`, or
    ///    `sg-nbf >= sg-exp`: [`ValetError::Malformed`];
    /// 3. a method whose class is not `sg-perm` (`GET`/`HEAD` need `read`, `PUT` needs
    ///    `write`): [`ValetError::WrongMethod`].
    ///
    /// Parameters not starting with `sg-` are ignored: they are not signed, may be added or
    /// changed freely without breaking the signature, and so must never grant or change anything.
    /// Empty `&&` pieces are skipped. `+` in a value is a literal plus, not a space.
    pub fn parse(method: &str, tenant: &str, raw_path: &str, raw_query: &str) -> Result<Self, ValetError> {
        let method_class = Permission::for_method(method).ok_or(ValetError::WrongMethod)?;
        let params = Params::split(raw_query)?;

        if required(params.version, "missing sg-v")? != SCHEME_VERSION.to_string() {
            return Err(ValetError::Malformed("unsupported sg-v"));
        }
        let permission = Permission::parse(&required(params.permission, "missing sg-perm")?)
            .ok_or(ValetError::Malformed("sg-perm must be read or write"))?;
        let not_before = params.not_before.ok_or(ValetError::Malformed("missing sg-nbf"))?;
        let not_before = decimal(not_before, "sg-nbf is not a canonical decimal")?;
        let expires_at = params.expires_at.ok_or(ValetError::Malformed("missing sg-exp"))?;
        let expires_at = decimal(expires_at, "sg-exp is not a canonical decimal")?;
        let key_id = KeyId::parse(&required(params.key_id, "missing sg-kid")?)
            .map_err(|_| ValetError::Malformed("sg-kid is not a key id"))?;
        let grant_id = GrantId::parse(&required(params.grant_id, "missing sg-grant")?)
            .map_err(|_| ValetError::Malformed("sg-grant is not a grant id"))?;
        let content_type = params.content_type.map(decoded).transpose()?;
        let max_size = params.max_size.map(|raw| decimal(raw, "sg-max is not a canonical decimal")).transpose()?;
        let content_disposition = params.content_disposition.map(decoded).transpose()?;
        let single_use = match params.single_use.map(decoded).transpose()?.as_deref() {
            None => false,
            Some("1") => true,
            Some(_) => return Err(ValetError::Malformed("sg-once must be 1 when present")),
        };
        let signature = URL_SAFE_NO_PAD
            .decode(required(params.signature, "missing sg-sig")?)
            .ok()
            .and_then(|bytes| <[u8; SIGNATURE_LEN]>::try_from(bytes).ok())
            .ok_or(ValetError::Malformed("sg-sig is not a base64url HMAC-SHA256"))?;

        let grant = Grant {
            permission,
            tenant: tenant.to_owned(),
            path: raw_path.to_owned(),
            not_before,
            expires_at,
            key_id,
            grant_id,
            constraints: Constraints { content_type, max_size, content_disposition, single_use },
        };
        grant.check().map_err(|(field, _)| {
            ValetError::Malformed(match field {
                "tenant" => "the tenant is not a tenant id",
                "path" => "the path is not a valid raw blob path",
                "content_type" => "sg-ct is not a valid header value",
                "content_disposition" => "sg-cd is not a valid header value",
                "expires_at" => "sg-exp is not after sg-nbf",
                _ => "a field breaks its rule",
            })
        })?;

        if method_class != permission {
            return Err(ValetError::WrongMethod);
        }
        Ok(Self { grant, signature })
    }

    /// The id of the key the URL claims to be signed with: the caller looks it up among its
    /// active keys and returns [`ValetError::UnknownKey`] when there is none (never existed,
    /// retired, or revoked).
    pub fn key_id(&self) -> &KeyId {
        &self.grant.key_id
    }

    /// Checks the signature with `key`, then the validity period against `now` (unix seconds):
    ///
    /// 1. `key` must be the key the URL names and the signature must be the HMAC-SHA256 of the
    ///    canonical string rebuilt from the request, compared in constant time:
    ///    [`ValetError::BadSignature`];
    /// 2. `now < not_before`: [`ValetError::NotYetValid`];
    /// 3. `now >= expires_at`: [`ValetError::Expired`] (no grace period: issue `not_before` a
    ///    little in the past instead).
    ///
    /// The returned grant is authentic and current. Revocation of its grant id, single use and
    /// its constraints are still the caller's to enforce.
    pub fn verify(&self, key: &SigningKey, now: u64) -> Result<Grant, ValetError> {
        if key.id() != &self.grant.key_id {
            return Err(ValetError::BadSignature);
        }
        let mut mac = key.mac();
        mac.update(self.grant.canonical().as_bytes());
        mac.verify_slice(&self.signature).map_err(|_| ValetError::BadSignature)?;
        if now < self.grant.not_before {
            return Err(ValetError::NotYetValid);
        }
        if now >= self.grant.expires_at {
            return Err(ValetError::Expired);
        }
        Ok(self.grant.clone())
    }
}

#[cfg(test)]
mod tests;
