//! The Valet Key pattern's work below the routes: issuing a grant (signed with the current key
//! and recorded in the catalog), and answering a request to `/valet/...`: verifying its URL
//! against the key ring and the catalog (revocation, retired keys, single use), running the one
//! blob transfer it grants through the [`crate::blobs::service`] (counted in the tenant's
//! [`crate::server::bulkhead`] until its response has been sent), counting each refusal
//! (`shardgate_valet_refusals_total{code}`) and auditing every use and refusal (through the
//! bounded, batching [`crate::valet::audit`] writer).
//!
//! Refusals are [`ValetError`]s, turned into problem+json by `crate::wire::error` like every error.
//! The canonical form and the checks are specified in `docs/valet-keys.md`.

use crate::server::usage_tally::{Count, CountedBody};
use axum::body::HttpBody as _;
use shardgate_shard_router::usage::daily::ValetTransfer;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::Response;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use shardgate_shard_router::Error as StoreError;
use shardgate_shard_router::blobs::{BlobCondition, BlobPath};
use shardgate_shard_router::catalog::{Audit, ValetGrantRow};
use shardgate_shard_router::{Incarnation, TenantId, now_ms};
use shardgate_valet::{Constraints, Grant, GrantId, GrantRequest, Permission, UnverifiedGrant, ValetError};

use crate::app::App;
use crate::blobs::service::{NewBlob, blob_path, content_type_of, max_blob_size, require_blob, serve_blob, store_blob};
use crate::server::bulkhead::{Compartment, Slot};
use crate::valet::refusals::RefusalLabels;
use crate::valet::signing_keys::key_state;
use crate::wire::error::{ApiError, Code};

