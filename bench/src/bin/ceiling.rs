//! The "HTTP ceiling" anchor of the load harness: the smallest useful axum server, answering
//! `GET /` with a fixed JSON body the size of a record envelope. Whatever the gateway does on top
//! of HTTP (authentication, routing, cache, database) can only make it slower than this.
//!
//! Usage: `ceiling [ADDR]` (default `127.0.0.1:18080`). Runs on the multi-threaded tokio runtime
//! like the gateway.

use axum::Router;
use axum::http::header;
use axum::routing::get;

/// About the size and shape of the gateway's record envelope.
const BODY: &str = r#"{"key":"k-00001","version":1,"updated_at":"2026-01-01T00:00:00Z","value":{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}}"#;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:18080".to_owned());
    let app = Router::new().route("/", get(|| async { ([(header::CONTENT_TYPE, "application/json")], BODY) }));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("ceiling listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await
}
