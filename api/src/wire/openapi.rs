//! The OpenAPI document: the base (info, security scheme, tags) here; paths and schemas come
//! from the handlers' `#[utoipa::path]` attributes as the routes are assembled in
//! `startup/application.rs`.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

use crate::wire::error::{Code, Problem};
use crate::wire::routed_epoch::EPOCH_HEADER;

// In the document a string of format `binary`, which client generators read as a file or a
// byte stream (a `Vec<u8>` would be an array of numbers).
/// Bytes, as they are: a blob's body.
#[derive(Debug, utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Binary(pub Vec<u8>);

/// Declares `$name`, the problem responses of an operation that answers with these codes, for
/// its `#[utoipa::path(responses(...))]`. Statuses and meanings come from [`Code`]'s table, so
/// the document cannot give a code another status than the API does.
macro_rules! errors {
    ($name:ident: $($code:ident),+ $(,)?) => {
        #[doc = concat!("The problem responses of the operation: ", $("`", stringify!($code), "` ",)+)]
        #[derive(Debug)]
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                $crate::wire::openapi::error_responses(&[$($crate::wire::error::Code::$code),+])
            }
        }
    };
}
pub(crate) use errors;

/// One problem+json response per status of `codes`, described by its codes (a lone code also
/// says what it means). A 503 also lists `overloaded`, which any operation may answer.
pub fn error_responses(codes: &[Code]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<Code>> = BTreeMap::new();
    for &code in codes.iter().chain(codes.iter().any(|c| c.status().as_u16() == 503).then_some(&Code::Overloaded)) {
        let group = by_status.entry(code.status().as_u16()).or_default();
        if !group.contains(&code) {
            group.push(code);
        }
    }
    by_status
        .into_iter()
        .map(|(status, codes)| (status.to_string(), RefOr::T(problem_response(&describe(&codes)))))
        .collect()
}

/// "`a`: what a means" for one code; "`a`, `b` or `c`" for more.
fn describe(codes: &[Code]) -> String {
    match codes {
        [code] => format!("`{}`: {}", code.as_str(), code.meaning()),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|c| format!("`{}`", c.as_str())).collect();
            format!("{} or `{}`", init.join(", "), last.as_str())
        }
        [] => String::new(),
    }
}

/// Adds the responses of `codes` whose statuses `responses` does not document yet.
fn add_missing(responses: &mut BTreeMap<String, RefOr<Response>>, codes: &[Code]) {
    for (status, response) in error_responses(codes) {
        responses.entry(status).or_insert(response);
    }
}

/// Adds `codes` to `responses`: a status not documented yet gets its response, and a documented
/// one that does not name a code yet names it too, so every code the operation may answer
/// with is in its document.
fn add_codes(responses: &mut BTreeMap<String, RefOr<Response>>, codes: &[Code]) {
    for &code in codes {
        let status = code.status().as_u16().to_string();
        match responses.get_mut(&status) {
            Some(RefOr::T(response)) => {
                let named = format!("`{}`", code.as_str());
                if !response.description.contains(&named) {
                    response.description = format!("{}; or {named}: {}", response.description, code.meaning());
                }
            }
            Some(RefOr::Ref(_)) => {}
            None => add_missing(responses, &[code]),
        }
    }
}

/// A problem+json response described by `description`.
fn problem_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
        )
        .build()
}

