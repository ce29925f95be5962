//! `shardgate probe`: one GET of a probe URL, for health checks in images that carry no `curl`
//! (a container's `HEALTHCHECK`, an exec probe). It succeeds on a 2xx answer within the timeout
//! and fails (exit status 1, the reason on standard error) on anything else: another status, a
//! refused connection, a timeout. It reads no configuration, so a bad configuration cannot make
//! the probe of a running instance lie.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use shardgate_shard_router::db::humantime_serde::parse_duration;

/// The arguments of `shardgate probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The URL to GET; redirects are not followed.
    #[arg(long, default_value = "http://127.0.0.1:8080/readyz")]
    url: String,
    /// How long to wait for the answer, e.g. 2s, 500ms.
    #[arg(long, default_value = "2s")]
    timeout: String,
}

impl ProbeArgs {
    /// Probes once and prints the status.
    pub async fn run(self) -> anyhow::Result<()> {
        let timeout = parse_duration(&self.timeout).with_context(|| format!("--timeout {:?}", self.timeout))?;
        let status = probe(&self.url, timeout).await?;
        println!("{} {}", status.as_u16(), self.url);
        Ok(())
    }
}

/// GETs `url` and returns its status if it is a success; the error says why not.
pub async fn probe(url: &str, timeout: Duration) -> anyhow::Result<reqwest::StatusCode> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("cannot build the HTTP client")?;
    let response = client.get(url).send().await.map_err(|e| {
        let why = if e.is_timeout() { format!("no answer within {timeout:?}") } else { format!("{e}") };
        anyhow::anyhow!("{url}: {why}")
    })?;
    let status = response.status();
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    use axum::http::StatusCode;
    use axum::routing::get;

    /// A server whose `/ready` answers 200, `/down` 503, `/moved` 308 and `/slow` after 5 s.
    async fn server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = axum::Router::new()
            .route("/ready", get(|| async { StatusCode::OK }))
            .route("/down", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route("/moved", get(|| async { (StatusCode::PERMANENT_REDIRECT, [("location", "/ready")]) }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    StatusCode::OK
                }),
            );
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        base
    }

    #[tokio::test]
    async fn only_a_success_within_the_timeout_passes() {
        let base = server().await;
        let timeout = Duration::from_millis(500);
        assert_eq!(probe(&format!("{base}/ready"), timeout).await.unwrap(), 200);
        let down = probe(&format!("{base}/down"), timeout).await.unwrap_err().to_string();
        assert!(down.ends_with("/down answered 503 Service Unavailable"), "{down}");
        let moved = probe(&format!("{base}/moved"), timeout).await.unwrap_err().to_string();
        assert!(moved.contains("answered 308"), "a redirect is not followed: {moved}");
        let slow = probe(&format!("{base}/slow"), timeout).await.unwrap_err().to_string();
        assert!(slow.contains("no answer within 500ms"), "{slow}");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        assert!(probe(&format!("http://127.0.0.1:{port}/readyz"), timeout).await.is_err(), "nothing listens");
    }
}
