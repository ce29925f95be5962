//! What a valet URL allows ([`Grant`]) and the canonical string its signature covers.

use crate::fields::{
    MAX_CONTENT_DISPOSITION_LEN, MAX_CONTENT_TYPE_LEN, Rule, check_header_value, check_path, check_tenant,
};
use crate::{GrantId, KeyId, Permission, SigningKey, ValetError};

/// The version of the valet URL scheme this crate signs and accepts (`sg-v`).
pub const SCHEME_VERSION: u32 = 1;

/// How far in the past an issuer should put `not_before` (five minutes), so that a verifier whose
/// clock runs a little behind the issuer's still accepts a fresh URL.
pub const NOT_BEFORE_SKEW_SECS: u64 = 300;

/// The first line of every canonical string: separates valet signatures from anything else the
/// same secret could ever be used for.
const CANONICAL_CONTEXT: &str = "shardgate-valet";

/// Limits on the one operation a grant allows. All of them are signed, absent ones included;
/// enforcing them is the caller's job (this crate never sees a request body or a response).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Constraints {
    /// Uploads: the `Content-Type` the `PUT` must carry. Downloads: the `Content-Type` to serve.
    /// Visible ASCII and spaces, at most [`crate::MAX_CONTENT_TYPE_LEN`] bytes.
    pub content_type: Option<String>,
    /// Uploads: the largest body, in bytes, the `PUT` may send.
    pub max_size: Option<u64>,
    /// Downloads: the `Content-Disposition` to serve (for example `attachment; filename="a.pdf"`).
    /// Visible ASCII and spaces, at most [`crate::MAX_CONTENT_DISPOSITION_LEN`] bytes.
    pub content_disposition: Option<String>,
    /// The grant works once: the caller consumes its grant id in the catalog on first use.
    pub single_use: bool,
}

/// What an issuer asks for; [`Grant::new`] validates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    /// Read (`GET`/`HEAD`) or write (`PUT`).
    pub permission: Permission,
    /// The tenant id (`[a-z0-9][a-z0-9-]{0,62}`), as in `/valet/{tenant}/`.
    pub tenant: String,
    /// The blob path exactly as it will appear, percent-encoded, in the URL after
    /// `/valet/{tenant}/`. `a%2Fb` and `a/b` are different paths.
    pub path: String,
    /// First second (unix time) at which the URL works. Put it [`NOT_BEFORE_SKEW_SECS`] in the
    /// past to allow for clock skew.
    pub not_before: u64,
    /// First second (unix time) at which the URL no longer works. Keep it short.
    pub expires_at: u64,
    /// The grant's id, usually [`GrantId::generate`].
    pub grant_id: GrantId,
    /// Limits on the operation.
    pub constraints: Constraints,
}

/// What a valet URL allows: one operation class on one blob of one tenant, during
/// `[not_before, expires_at)`, under limits. A `Grant` is valid by construction: it comes from
/// [`Grant::new`] (issuing) or [`crate::UnverifiedGrant::verify`] (a verified URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub(crate) permission: Permission,
    pub(crate) tenant: String,
    pub(crate) path: String,
    pub(crate) not_before: u64,
    pub(crate) expires_at: u64,
    pub(crate) key_id: KeyId,
    pub(crate) grant_id: GrantId,
    pub(crate) constraints: Constraints,
}

impl Grant {
    /// Validates `request` and makes a grant to be signed by `key` (the grant binds `key`'s id).
    ///
    /// Refuses, as [`ValetError::InvalidField`], a tenant outside the tenant id grammar, a path
    /// that is not a raw URL path (control characters, spaces, `?`, `#`, bad `%` escapes, empty,
    /// `.` or `..` segments even when percent-encoded, over [`crate::MAX_PATH_LEN`] bytes), a
    /// header-valued constraint with control characters or outside its length, and
    /// `not_before >= expires_at`.
    pub fn new(request: GrantRequest, key: &SigningKey) -> Result<Self, ValetError> {
        let GrantRequest { permission, tenant, path, not_before, expires_at, grant_id, constraints } = request;
        let grant =
            Grant { permission, tenant, path, not_before, expires_at, key_id: key.id().clone(), grant_id, constraints };
        grant.check().map_err(|(field, reason)| ValetError::InvalidField { field, reason })?;
        Ok(grant)
    }