/// Base document.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "shardgate",
        description = "Multi-tenant sharded storage gateway. Each tenant stores JSON **records** in \
            collections (optimistic concurrency with ETags, ordered listings), binary **blobs** (streamed, \
            with ranges and SHA-256 ETags) and secondary **indexes** over its records' fields; \
            **valet keys** are signed, time-limited URLs that let anyone download or upload one blob \
            without a token. shardgate places each tenant's data on sharded databases; operators manage \
            shards, tenants and moves through the admin endpoints.\n\n\
            Authenticate with a bearer JWT (the Authorize button): `shardgate token --tenant <id> --scopes \
            read,write` prints a token for a tenant, `shardgate token --admin` one for the admin endpoints \
            (run it with the server's `--data-dir`). Every error is `application/problem+json` with a \
            stable `code`.\n\n\
            Operators: the [console](/console) shows the fleet (shards, the load heat map, tenants, \
            jobs, the balancer, the audit log) and signs in with an admin token; it calls only these \
            admin endpoints.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&BearerAuth),
    components(schemas(Problem, crate::wire::envelope::UsageDayLine)),
    tags(
        (name = "records", description = "JSON records of a tenant's collections: put, get, delete and list in key order. \
            A bearer token bound to the tenant (scope `read` to read, `write` to write)."),
        (name = "blobs", description = "Binary objects of a tenant, streamed up and down, with single ranges and SHA-256 ETags. \
            A bearer token bound to the tenant."),
        (name = "indexes", description = "Secondary indexes over a field of a collection's records, and look-ups by value \
            or range of values (scope `manage` to define, `read` to look up)."),
        (name = "valet", description = "Valet keys: signed, time-limited URLs for one blob. Issue and revoke them with \
            the tenant's token; the `/valet/...` URLs themselves need no token (the signature is the credential)."),
        (name = "usage", description = "What a tenant stores (live records, blobs, index entries and their bytes), \
            kept exact by the shards in the same transaction as every write. A bearer token bound to the tenant \
            (scope `read`)."),
        (name = "admin", description = "Platform administration: tenants, shards, routing, moves, rebalances, jobs, \
            signing keys and the audit log (a token with scope `admin`: `shardgate token --admin`)."),
        (name = "operations", description = "Health, readiness and metrics (no authentication)."),
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
            "A JWT with claims `iss`, `exp`, `iat`, `tenant` and `scope` (space-separated: read, write, manage, \
             admin). With the embedded default, print one on the server's machine: `shardgate token --tenant \
             <id> --scopes read,write` for a tenant's data (the tenant must exist), `shardgate token --admin` for \
             the admin endpoints; pass the server's `--data-dir` if it is not `./shardgate-data`. Paste the token \
             here without `Bearer `."
                .to_owned(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// Completes every operation from the rules that hold for all of them, so no handler repeats
/// them: its tag (the URL family, `tag_of`); its bearer requirement, from the same access rule
/// the gatekeeper enforces ([`shardgate_gatekeeper::request::access`]) unless the handler states
/// a finer one; and the answers any operation can give, whatever its handler does: 401 (missing or invalid token) and 403 (missing scope) on operations that need a bearer
/// token, 404 `tenant_not_found` on tenant paths, 400 `invalid_request` (unless the handler
/// documents its own 400s), 414 `uri_too_long` and 431 `headers_too_large` (the request head's
/// limits); 429 `rate_limited`,
/// `tenant_concurrency_limit` and (but on valet URLs) `anonymous_concurrency_limit` (the front
/// door and its bulkheads) and 503 `overloaded` (load shedding), none of them on probes and
/// metrics, which are never limited; and 504 `request_timeout` (the request deadline; on writes
/// also 504 `write_outcome_unknown` and 408 `body_timeout`), all
/// problem+json. A handler that documents one of these itself (a more precise
/// description) keeps its own. Every error response a handler documents (4xx, 5xx) without a
/// body of its own is given the problem+json body, so handlers state only status and codes.
/// Routed operations (`is_routed`) document `x-shardgate-epoch` on each answer that may come
/// after routing (`add_epoch_header`).
pub fn add_shared_responses(openapi: &mut utoipa::openapi::OpenApi) {
    // axum's catch-all `{*path}` is the OpenAPI template `{path}` (its value may contain `/`).
    let paths = std::mem::take(&mut openapi.paths.paths);
    openapi.paths.paths = paths.into_iter().map(|(path, item)| (path.replace("{*", "{"), item)).collect();
    for (path, item) in openapi.paths.paths.iter_mut() {
        let throttled = !crate::wire::probes::is_unthrottled(path);
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
            let json_body = takes_json(operation);
            no_null_parameters(operation);
            let responses = &mut operation.responses.responses;
            // What the handler documents wins; these add the statuses it leaves out.
            if let Some(scopes) = &scopes {
                if tenant_path {
                    // A tenant's data also refuses tokens issued before the tenant was created.
                    add_missing(responses, &[Code::MissingToken, Code::InvalidToken, Code::TokenPredatesTenant]);
                } else {
                    add_missing(responses, &[Code::MissingToken, Code::InvalidToken]);
                }
                add_codes(responses, &[Code::TokenIssuedInFuture, Code::KeySetUnavailable, Code::KeySetExpired]);
                if tenant_path {
                    // A token of another tenant gets 404 too, so existence never leaks.
                    add_missing(responses, &[Code::TenantNotFound]);
                }
                if !scopes.is_empty() {
                    let scope = scopes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" or ");
                    let description = if tenant_path {
                        format!(
                            "`insufficient_scope`: the token lacks the {scope} scope; or `missing_tenant_claim`: \
                             the token is bound to no tenant (an admin token), and a tenant's data needs a token \
                             of that tenant"
                        )
                    } else {
                        format!("`insufficient_scope`: the token lacks the {scope} scope")
                    };
                    responses.entry("403".to_owned()).or_insert_with(|| RefOr::T(problem_response(&description)));
                }
                // A token naming a tenant with the platform `admin` scope is refused on every route.
                add_codes(responses, &[Code::TenantTokenWithAdminScope]);
            }
            if path.starts_with("/valet/") {
                // Counted in the URL's tenant's bulkhead, never in the anonymous one.
                add_missing(responses, &[Code::RateLimited, Code::TenantConcurrencyLimit]);
            } else if throttled {
                add_missing(
                    responses,
                    &[Code::RateLimited, Code::TenantConcurrencyLimit, Code::AnonymousConcurrencyLimit],
                );
            }
            if throttled {
                add_missing(responses, &[Code::Overloaded]);
            }
            // The request head's limits and the path rules of the front door (any path, before
            // routing), and the request deadline ([`crate::server::deadline`]): a body too slow to
            // arrive is 408, and a write given up on may or may not have been applied.
            add_codes(responses, &[Code::InvalidRequest, Code::InvalidPath, Code::UriTooLong, Code::HeadersTooLarge]);
            if json_body {
                // The JSON body extractor's refusals ([`crate::server::extract::ApiJson`]).
                add_codes(
                    responses,
                    &[Code::UnsupportedMediaType, Code::InvalidJson, Code::InvalidBody, Code::PayloadTooLarge],
                );
            }
            if matches!(method, "GET" | "HEAD") {
                add_missing(responses, &[Code::RequestTimeout]);
            } else {
                add_missing(responses, &[Code::RequestTimeout, Code::WriteOutcomeUnknown, Code::BodyTimeout]);
            }
            if is_routed(path) {
                add_epoch_header(responses);
            }
            if method == "HEAD" {
                // An answer to HEAD has no body, problems included (their headers say what a GET
                // would have carried).
                for response in responses.values_mut() {
                    if let RefOr::T(response) = response {
                        response.content.clear();
                    }
                }
            }
        }
    }
}

