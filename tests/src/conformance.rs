//! The [`conformance!`](crate::conformance) and [`on_both_engines!`](crate::on_both_engines)
//! macros: one story, a test per engine.

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

/// Generates, for each `async fn name(backend: Backend)` (a story that starts its own apps, with
/// its own settings), a module `name` with a `sqlite` and a `postgres` test on two worker
/// threads.
#[macro_export]
macro_rules! on_both_engines {
    ($($story:ident),+ $(,)?) => {$(
        mod $story {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$story($crate::Backend::Sqlite).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$story($crate::Backend::Postgres).await;
            }
        }
    )+};
}
