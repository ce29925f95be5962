//! The [`conformance!`](crate::conformance) macro: one story, a test per engine.

/// Generates, for each `async fn name(app: TestApp)`, a module `name` with a `sqlite` and a
/// `postgres` test, each on a fresh app of that backend.
#[macro_export]
macro_rules! conformance {
    ($($story:ident),+ $(,)?) => {$(
        mod $story {
            #[tokio::test]
            async fn sqlite() {
                super::$story($crate::TestApp::spawn($crate::Backend::Sqlite).await).await;
            }

            #[tokio::test]
            async fn postgres() {
                super::$story($crate::TestApp::spawn($crate::Backend::Postgres).await).await;
            }

            /// Through a standalone gatekeeper in front of a trusted backend (SQLite).
            #[tokio::test]
            async fn via_gatekeeper() {
                super::$story($crate::TestApp::spawn_via_gatekeeper($crate::Backend::Sqlite).await).await;
            }
        }
    )+};
}