/// Characters escaped in a blob path segment of a valet URL and in a `filename*`: everything but
/// RFC 3986 unreserved.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The canonical raw form of a blob path in a valet URL (each segment percent-encoded).
fn encoded_path(path: &BlobPath) -> String {
    path.as_str()
        .split('/')
        .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// A `Content-Disposition` to sign into a download grant: `inline` or `attachment`, optionally
/// with `; filename=...`, rebuilt per RFC 6266 with an ASCII `filename` fallback and a UTF-8
/// `filename*` (400 `invalid_body` otherwise).
pub fn content_disposition(value: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::new(
            Code::InvalidBody,
            "content_disposition must be `inline` or `attachment`, optionally with `; filename=...`",
        )
    };
    let (kind, rest) = value.split_once(';').map_or((value.trim(), ""), |(k, r)| (k.trim(), r.trim()));
    if !matches!(kind, "inline" | "attachment") {
        return Err(bad());
    }
    if rest.is_empty() {
        return Ok(kind.to_owned());
    }
    let name = rest.strip_prefix("filename=").ok_or_else(bad)?.trim().trim_matches('"');
    if name.is_empty() || name.chars().any(char::is_control) || name.len() > 255 {
        return Err(bad());
    }
    let ascii: String = name.chars().map(|c| if c.is_ascii() && c != '"' && c != '\\' { c } else { '_' }).collect();
    let encoded = utf8_percent_encode(name, SEGMENT);
    Ok(format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"))
}

/// Whether a browser would run what a response of `content_type` holds as a page of the origin it
/// came from: HTML, SVG, XML (with XSLT) and scripts. A tenant-uploaded page served from the
/// gateway's origin could read that origin's data, so valet downloads never open one as a page
/// unasked.
fn is_active_content(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let (kind, subtype) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
    subtype.contains("html")
        || subtype.contains("xml")
        || subtype.contains("javascript")
        || subtype.contains("ecmascript")
        || subtype == "xsl"
        || subtype == "x-shockwave-flash"
        || (kind == "multipart" && subtype == "x-mixed-replace")
        || essence.is_empty()
}

/// The headers a valet download gets: the signed `Content-Disposition`, if any. Active content
/// (HTML, SVG, XML, scripts: [`is_active_content`]) is always served under
/// `Content-Security-Policy: sandbox` (no script, no access to the origin) and as an attachment
/// unless the issuer signed a disposition (an explicit `inline` is honoured, sandboxed).
fn guard_download(headers: &mut HeaderMap, signed_disposition: Option<&str>) {
    let active = headers.get(header::CONTENT_TYPE).is_none_or(|value| value.to_str().map_or(true, is_active_content));
    let disposition = match signed_disposition {
        Some(signed) => HeaderValue::from_str(signed).ok(),
        None if active => Some(HeaderValue::from_static("attachment")),
        None => None,
    };
    if let Some(disposition) = disposition {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    if active {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    }
}

/// What a tenant asks a valet key for, already checked against the API's rules.
#[derive(Debug)]
pub struct Issue<'a> {
    /// Whose blob.
    pub tenant: &'a TenantId,
    /// The tenant's incarnation the issuer was authorized for: the grant opens no other.
    pub incarnation: Incarnation,
    /// Which blob.
    pub path: &'a BlobPath,
    /// Read or write.
    pub permission: Permission,
    /// Lifetime in seconds.
    pub expires_in: u64,
    /// The signed limits.
    pub constraints: Constraints,
}

/// An issued valet key: the grant and its URL.
#[derive(Debug)]
pub struct Issued {
    /// What the URL allows.
    pub grant: Grant,
    /// The signed URL.
    pub url: String,
}

/// Signs a grant with the current key and records it in the catalog (audited as `audit`, whose
/// target becomes the grant's). A read grant needs its blob to exist (404 `blob_not_found`).
pub async fn issue(app: &App, issue: Issue<'_>, audit: Audit) -> Result<Issued, ApiError> {
    let Issue { tenant, incarnation, path, permission, expires_in, constraints } = issue;
    // A read key for a blob that does not exist would open nothing: 404, as its download would
    // answer. A write key may create its blob.
    if permission == Permission::Read {
        require_blob(app, tenant, path).await?;
    }
    let key = app.signing_keys.current(app.router.catalog(), &audit.request_id).await?;
    let now = app.clock.now_secs();
    let single_use = constraints.single_use;
    let grant = Grant::new(
        GrantRequest {
            permission,
            tenant: tenant.to_string(),
            path: encoded_path(path),
            not_before: now.saturating_sub(app.valet.not_before_skew.as_secs()),
            expires_at: now + expires_in,
            grant_id: GrantId::generate(),
            constraints,
        },
        &key,
    )?;
    let row = ValetGrantRow {
        id: grant.grant_id().as_str().to_owned(),
        tenant: tenant.to_string(),
        path: grant.path().to_owned(),
        permission: permission.as_str().to_owned(),
        key_id: key.id().as_str().to_owned(),
        not_before: grant.not_before() as i64,
        expires_at: grant.expires_at() as i64,
        single_use,
        used_at_ms: None,
        revoked_at_ms: None,
        created_at_ms: now_ms(),
        incarnation: incarnation.id,
    };
    let audit = Audit { target: format!("valet-key:{} {} {}", row.id, row.permission, path), ..audit };
    app.router.catalog().insert_valet_grant(&row, &audit).await?;
    let base = app.valet.public_url.as_deref().unwrap_or_default().trim_end_matches('/');
    let url = format!("{base}/valet/{tenant}/{}?{}", grant.path(), grant.to_query(&key));
    Ok(Issued { grant, url })
}

/// Answers a request to `/valet/{tenant}/...`: the download or upload its URL grants, or the
/// refusal. Either way the outcome is audited (off the request's path); a refusal is counted.
pub async fn transfer(app: &Arc<App>, tenant: &str, request: Request) -> Result<Response, ApiError> {
    let (id, client_id) = crate::server::edge::RequestIds::of(request.extensions());
    let client_address = Some(crate::server::client_address::client_address(request.extensions()).to_string());
    let target = request.uri().path().to_owned();
    let outcome = match authorize(app, request.method().as_str(), request.uri(), tenant).await {
        Ok((grant, slot)) => {
            let served = serve(app, &grant, request)
                .await
                .map(|(response, action)| (app.transfers.hold(response, slot), action));
            // A single-use upload that stored nothing may be tried again.
            if served.is_err()
                && grant.constraints().single_use
                && grant.permission() == Permission::Write
                && let Err(e) = app.router.catalog().release_valet_grant(grant.grant_id().as_str()).await
            {
                tracing::warn!(error = %e, "could not give a failed single-use upload its use back");
            }
            served
        }
        Err(refusal) => Err(refusal),
    };
    match outcome {
        Ok((response, action)) => {
            record(app, tenant, action, target, (id, client_id, client_address));
            Ok(response)
        }
        Err(refusal) => {
            app.valet_refusals.get_or_create(&RefusalLabels { code: refusal.code() }).inc();
            // Sampled: one row per code and minute, and one counting the rest (`valet/refusals.rs`).
            app.valet_audit.record_refusal(
                Audit {
                    actor: "valet".into(),
                    tenant: Some(tenant.to_owned()),
                    action: "valet.refused",
                    target: format!("{target} {}", refusal.code()),
                    request_id: id,
                    client_request_id: client_id,
                    client_address,
                },
                refusal.code(),
            );
            Err(refusal)
        }
    }
}

/// 503 `catalog_unavailable`: a valet URL cannot be checked without the catalog.
fn catalog_unreachable(e: StoreError) -> ApiError {
    tracing::warn!(error = %e, "a valet URL could not be checked against the catalog");
    ApiError::catalog_unavailable()
}

/// Checks a valet request's URL against the key ring and the catalog; returns the verified
/// grant (and consumes a single-use one) with the request's slot in its tenant's bulkhead. A
/// full bulkhead refuses before a single-use grant is consumed.
#[tracing::instrument(level = "trace", name = "valet.check", skip_all)]
async fn authorize(app: &App, method: &str, uri: &Uri, tenant: &str) -> Result<(Grant, Slot), ApiError> {
    let catalog = app.router.catalog();
    let prefix = format!("/valet/{tenant}/");
    let raw_path = uri.path().strip_prefix(&prefix).ok_or(ValetError::Malformed("no blob path"))?;
    let unverified = UnverifiedGrant::parse(method, tenant, raw_path, uri.query().unwrap_or(""))?;
    let key = app.signing_keys.verifying_key(catalog, unverified.key_id()).await.map_err(catalog_unreachable)??;
    let grant = unverified.verify(&key, app.clock.now_secs())?;
    let id = grant.grant_id().as_str();
    let check = match app.valet_checks.get(id) {
        Some(check) => check,
        None => {
            let era = app.valet_checks.era();
            let found = catalog.valet_grant(id).await.map_err(catalog_unreachable)?.ok_or(ValetError::UnknownGrant)?;
            let check = Arc::new(found);
            app.valet_checks.put(id, era, check.clone());
            check
        }
    };
    let (row, state) = &*check;
    if row.revoked_at_ms.is_some() {
        return Err(ValetError::Revoked.into());
    }
    // A grant of an earlier life of the tenant id opens nothing of the current one, even if
    // its revocation (with the tenant's deletion) raced its issue.
    let tenant = TenantId::parse(grant.tenant()).map_err(|_| ValetError::Malformed("bad tenant"))?;
    let current = match app.router.incarnation(&tenant).await {
        Ok(current) => Some(current.id),
        Err(StoreError::TenantNotFound) => None,
        Err(e) => return Err(catalog_unreachable(e)),
    };
    if current != Some(row.incarnation) {
        return Err(ApiError::new(Code::ValetRevoked, "this valet key was issued to a deleted tenant of the same id"));
    }
    // The catalog's word on the key's state, not this instance's ring: a retirement anywhere
    // counts at once.
    state.map(key_state).ok_or(ValetError::KeyRetired)?.check_verifies()?;
    let slot = app.enter_bulkhead(Compartment::Tenant(grant.tenant().into()))?;
    if grant.constraints().single_use && !catalog.use_valet_grant(&row.id).await.map_err(catalog_unreachable)? {
        return Err(ValetError::Used.into());
    }
    Ok((grant, slot))
}

/// Runs the transfer `grant` allows; returns the response and the audit action.
async fn serve(app: &App, grant: &Grant, request: Request) -> Result<(Response, &'static str), ApiError> {
    let tenant = TenantId::parse(grant.tenant()).map_err(|_| ValetError::Malformed("bad tenant"))?;
    let path = blob_path(grant.path())?;
    let quotas = app.router.tenant_quotas(&tenant)?;
    let refused = |e: ApiError| {
        app.quota_refusals.observe(&app.router, &tenant, &e);
        e
    };
    if grant.permission() == Permission::Read {
        let head = request.method() == axum::http::Method::HEAD;
        let mut response = serve_blob(app, &tenant, &path, request.headers(), head).await?;
        // The bytes the answer will carry are taken from the day's valet bytes before any moves.
        let declared = response.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
        let length = if head { 0 } else { declared.or(response.body().size_hint().exact()).unwrap_or(0) };
        let transfer = ValetTransfer::begin(&app.daily_usage, tenant.as_str(), &quotas, length)
            .await
            .map_err(|e| refused(ApiError::from(e)))?;
        if response.status().is_success() {
            guard_download(response.headers_mut(), grant.constraints().content_disposition.as_deref());
        }
        let response = response.map(|body| CountedBody::body(body, Moved(transfer)));
        return Ok((response, "valet.download"));
    }
    let transfer = ValetTransfer::begin(&app.daily_usage, tenant.as_str(), &quotas, 0).await?;
    let (parts, body) = request.into_parts();
    let content_type = content_type_of(&parts.headers)?;
    grant.check_upload_content_type(&content_type)?;
    let tier_max = max_blob_size(app, &tenant)?;
    let max_size = grant.constraints().max_size.map_or(tier_max, |signed| signed.min(tier_max));
    let blob = NewBlob {
        tenant: &tenant,
        path: &path,
        content_type,
        condition: BlobCondition::Always,
        max_size,
        valet: Some(transfer),
    };
    Ok((store_blob(app, blob, &parts.headers, body).await?, "valet.upload"))
}

/// A valet download's transfer, told what its body sent.
#[derive(Debug)]
struct Moved(ValetTransfer);

impl Count for Moved {
    fn count(&mut self, bytes: u64) {
        self.0.moved(bytes);
    }
}

/// Records a valet request in the audit log, off the request's path: queued for the batching
/// writer ([`crate::valet::audit`]), dropped and counted when its queue is full. `from` is the
/// request's id, the client's id and the client's address.
fn record(
    app: &App,
    tenant: &str,
    action: &'static str,
    target: String,
    from: (String, Option<String>, Option<String>),
) {
    let (request_id, client_request_id, client_address) = from;
    app.valet_audit.record(Audit {
        actor: "valet".into(),
        tenant: Some(tenant.to_owned()),
        action,
        target,
        request_id,
        client_request_id,
        client_address,
    });
}

#[cfg(test)]
mod active_content_tests {
    use super::*;

    #[test]
    fn pages_scripts_and_xml_are_active_other_media_are_not() {
        for active in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/xhtml+xml",
            "image/svg+xml",
            "text/xml",
            "application/xml",
            "application/rss+xml",
            "text/javascript",
            "application/javascript",
            "application/ecmascript",
            "multipart/x-mixed-replace; boundary=x",
            "",
        ] {
            assert!(is_active_content(active), "{active}");
        }
        for passive in
            ["image/png", "application/pdf", "text/plain", "application/json", "application/octet-stream", "video/mp4"]
        {
            assert!(!is_active_content(passive), "{passive}");
        }
    }

    #[test]
    fn active_content_is_an_attachment_unless_signed_and_always_sandboxed() {
        let headers_for = |content_type: &str, signed: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
            guard_download(&mut headers, signed);
            headers
        };
        let html = headers_for("text/html", None);
        assert_eq!(html[header::CONTENT_DISPOSITION], "attachment");
        assert!(html[header::CONTENT_SECURITY_POLICY].to_str().unwrap().starts_with("sandbox"));
        let asked_inline = headers_for("text/html", Some("inline"));
        assert_eq!(asked_inline[header::CONTENT_DISPOSITION], "inline");
        assert!(asked_inline.contains_key(header::CONTENT_SECURITY_POLICY), "inline stays sandboxed");
        let png = headers_for("image/png", None);
        assert!(!png.contains_key(header::CONTENT_DISPOSITION) && !png.contains_key(header::CONTENT_SECURITY_POLICY));
        let named = headers_for("image/png", Some("attachment; filename=\"a.png\""));
        assert_eq!(named[header::CONTENT_DISPOSITION], "attachment; filename=\"a.png\"");
    }
}