    /// Checks every field rule, naming the first field that breaks one.
    pub(crate) fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let named = |field: &'static str, rule: Rule| rule.map_err(|reason| (field, reason));
        named("tenant", check_tenant(&self.tenant))?;
        named("path", check_path(&self.path))?;
        if let Some(content_type) = &self.constraints.content_type {
            named("content_type", check_header_value(content_type, MAX_CONTENT_TYPE_LEN))?;
        }
        if let Some(disposition) = &self.constraints.content_disposition {
            named("content_disposition", check_header_value(disposition, MAX_CONTENT_DISPOSITION_LEN))?;
        }
        if self.not_before >= self.expires_at {
            return Err(("expires_at", "must be after not_before"));
        }
        Ok(())
    }

    /// The scheme version, [`SCHEME_VERSION`].
    pub fn version(&self) -> u32 {
        SCHEME_VERSION
    }

    /// Read or write.
    pub fn permission(&self) -> Permission {
        self.permission
    }

    /// The tenant id.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The raw, percent-encoded blob path after `/valet/{tenant}/`. Decoding it into a blob path
    /// is the caller's job.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// First second (unix time) at which the URL works.
    pub fn not_before(&self) -> u64 {
        self.not_before
    }

    /// First second (unix time) at which the URL no longer works.
    pub fn expires_at(&self) -> u64 {
        self.expires_at
    }

    /// The id of the key that signs (or signed) this grant.
    pub fn key_id(&self) -> &KeyId {
        &self.key_id
    }

    /// The grant's id, for revocation and single use.
    pub fn grant_id(&self) -> &GrantId {
        &self.grant_id
    }

    /// The limits on the operation.
    pub fn constraints(&self) -> &Constraints {
        &self.constraints
    }

    /// Checks an upload's `Content-Type` against the signed one (compared without regard to ASCII
    /// case): [`ValetError::WrongContentType`] when the grant signs another. Any type passes a
    /// grant that signs none.
    pub fn check_upload_content_type(&self, content_type: &str) -> Result<(), ValetError> {
        match &self.constraints.content_type {
            Some(signed) if !signed.eq_ignore_ascii_case(content_type) => Err(ValetError::WrongContentType),
            _ => Ok(()),
        }
    }

    /// The canonical string the signature covers (see `docs/valet-keys.md`): thirteen lines, each
    /// ended by `\n`, in this fixed order:
    ///
    /// ```text
    /// shardgate-valet
    /// v=1
    /// perm=<read|write>
    /// tenant=<tenant>
    /// path=<raw path>
    /// nbf=<decimal>
    /// exp=<decimal>
    /// kid=<key id>
    /// grant=<grant id>
    /// ct=<content type>            or  ct      when absent
    /// max=<decimal>                or  max     when absent
    /// cd=<content disposition>     or  cd      when absent
    /// once=<1|0>
    /// ```
    ///
    /// A present value is written after `=`; an absent optional one is the bare label, so absent
    /// and empty never look alike. No value can contain a line feed (every field's rule forbids
    /// control characters), so the string splits back into exactly these fields.
    pub fn canonical(&self) -> String {
        let mut out = String::with_capacity(256 + self.path.len());
        let mut line = |label: &str, value: Option<&str>| {
            out.push_str(label);
            if let Some(value) = value {
                out.push('=');
                out.push_str(value);
            }
            out.push('\n');
        };
        let c = &self.constraints;
        line(CANONICAL_CONTEXT, None);
        line("v", Some(&SCHEME_VERSION.to_string()));
        line("perm", Some(self.permission.as_str()));
        line("tenant", Some(&self.tenant));
        line("path", Some(&self.path));
        line("nbf", Some(&self.not_before.to_string()));
        line("exp", Some(&self.expires_at.to_string()));
        line("kid", Some(self.key_id.as_str()));
        line("grant", Some(self.grant_id.as_str()));
        line("ct", c.content_type.as_deref());
        line("max", c.max_size.map(|max| max.to_string()).as_deref());
        line("cd", c.content_disposition.as_deref());
        line("once", Some(if c.single_use { "1" } else { "0" }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::from_parts(KeyId::parse("k1").unwrap(), [7; 32])
    }

    fn request() -> GrantRequest {
        GrantRequest {
            permission: Permission::Read,
            tenant: "acme".into(),
            path: "a/b.txt".into(),
            not_before: 100,
            expires_at: 200,
            grant_id: GrantId::parse("00112233445566778899aabbccddeeff").unwrap(),
            constraints: Constraints::default(),
        }
    }

    /// The field named when [`request`], changed by `change`, is refused.
    fn refused(change: impl FnOnce(&mut GrantRequest)) -> &'static str {
        let mut request = request();
        change(&mut request);
        match Grant::new(request, &key()) {
            Err(ValetError::InvalidField { field, .. }) => field,
            other => panic!("expected InvalidField, got {other:?}"),
        }
    }

    #[test]
    fn absent_constraints_are_bare_labels() {
        let grant = Grant::new(request(), &key()).unwrap();
        assert_eq!(
            grant.canonical(),
            "shardgate-valet\nv=1\nperm=read\ntenant=acme\npath=a/b.txt\nnbf=100\nexp=200\nkid=k1\n\
             grant=00112233445566778899aabbccddeeff\nct\nmax\ncd\nonce=0\n"
        );
    }

    #[test]
    fn every_field_has_one_line() {
        let mut request = request();
        request.constraints = Constraints {
            content_type: Some("text/plain".into()),
            max_size: Some(0),
            content_disposition: Some("attachment".into()),
            single_use: true,
        };
        let canonical = Grant::new(request, &key()).unwrap().canonical();
        let lines: Vec<&str> = canonical.strip_suffix('\n').unwrap().split('\n').collect();
        assert_eq!(lines.len(), 13);
        assert_eq!(&lines[9..], ["ct=text/plain", "max=0", "cd=attachment", "once=1"]);
    }

    #[test]
    fn control_characters_are_refused_in_every_text_field() {
        assert_eq!(refused(|r| r.tenant = "acme\nperm=write".into()), "tenant");
        assert_eq!(refused(|r| r.path = "a\nb".into()), "path");
        assert_eq!(refused(|r| r.constraints.content_type = Some("text/plain\nmax=1".into())), "content_type");
        assert_eq!(
            refused(|r| r.constraints.content_disposition = Some("attachment\r\nx: 1".into())),
            "content_disposition"
        );
        assert_eq!(refused(|r| r.constraints.content_type = Some("text/plain\0".into())), "content_type");
    }

    #[test]
    fn other_bad_fields_are_refused() {
        assert_eq!(refused(|r| r.path = "a/../b".into()), "path");
        assert_eq!(refused(|r| r.path = "a/%2e%2E/b".into()), "path");
        assert_eq!(refused(|r| r.constraints.content_type = Some(String::new())), "content_type");
        assert_eq!(refused(|r| r.expires_at = r.not_before), "expires_at");
    }

    #[test]
    fn uploads_must_carry_the_signed_content_type() {
        let anything = Grant::new(request(), &key()).unwrap();
        assert_eq!(anything.check_upload_content_type("text/html"), Ok(()));
        let mut r = request();
        r.constraints.content_type = Some("application/pdf".into());
        let pdf = Grant::new(r, &key()).unwrap();
        assert_eq!(pdf.check_upload_content_type("Application/PDF"), Ok(()));
        assert_eq!(pdf.check_upload_content_type("text/html"), Err(ValetError::WrongContentType));
    }
}
