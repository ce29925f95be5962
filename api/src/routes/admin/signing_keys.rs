//! `/v1/admin/valet/signing-keys[/rotate|/{id}]`: the valet signing keys (scope `admin`): list
//! them, rotate to a new current key, retire one. The keys themselves are
//! [`crate::valet::signing_keys`]'.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shardgate_shard_router::catalog::{Retirement, ValetKeyRow};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiPath};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::timestamps::rfc3339;

/// A signing key (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeyInfo {
    /// Key id.
    pub id: String,
    /// `current` (signs new keys), `active` (still verifies) or `retired` (verifies nothing).
    pub state: &'static str,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Retirement time, RFC 3339.
    pub retired_at: Option<String>,
}

impl From<&ValetKeyRow> for SigningKeyInfo {
    fn from(row: &ValetKeyRow) -> Self {
        Self {
            id: row.id.clone(),
            state: row.state.name(),
            created_at: rfc3339(row.created_at_ms),
            retired_at: row.retired_at_ms.map(rfc3339),
        }
    }
}

/// List the valet signing keys.
#[utoipa::path(get, path = "/v1/admin/valet/signing-keys", responses(
    (status = 200, description = "Every signing key, oldest first", body = Vec<SigningKeyInfo>),
))]
pub async fn list_signing_keys(Admin { app, .. }: Admin) -> Result<axum::Json<Vec<SigningKeyInfo>>, ApiError> {
    let rows = app.signing_keys.rows(app.router.catalog()).await?;
    Ok(axum::Json(rows.iter().map(SigningKeyInfo::from).collect()))
}

/// Make a new current signing key; older keys keep verifying until retired.
#[utoipa::path(post, path = "/v1/admin/valet/signing-keys/rotate", responses(
    (status = 201, description = "The new current key", body = SigningKeyInfo),
))]
pub async fn rotate_signing_key(Admin { app, caller, request }: Admin) -> Result<Response, ApiError> {
    let audit = caller.audit(&request, "valet.key.rotate", None, "valet signing key".into());
    let row = app.signing_keys.rotate(app.router.catalog(), &audit).await?;
    Ok((StatusCode::CREATED, axum::Json(SigningKeyInfo::from(&row))).into_response())
}

/// Path of one signing key.
#[derive(Debug, Deserialize, IntoParams)]
pub struct SigningKeyRoute {
    /// Key id.
    id: String,
}

errors!(RetireSigningKeyErrors: SigningKeyNotFound, SigningKeyCurrent);

/// Retire a signing key: every URL it signed is refused from now on, on every instance.
#[utoipa::path(delete, path = "/v1/admin/valet/signing-keys/{id}", params(SigningKeyRoute), responses(
    (status = 200, description = "Retired", body = SigningKeyInfo),
    RetireSigningKeyErrors,
))]
pub async fn retire_signing_key(
    Admin { app, caller, request }: Admin,
    ApiPath(route): ApiPath<SigningKeyRoute>,
) -> Result<axum::Json<SigningKeyInfo>, ApiError> {
    let audit = caller.audit(&request, "valet.key.retire", None, format!("valet-key:{}", route.id));
    match app.signing_keys.retire(app.router.catalog(), &route.id, &audit).await? {
        Retirement::Retired(row) => {
            app.announce_valet_change().await;
            Ok(axum::Json(SigningKeyInfo::from(&row)))
        }
        Retirement::NotFound => Err(Code::SigningKeyNotFound.into()),
        Retirement::IsCurrent => Err(Code::SigningKeyCurrent.into()),
    }
}
