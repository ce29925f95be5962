//! The OpenAPI document: the base (info, security scheme, tags) here; paths and schemas come
//! from the handlers' `#[utoipa::path]` attributes as the routes are assembled in `app.rs`.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::Problem;

/// Base document.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "shardgate",
        description = "Multi-tenant sharded storage gateway: JSON records per tenant on sharded databases. \
            Every error is application/problem+json with a stable `code`.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&BearerAuth),
    components(schemas(Problem)),
    tags(
        (name = "records", description = "Tenant records (bearer token bound to the tenant)"),
        (name = "admin", description = "Platform administration (scope `admin`)"),
        (name = "operations", description = "Health, readiness and metrics (no authentication)"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.bearer_format = Some("JWT".to_owned());
        scheme.description = Some(
            "JWT with claims `iss`, `exp`, `tenant` and `scope` (space-separated: read, write, manage, admin)"
                .to_owned(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}