/// Whether the operation takes a JSON request body.
fn takes_json(operation: &utoipa::openapi::path::Operation) -> bool {
    operation.request_body.as_ref().is_some_and(|body| body.content.contains_key("application/json"))
}

/// A header or query parameter is absent or a value, never `null`: declared nullable (an
/// `Option` in Rust), generators would send the text `null`.
fn no_null_parameters(operation: &mut utoipa::openapi::path::Operation) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::schema::{Schema, SchemaType, Type};
    for parameter in operation.parameters.iter_mut().flatten() {
        if !matches!(parameter.parameter_in, ParameterIn::Header | ParameterIn::Query) {
            continue;
        }
        if let Some(RefOr::T(Schema::Object(object))) = &mut parameter.schema
            && let SchemaType::Array(types) = &object.schema_type
            && types.contains(&Type::Null)
        {
            let rest: Vec<Type> = types.iter().filter(|t| **t != Type::Null).cloned().collect();
            if let [only] = rest.as_slice() {
                object.schema_type = SchemaType::Type(only.clone());
            }
        }
    }
}

/// Whether the operations on `path` route to a shard, so that their answers carry
/// `x-shardgate-epoch`: records, blobs, index look-ups and valet URLs (not index definitions,
/// valet keys, admin or probes).
fn is_routed(path: &str) -> bool {
    match tag_of(path) {
        "records" | "blobs" => true,
        "indexes" => path.ends_with("/records"),
        "valet" => path.starts_with("/valet/"),
        _ => false,
    }
}

/// Statuses only ever answered before routing: the request head's limits, the token and scope,
/// the body's media type, the throttles.
const ANSWERED_BEFORE_ROUTING: [&str; 6] = ["401", "403", "414", "415", "429", "431"];

/// Documents `x-shardgate-epoch` on every response of a routed operation that may come after
/// routing ([`crate::wire::routed_epoch`]).
fn add_epoch_header(responses: &mut BTreeMap<String, RefOr<Response>>) {
    let epoch = HeaderBuilder::new()
        .schema(<u64 as utoipa::PartialSchema>::schema())
        .description(Some(
            "The shard-map epoch the request was routed on (decimal). On every answer given after routing, \
             problems included (such as 404 `record_not_found`, 412 or a shard's 503); absent from answers \
             given before it (a malformed request, a refused route such as 503 `shard_offline`). It grows \
             with every change of the map: a response with a higher epoch than the one before it was routed \
             on a newer map (after a resharding cut-over, on the new owner).",
        ))
        .build();
    for (status, response) in responses.iter_mut() {
        if let RefOr::T(response) = response
            && !ANSWERED_BEFORE_ROUTING.contains(&status.as_str())
        {
            response.headers.insert(EPOCH_HEADER.as_str().to_owned(), epoch.clone());
        }
    }
}

/// The scopes of an operation's bearer requirements, any of which will do (`None`: it needs no
/// token).
fn bearer_scopes(security: Option<&[utoipa::openapi::security::SecurityRequirement]>) -> Option<Vec<String>> {
    let mut scopes = Vec::new();
    let mut bearer = false;
    for requirement in security? {
        let Ok(value) = serde_json::to_value(requirement) else { continue };
        let Some(listed) = value.get("bearer").and_then(|s| s.as_array()) else { continue };
        bearer = true;
        scopes.extend(listed.iter().filter_map(|s| s.as_str().map(str::to_owned)));
    }
    bearer.then_some(scopes)
}

/// The tag (documentation section) of a path: its URL family.
fn tag_of(path: &str) -> &'static str {
    let family = path.strip_prefix("/v1/tenants/{tenant}/").map(|rest| {
        let mut segments = rest.split('/');
        match (segments.next(), segments.nth(1)) {
            (Some("collections"), Some("indexes")) => "indexes",
            (Some("collections"), _) => "records",
            (Some("blobs"), _) => "blobs",
            (Some("usage"), _) => "usage",
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
