//! The listeners of one process beside its main one (the valet endpoint's, the admin plane's):
//! bound at start-up with an error that names their key, and served together with the main one,
//! under one shutdown signal and one connection cap ([`Connections`]).

use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

use crate::config::AdminListenerConfig;
use crate::server::connections::Connections;
use crate::server::tls::{Listener, ReloadCounts, ServerTls, acceptor};

/// A bound listener, what it serves, and its TLS (if any).
pub type Served = (TcpListener, Router, Option<ServerTls>);

/// `address` bound; the error names the configuration key it came from.
pub async fn bind(address: SocketAddr, key: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address).await.map_err(|e| anyhow::anyhow!("cannot listen on {address} ({key}): {e}"))
}

/// `admin.listen` bound, with the acceptor of `admin.tls` (its certificate counted as the
/// `admin` listener's); `None` without `admin.listen`. `admin.tls` without `admin.listen` is an
/// error, as is a certificate that cannot be loaded.
pub async fn bind_admin(
    config: &AdminListenerConfig,
    reloads: &ReloadCounts,
) -> anyhow::Result<Option<(TcpListener, Option<ServerTls>)>> {
    let Some(address) = config.listen else {
        if config.tls.is_some() {
            anyhow::bail!("admin.tls is set without admin.listen: set admin.listen, or remove admin.tls");
        }
        return Ok(None);
    };
    let tls = acceptor(config.tls.as_ref(), Listener::Admin, reloads)?;
    Ok(Some((bind(address, "admin.listen").await?, tls)))
}

/// `http(s)://<address>` of a bound listener.
pub fn base_url(listener: &TcpListener, tls: Option<&ServerTls>) -> Option<String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    Some(format!("{scheme}://{}", listener.local_addr().ok()?))
}

/// Serves `main` and every one of `others` until `shutdown` completes, then lets each drain (see
/// [`Connections::serve_until`]); returns once all have stopped.
pub async fn serve_together(
    connections: &Connections,
    main: Served,
    others: Vec<Served>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (listener, router, tls) = main;
    if others.is_empty() {
        connections.serve_until(listener, router, tls, shutdown).await;
        return Ok(());
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let signal = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let tasks: Vec<_> = others
        .into_iter()
        .map(|(listener, router, tls)| {
            let (connections, stopped) = (connections.clone(), signal(stopped.clone()));
            tokio::spawn(async move { connections.serve_until(listener, router, tls, stopped).await })
        })
        .collect();
    connections.serve_until(listener, router, tls, signal(stopped)).await;
    for task in tasks {
        task.await?;
    }
    Ok(())
}
