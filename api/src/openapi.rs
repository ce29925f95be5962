//! The OpenAPI document: the base (info, security scheme, tags) here; paths and schemas come
//! from the handlers' `#[utoipa::path]` attributes as the routes are assembled in `startup.rs`.

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

/// Completes every operation from the rules that hold for all of them, so no handler repeats
/// them: its tag (the URL family, [`tag_of`]); its bearer requirement, from the same access rule
/// the gatekeeper enforces ([`shardgate_gatekeeper::request::access`]) unless the handler states
/// a finer one; and the answers any operation can give, whatever its handler does: 401 (missing or invalid token) and 403 (missing scope) on operations that need a bearer
/// token, 404 `tenant_not_found` on tenant paths, 414 `uri_too_long` and 429 `rate_limited` (the
/// front door), 503 `overloaded` (load shedding) and 504 `request_timeout` (the request
/// deadline), all problem+json. A handler that documents one of these itself (a more precise
/// description) keeps its own. Every error response a handler documents (4xx, 5xx) without a
/// body of its own is given the problem+json body, so handlers state only status and codes.
pub fn add_shared_responses(openapi: &mut utoipa::openapi::OpenApi) {
    // axum's catch-all `{*path}` is the OpenAPI template `{path}` (its value may contain `/`).
    let paths = std::mem::take(&mut openapi.paths.paths);
    openapi.paths.paths = paths.into_iter().map(|(path, item)| (path.replace("{*", "{"), item)).collect();
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    let problem_response = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/problem+json",
                ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
            )
            .build()
    };
    let problem = |description: &str| RefOr::T(problem_response(description));
    for (path, item) in openapi.paths.paths.iter_mut() {
        let throttled = !crate::front_door::is_unthrottled(path);
        let tenant_path = path.starts_with("/v1/tenants/{tenant}");
        let operations = [
            ("GET", &mut item.get),
            ("PUT", &mut item.put),
            ("POST", &mut item.post),
            ("DELETE", &mut item.delete),
            ("PATCH", &mut item.patch),
            ("HEAD", &mut item.head),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            operation.tags = Some(vec![tag_of(path).to_owned()]);
            if operation.security.is_none() {
                operation.security = required_token(method, path).map(|scope| vec![scope]);
            }
            let scopes = bearer_scopes(operation.security.as_deref());
            let responses = &mut operation.responses.responses;
            // Every error a handler documents is problem+json; the handler states only its codes.
            for (status, response) in responses.iter_mut() {
                if let RefOr::T(response) = response
                    && (status.starts_with('4') || status.starts_with('5'))
                    && response.content.is_empty()
                {
                    *response = problem_response(&response.description);
                }
            }
            if let Some(scopes) = scopes {
                responses.entry("401".to_owned()).or_insert_with(|| problem("Missing or invalid token"));
                if let [scope] = scopes.as_slice() {
                    responses.entry("403".to_owned()).or_insert_with(|| problem(&format!("Missing `{scope}` scope")));
                }
                if tenant_path {
                    // A token of another tenant gets 404 too, so existence never leaks.
                    responses.entry("404".to_owned()).or_insert_with(|| problem("`tenant_not_found`"));
                }
            }
            if throttled {
                responses.insert(
                    "429".to_owned(),
                    problem(
                        "`rate_limited`: over the caller's rate limit (its tenant's, or its IP address's without a \
                         valid token); see `Retry-After`, `RateLimit` and `RateLimit-Policy`",
                    ),
                );
            }
            responses.insert("414".to_owned(), problem("`uri_too_long`: the path is longer than 2048 bytes"));
            responses.entry("503".to_owned()).or_insert_with(|| problem("`overloaded`: too many requests in progress"));
            responses.insert("504".to_owned(), problem("`request_timeout`: the request took longer than the limit"));
        }
    }
}

/// The scopes of an operation's bearer requirement (`None`: it needs no token).
fn bearer_scopes(security: Option<&[utoipa::openapi::security::SecurityRequirement]>) -> Option<Vec<String>> {
    security?.iter().find_map(|requirement| {
        let value = serde_json::to_value(requirement).ok()?;
        let scopes = value.get("bearer")?.as_array()?;
        Some(scopes.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
    })
}

/// The tag (documentation section) of a path: its URL family.
fn tag_of(path: &str) -> &'static str {
    let family = path.strip_prefix("/v1/tenants/{tenant}/").map(|rest| {
        let mut segments = rest.split('/');
        match (segments.next(), segments.nth(1)) {
            (Some("collections"), Some("indexes")) => "indexes",
            (Some("collections"), _) => "records",
            (Some("blobs"), _) => "blobs",
            _ => "valet",
        }
    });
    match family {
        Some(family) => family,
        None if path.starts_with("/v1/admin") => "admin",
        None if path.starts_with("/valet/") => "valet",
        None => "operations",
    }
}

/// The bearer token (and scope) an operation needs, by the gatekeeper's access rule.
fn required_token(method: &str, path: &str) -> Option<utoipa::openapi::security::SecurityRequirement> {
    use shardgate_gatekeeper::request::{Access, access};
    use utoipa::openapi::security::SecurityRequirement;
    match access(method, path) {
        Access::Admin => Some(SecurityRequirement::new("bearer", ["admin"])),
        Access::Tenant { scope, .. } => Some(SecurityRequirement::new("bearer", [scope.as_str()])),
        Access::Authenticated => Some(SecurityRequirement::new("bearer", Vec::<String>::new())),
        Access::Open => None,
    }
}
