//! The admin plane's paths (`/v1/admin/*`, `/console` and its files, `/metrics`) and which
//! listener a request came in on when the admin plane has one of its own (`admin.listen`).
//!
//! With an admin listener, start-up marks every request with its [`Plane`]: the public
//! listener then serves none of these paths, and must answer them exactly as it answers an
//! unknown path (throttled and counted like one, 404 `not_found`), so that a caller cannot tell
//! they exist there. Without one, requests carry no mark and everything is as it always was.
//! The OpenAPI document says so on each operation of the admin plane ([`note_admin_listener`]).
//! Must not know anything of requests but their path and that mark.

use axum::http::Extensions;

use crate::wire::probes::is_unthrottled;

/// The listener a request came in on, when the admin plane has a listener of its own (an
/// extension start-up puts on every request of both listeners; absent without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plane {
    /// The public listener: the admin plane's paths are unknown here.
    Public,
    /// The admin listener: the admin plane, with probes. Admin tokens are verified here even by
    /// `serve --trusted` (no gatekeeper forwards these paths).
    Admin,
}

impl Plane {
    /// The mark of a request, if its instance has an admin listener.
    pub fn of(extensions: &Extensions) -> Option<Self> {
        extensions.get::<Plane>().copied()
    }
}

/// Whether `path` belongs to the admin plane: the admin API, the console and its files, and the
/// metrics scrape.
pub fn is_admin_plane(path: &str) -> bool {
    let under = |prefix: &str| path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    under("/v1/admin") || under("/console") || path == "/metrics"
}

/// [`is_unthrottled`] on the listener a request came in on: on a public listener whose admin
/// plane is apart, `/metrics` is an unknown path, throttled and counted like any other.
pub fn is_unthrottled_here(path: &str, extensions: &Extensions) -> bool {
    is_unthrottled(path) && !(Plane::of(extensions) == Some(Plane::Public) && is_admin_plane(path))
}

/// What the OpenAPI document says on each operation of the admin plane.
pub const ADMIN_LISTENER_NOTE: &str = "Served on the admin listener (`admin.listen`) when one is configured; \
     the public listener then answers 404 `not_found`, as for any unknown path.";

/// Adds [`ADMIN_LISTENER_NOTE`] to the description of every operation of the admin plane.
pub fn note_admin_listener(openapi: &mut utoipa::openapi::OpenApi) {
    for (_, item) in openapi.paths.paths.iter_mut().filter(|(path, _)| is_admin_plane(path)) {
        let operations =
            [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch, &mut item.head];
        for operation in operations.into_iter().flatten() {
            operation.description = Some(match operation.description.take() {
                Some(description) => format!("{description}\n\n{ADMIN_LISTENER_NOTE}"),
                None => ADMIN_LISTENER_NOTE.to_owned(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_plane_is_its_three_path_families_and_nothing_that_merely_starts_alike() {
        for path in ["/v1/admin", "/v1/admin/tenants", "/console", "/console/console.js", "/metrics"] {
            assert!(is_admin_plane(path), "{path}");
        }
        for path in ["/v1/administrator", "/consoles", "/metrics/x", "/v1/tenants/admin", "/healthz", "/readyz", "/"] {
            assert!(!is_admin_plane(path), "{path}");
        }
    }

    #[test]
    fn metrics_are_throttled_like_an_unknown_path_only_on_a_public_listener_with_the_admin_plane_apart() {
        let marked = |plane: Option<Plane>| {
            let mut extensions = Extensions::new();
            if let Some(plane) = plane {
                extensions.insert(plane);
            }
            extensions
        };
        assert!(is_unthrottled_here("/metrics", &marked(None)));
        assert!(is_unthrottled_here("/metrics", &marked(Some(Plane::Admin))));
        assert!(!is_unthrottled_here("/metrics", &marked(Some(Plane::Public))));
        assert!(is_unthrottled_here("/readyz", &marked(Some(Plane::Public))));
    }
}
