//! [`Application`]: builds the state, binds the listener (so tests can use port 0), assembles
//! routes and middleware, and serves until shut down.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use prometheus_client::registry::Registry;
use shardgate_cache::{RecordCache, RedisConfigError, RedisEndpoint, RedisLink, RedisTlsFiles};
use shardgate_gatekeeper::internal::InternalKey;
use shardgate_gatekeeper::throttle::{Limiter, RateLimitConfig, SharedBuckets};
use shardgate_gatekeeper::{AuthConfig, Authenticator, FetchedKeySets};
use shardgate_index_tables::{IndexError, IndexTables};
use shardgate_shard_router::ShardRouter;
use shardgate_shard_router::ShardStore;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower::layer::util::{Identity, Stack};
use utoipa::OpenApi;
use utoipa::openapi::OpenApi as OpenApiDoc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::app::App;
use crate::config::{Config, CorsConfig, LimitsConfig};
use crate::observability::metrics::{KeySetMetrics, Metrics};
use crate::observability::shard_metrics::ShardHealthMetrics;
use crate::routes::{admin, blobs, console, indexes, ops, records, usage, valet, valet_keys};
use crate::server::admission::{Gate, RedisBuckets};
use crate::server::bulkhead::{Bulkheads, Guarded, Limit};
use crate::server::client_address::ProxyTrust;
use crate::server::connections::Connections;
use crate::server::cross_origin::CrossOriginLayer;
use crate::server::deadline::DeadlineLayer;
use crate::server::edge::EdgeLayer;
use crate::server::front_door::FrontDoorLayer;
use crate::server::tls::{Listener, ReloadCounts, ServerTls, acceptor};
use crate::server::transfer_watch::TransferWatch;
use crate::startup::embedded::{embedded_issuer, load_or_create_secret};
use crate::startup::listeners::{Served, bind, bind_admin, serve_together};
use crate::wire::admin_plane::Plane;
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::{ApiDoc, add_shared_responses};

/// A built gateway with its listener bound.
#[derive(Debug)]
pub struct Application {
    listener: TcpListener,
    router: Router,
    /// The API listener's TLS (`tls`), if any.
    tls: Option<ServerTls>,
    /// The valet listener, its routes and its TLS (`valet.tls`).
    valet: Option<Served>,
    /// The admin plane's listener, its routes and its TLS (`admin.tls`).
    admin: Option<Served>,
    connections: Connections,
    app: Arc<App>,
}

/// Every route with its OpenAPI description, not yet bound to state.
pub fn api_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(data_routes())
        .merge(blob_routes())
        .merge(admin_routes())
        .merge(ops_routes())
}

/// Tenants' data.
fn data_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(records::get_record, records::put_record, records::delete_record))
        .routes(routes!(records::list_records))
        .routes(routes!(indexes::put_index, indexes::get_index, indexes::delete_index))
        .routes(routes!(indexes::lookup_records))
        .routes(routes!(valet_keys::issue_valet_key))
        .routes(routes!(valet_keys::revoke_valet_key))
        .routes(routes!(usage::get_usage))
}

/// Blobs: streamed, with their own size limits and deadline.
fn blob_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(blobs::put_blob, blobs::get_blob, blobs::head_blob, blobs::delete_blob))
        .routes(routes!(blobs::list_blobs))
        .merge(valet_routes())
}

/// The valet endpoint: no token, the signed URL is the credential.
fn valet_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(valet::valet_get, valet::valet_head, valet::valet_put))
}

/// Largest body of an admin request.
pub const ADMIN_BODY_BYTES: usize = 64 * 1024;

/// `/v1/admin`.
fn admin_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(admin::tenants::create_tenant, admin::tenants::list_tenants))
        .routes(routes!(admin::tenants::get_tenant, admin::tenants::update_tenant, admin::tenants::delete_tenant))
        .routes(routes!(admin::shards::register_shard, admin::shards::list_shards))
        .routes(routes!(admin::shards::get_shard, admin::shards::update_shard, admin::shards::delete_shard))
        .routes(routes!(admin::shards::command_breaker))
        .routes(routes!(admin::routing::get_shard_map))
        .routes(routes!(admin::routing::explain_route))
        .routes(routes!(admin::audit_log::list_audit))
        .routes(routes!(admin::holdings::get_tenant_holdings))
        .routes(routes!(admin::usage::get_tenant_usage))
        .routes(routes!(admin::usage_export::export_usage))
        .routes(routes!(admin::tiers::get_tier_quotas, admin::tiers::put_tier_quotas, admin::tiers::delete_tier_quotas))
        .routes(routes!(admin::balancer::get_balancer_plan))
        .routes(routes!(admin::balancer::get_balancer))
        .routes(routes!(admin::balancer::set_balancer_mode))
        .routes(routes!(admin::balancer::run_balancer))
        .routes(routes!(admin::balancer::approve_proposal))
        .routes(routes!(admin::instances::list_instances))
        .routes(routes!(admin::load::get_load))
        .routes(routes!(admin::load::get_heat_map))
        .routes(routes!(admin::request_health::get_request_health))
        .routes(routes!(admin::jobs::list_jobs))
        .routes(routes!(admin::jobs::get_job))
        .routes(routes!(admin::jobs::cancel_job))
        .routes(routes!(admin::moves::move_tenant))
        .routes(routes!(admin::collections::get_distribution, admin::collections::set_distribution))
        .routes(routes!(admin::collections::split_range))
        .routes(routes!(admin::collections::list_collections))
        .routes(routes!(admin::rebalance::rebalance))
        .routes(routes!(admin::rebalance::drain_shard))
        .routes(routes!(admin::index_audits::start_audit))
        .routes(routes!(admin::signing_keys::list_signing_keys))
        .routes(routes!(admin::signing_keys::rotate_signing_key))
        .routes(routes!(admin::signing_keys::retire_signing_key))
        .routes(routes!(admin::key_sets::refresh_key_sets))
}

/// Probes, metrics.
fn ops_routes() -> OpenApiRouter<Arc<App>> {
    probe_routes().merge(metrics_routes())
}

/// Liveness and readiness, served on every listener of the API.
fn probe_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(ops::healthz)).routes(routes!(ops::readyz))
}

/// The scrape, part of the admin plane.
fn metrics_routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(ops::metrics))
}

/// The OpenAPI document of this build (what `shardgate openapi` prints).
pub fn openapi_document() -> OpenApiDoc {
    let mut document = api_routes().split_for_parts().1;
    add_shared_responses(&mut document);
    crate::wire::pagination::reference_page_items(&mut document);
    crate::wire::closed_sets::declare_closed_sets(&mut document);
    crate::wire::admin_plane::note_admin_listener(&mut document);
    document
}

pub async fn not_found() -> ApiError {
    ApiError::from(Code::NotFound)
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::from(Code::MethodNotAllowed)
}

/// Where the rate limiter keeps its state: `rate_limits.redis_url` (with `rate_limits`' TLS
/// files), else the cache's Redis connection (`cache_link`), else the cache's Redis endpoint,
/// else (no Redis) nowhere shared.
pub fn rate_limit_store_for(
    rate_limits: &RateLimitConfig,
    cache_link: Option<RedisLink>,
    cache_endpoint: Option<&RedisEndpoint>,
) -> Result<Option<Arc<dyn SharedBuckets>>, RedisConfigError> {
    let timeout = Duration::from_millis(rate_limits.redis_timeout_ms.max(1));
    let files = RedisTlsFiles {
        ca_file: rate_limits.redis_ca_file.as_deref(),
        client_cert_file: rate_limits.redis_client_cert_file.as_deref(),
        client_key_file: rate_limits.redis_client_key_file.as_deref(),
    };
    let own = match &rate_limits.redis_url {
        Some(url) => Some(
            RedisEndpoint::parse(url, files, shardgate_cache::Section("rate_limits"))?
                .with_password_file(rate_limits.redis_password_file.clone())?,
        ),
        None => match files.first_set() {
            Some(key) => return Err(RedisConfigError::TlsFileWithoutUrl { section: "rate_limits", key }),
            None => None,
        },
    };
    let link = match (own, cache_link) {
        (Some(endpoint), _) => Some(RedisLink::start(&endpoint, timeout)?),
        (None, Some(link)) => Some(link),
        (None, None) => cache_endpoint.map(|endpoint| RedisLink::start(endpoint, timeout)).transpose()?,
    };
    Ok(link.map(|link| Arc::new(RedisBuckets::new(link)) as Arc<dyn SharedBuckets>))
}

/// What a failed index job records as its error: the detail of the problem the error becomes,
/// so an operator reading `/v1/admin/jobs/{id}` sees what a client would.
fn index_job_failure(error: IndexError) -> String {
    ApiError::from(error).detail().to_owned()
}

/// How often each instance sweeps the shards for blob garbage.
const JANITOR_EVERY: Duration = Duration::from_secs(60);

/// Deletes the chunks of aborted, superseded and abandoned blob uploads once they are older than
/// the grace period (a reader may still be streaming a superseded blob until then). Ends with the
/// app.
async fn blob_janitor(app: std::sync::Weak<App>) {
    use shardgate_shard_router::blobs::{BLOB_GARBAGE_GRACE_MS, BlobStore};
    loop {
        tokio::time::sleep(JANITOR_EVERY).await;
        let Some(strong) = app.upgrade() else { return };
        let cutoff = shardgate_shard_router::now_ms() - BLOB_GARBAGE_GRACE_MS;
        for (shard, state, db) in strong.router.shard_dbs() {
            if state == shardgate_shard_router::ShardState::Offline {
                continue;
            }
            match BlobStore::new(&db, &shard).collect_garbage(cutoff).await {
                Ok(0) => {}
                Ok(chunks) => tracing::info!(shard = %shard, chunks, "collected blob garbage"),
                Err(e) => tracing::warn!(shard = %shard, error = %e, "blob garbage collection failed"),
            }
        }
    }
}

/// How often every instance polls the catalog for a new map epoch or cache generation.
const CATALOG_POLL: Duration = Duration::from_millis(500);

/// Keeps the in-memory shard map and the cache generation in step with the catalog: polls every
/// 500 ms, and at once when another instance announces a change through Redis. Ends with the app.
/// The watchdog of the shard databases' circuit breakers ([`shardgate_shard_router::health`]):
/// probes stalled and open ones, until the router is dropped.
async fn watch_shard_health(router: std::sync::Weak<ShardRouter>) {
    let mut ticks = tokio::time::interval(shardgate_shard_router::router::HEALTH_TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticks.tick().await;
        let Some(router) = router.upgrade() else { return };
        router.tick_health();
    }
}

/// Runs the moves, rebalances and drains whose instance stopped renewing their lease (crashed,
/// killed): at start-up, then every half lease.
async fn adopt_moves(app: std::sync::Weak<App>, lease: Duration) {
    loop {
        let Some(strong) = app.upgrade() else { return };
        if let Err(e) = strong.mover.adopt_orphans().await {
            tracing::warn!(error = %e, "cannot look for move jobs to take over");
        }
        if let Err(e) = strong.rebalancer.adopt_orphans().await {
            tracing::warn!(error = %e, "cannot look for rebalance jobs to take over");
        }
        drop(strong);
        tokio::time::sleep(lease / 2).await;
    }
}

async fn follow_catalog(app: std::sync::Weak<App>) {
    loop {
        let Some(strong) = app.upgrade() else { return };
        // A frozen catalog must not stop this loop for good (nor keep the app alive).
        let refreshed = tokio::time::timeout(strong.statement_timeout, strong.router.refresh())
            .await
            .unwrap_or(Err(shardgate_shard_router::Error::Timeout));
        match refreshed {
            Ok(heads) => {
                strong.cache.set_generation(heads.cache_generation);
                strong.valet_checks.confirm(heads.valet_generation);
                if let Err(e) = strong.indexes.follow(heads.epoch).await {
                    tracing::warn!(error = %e, "cannot reload index definitions");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot poll the catalog for shard map changes"),
        }
        let after_outage =
            strong.cache.move_generation_on_after_outage(strong.router.catalog().bump_cache_generation());
        if let Err(e) = after_outage.await {
            tracing::warn!(error = %e, "cannot move the cache generation on after a Redis outage; retried next poll");
        }
        let hint = strong.cache.clone();
        drop(strong);
        tokio::select! {
            () = tokio::time::sleep(CATALOG_POLL) => {}
            () = hint.epoch_hint().notified() => {}
        }
    }
}

/// How long the start-up waits for the first fetch of the issuers' key sets.
pub(crate) const FIRST_KEY_SETS_WAIT: Duration = Duration::from_secs(10);

/// How long start-up waits for the cache's first connection attempt to Redis (which gives up
/// after 2 s, then pings): a Redis that does not answer by then does not stop the start-up.
const FIRST_REDIS_PROBE_WAIT: Duration = Duration::from_secs(3);

/// The token verifier of `auth` (the embedded issuer, with its secret in `data_dir`, when no
/// issuer is configured) and the key sets it fetches. An issuer's keys fetched from its identity
/// provider are fetched in the background; starting with them saves the first requests a wait.
/// A provider that does not answer within [`FIRST_KEY_SETS_WAIT`] does not stop the start-up: its
/// tokens get 401 `key_set_unavailable` until it does.
pub(crate) async fn authenticator(
    auth: &AuthConfig,
    data_dir: &Path,
) -> anyhow::Result<(Authenticator, FetchedKeySets)> {
    let default_issuer =
        if auth.issuers.is_empty() { Some(embedded_issuer(load_or_create_secret(data_dir)?)) } else { None };
    let authenticator = Authenticator::from_config(auth, default_issuer)?;
    authenticator.first_key_sets(FIRST_KEY_SETS_WAIT).await;
    let key_sets = authenticator.fetched_key_sets();
    Ok((authenticator, key_sets))
}

/// The metrics registry, with what `register` made while registering its metrics in it (the
/// parts of the server that count into it).
pub(crate) fn metrics_with<T>(register: impl FnOnce(&mut Registry) -> T) -> (Metrics, T) {
    let mut made = None;
    let metrics = Metrics::new(|registry| made = Some(register(registry)));
    (metrics, made.expect("the metrics registry calls back once"))
}

impl Application {
    /// Opens storage, builds the state and binds `config.listen`.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Arc::new(shardgate_shard_router::SystemClock)).await
    }

    /// [`Application::build`] with the clock time-bound decisions read (tests move it forward
    /// instead of sleeping).
    pub async fn build_with_clock(
        config: Config,
        clock: Arc<dyn shardgate_shard_router::Clock>,
    ) -> anyhow::Result<Self> {
        config.storage.pool.breaker.validate().map_err(anyhow::Error::msg)?;
        config.storage.load.validate().map_err(anyhow::Error::msg)?;
        config.storage.moves.validate().map_err(anyhow::Error::msg)?;
        config.storage.validate_latency_budgets().map_err(anyhow::Error::msg)?;
        config.storage.validate_replica_reads().map_err(anyhow::Error::msg)?;
        config.storage.batching.validate().map_err(anyhow::Error::msg)?;
        let moves = &config.storage.moves;
        if moves.adaptive_pace && moves.pace_floor() < moves.pace_floor_bytes_per_second {
            tracing::warn!(
                pace_floor_bytes_per_second = moves.pace_floor_bytes_per_second,
                copy_bytes_per_second = moves.copy_bytes_per_second,
                "storage.moves.pace_floor_bytes_per_second is above the ceiling, \
                 storage.moves.copy_bytes_per_second: moves copy at the ceiling throughout"
            );
        }
        config.balancer.validate().map_err(anyhow::Error::msg)?;
        crate::observability::telemetry::start_traces(&config.log, &config.telemetry, &config.trusted_proxies)?;
        config.instances.validate().map_err(anyhow::Error::msg)?;
        config.usage.validate().map_err(anyhow::Error::msg)?;
        for (key, configured, effective) in config.limits.caps_above_bound() {
            tracing::warn!(
                key,
                configured,
                effective,
                max_concurrent_requests = config.limits.max_concurrent_requests,
                "{key} = {configured} would let one caller take more than half of \
                 limits.max_concurrent_requests; {effective} is in force"
            );
        }
        let router = Arc::new(
            ShardRouter::open(&config.storage, &config.data_dir).await?.with_tier_quotas(config.quotas.tier_quotas()),
        );
        let (auth, key_sets) = authenticator(&config.auth, &config.data_dir).await?;
        let heads = router.catalog().heads().await?;
        let mut cache_config = config.cache.clone();
        if cache_config.l1.enabled.is_none() && cache_config.redis_url.is_none() && config.storage.catalog_url.is_some()
        {
            // A shared catalog means several instances may run, and without Redis nothing would
            // carry invalidations between their L1 caches.
            tracing::info!(
                "record cache off: a shared catalog without Redis (set cache.l1.enabled = true for one instance)"
            );
            cache_config.l1.enabled = Some(false);
        }
        let valet_refusals = prometheus_client::metrics::family::Family::default();
        let load_flusher = shardgate_shard_router::balance::LoadFlusher::new(&router, config.storage.load.clone());
        let copied_bytes = Arc::new(shardgate_shard_router::mover::CopiedBytes::default());
        let quota_refusals = Arc::new(crate::observability::usage_metrics::QuotaRefusals::default());
        // One name per instance: its load windows', its leases', its registry row's, its quota
        // allowances', its usage samples' and audits'.
        let name = load_flusher.as_ref().map_or_else(
            || format!("instance-{}", uuid::Uuid::new_v4().simple()),
            |flusher| flusher.instance().to_owned(),
        );
        let usage_audit = shardgate_shard_router::usage::audit::UsageAudit::new(
            &router,
            config.usage.audit(),
            name.clone(),
            clock.clone(),
        );
        let proxies = ProxyTrust::new(config.trusted_proxies.clone(), config.proxy_protocol, config.forwarded_header)?
            .behind_gatekeeper(config.trusted);
        let (metrics, registered) = metrics_with(|registry| {
            let connections = Connections::new(&config.limits, registry).map(|c| c.trusting(proxies));
            let tls_reloads = ReloadCounts::new(registry);
            let bulkheads = Bulkheads::new(registry);
            let fan_outs = Bulkheads::guarding(Guarded::FanOuts, registry);
            let transfers = TransferWatch::new(config.limits.transfer_idle_timeout, registry);
            let valet_audit = crate::valet::audit::ValetAudit::start(
                router.catalog().clone(),
                config.valet.audit_queue_rows,
                clock.clone(),
                registry,
            );
            registry.register("valet_refusals", "Valet requests refused, by code", valet_refusals.clone());
            registry.register_collector(Box::new(ShardHealthMetrics {
                router: router.clone(),
                storage: config.storage.clone(),
            }));
            registry.register_collector(Box::new(crate::observability::load_metrics::ShardLoadMetrics(
                router.clone(),
                load_flusher.clone(),
            )));
            registry.register_collector(Box::new(KeySetMetrics(key_sets)));
            registry.register_collector(Box::new(crate::observability::job_metrics::JobMetrics::new(
                router.clone(),
                copied_bytes.clone(),
            )));
            registry.register_collector(Box::new(crate::observability::usage_metrics::UsageMetrics::new(
                router.clone(),
                quota_refusals.clone(),
                usage_audit.clone(),
            )));
            let chunks = crate::blobs::chunk_cache::ChunkCache::new(
                config.blobs.chunk_cache_bytes,
                config.blobs.read_window_bytes,
                registry,
            );
            let indexes = Arc::new(IndexTables::new(router.clone(), registry, index_job_failure));
            let parts = RecordCache::start(cache_config, heads.cache_generation, registry)
                .map_err(anyhow::Error::from)
                .and_then(|cache| {
                    let cache_endpoint = config.cache.redis_endpoint()?.filter(|_| config.cache.enabled);
                    let shared =
                        rate_limit_store_for(&config.rate_limits, cache.redis_link(), cache_endpoint.as_ref())?;
                    let limiter = Limiter::new(config.rate_limits.clone(), shared)?;
                    Ok((cache, Gate::new(auth, limiter, registry)))
                });
            (parts, indexes, chunks, valet_audit, connections, bulkheads, fan_outs, transfers, tls_reloads)
        });
        let (parts, indexes, chunks, valet_audit, connections, bulkheads, fan_outs, transfers, tls_reloads) =
            registered;
        let (cache, gate) = parts?;
        // The first /readyz then says why Redis cannot be reached, if it cannot.
        cache.first_probe(FIRST_REDIS_PROBE_WAIT).await;
        let connections = connections?;
        let tls = acceptor(config.tls.as_ref(), Listener::Api, &tls_reloads)?;
        let valet_tls = match config.valet.listen {
            Some(_) => acceptor(config.valet.tls.as_ref(), Listener::Valet, &tls_reloads)?,
            None if config.valet.tls.is_some() => {
                anyhow::bail!("valet.tls is set without valet.listen: set valet.listen, or remove valet.tls")
            }
            None => None,
        };
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        let valet_listener = match config.valet.listen {
            Some(address) => Some(bind(address, "valet.listen").await?),
            None => None,
        };
        let admin_listener = bind_admin(&config.admin, &tls_reloads).await?;
        let mut valet_config = config.valet.clone();
        if valet_config.public_url.is_none() {
            let address = valet_listener.as_ref().unwrap_or(&listener).local_addr()?;
            let https = if valet_listener.is_some() { valet_tls.is_some() } else { tls.is_some() };
            let scheme = if https { "https" } else { "http" };
            valet_config.public_url = Some(format!("{scheme}://{address}"));
        }
        let trusted = if config.trusted {
            let secret = config.internal.secret.clone().ok_or_else(|| {
                anyhow::anyhow!(
                    "`serve --trusted` needs internal.secret (SHARDGATE_INTERNAL__SECRET), shared with the gatekeeper"
                )
            })?;
            Some(InternalKey::new(secret)?)
        } else {
            None
        };
        let (router_for_moves, cache_for_moves) = (router.clone(), cache.clone());
        let quota_gate = Arc::new(shardgate_shard_router::usage::grants::QuotaGate::new(router.clone(), name.clone()));
        let collection_gate = Arc::new(shardgate_shard_router::usage::collections::CollectionGate::new(router.clone()));
        let daily_usage = shardgate_shard_router::usage::daily::DailyUsage::new(
            &router,
            config.usage.daily(),
            name.clone(),
            clock.clone(),
        );
        let mover = {
            let cache = cache_for_moves;
            shardgate_shard_router::mover::Mover::named(
                router_for_moves,
                name.clone(),
                std::sync::Arc::new(move |epoch| {
                    let cache = cache.clone();
                    Box::pin(async move { cache.announce_epoch(epoch).await })
                }),
                copied_bytes,
            )
        };
        let balancer = shardgate_shard_router::balance::Balancer::new(
            mover.clone(),
            config.balancer.clone(),
            config.storage.load.window,
        );
        let app = Arc::new(App {
            router,
            write_ends: crate::app::WriteEnds::start(&cache),
            cache,
            gate,
            trusted,
            limits: config.limits.clone(),
            blobs: config.blobs.clone(),
            chunks,
            valet: valet_config,
            signing_keys: crate::valet::signing_keys::SigningKeys::default(),
            valet_checks: crate::valet::checks::ValetChecks::default(),
            indexes,
            rebalancer: shardgate_shard_router::rebalancer::Rebalancer::new(mover.clone()),
            mover,
            valet_refusals,
            valet_audit,
            metrics: Arc::new(metrics),
            clock,
            probe_timeout: config.storage.pool.probe_timeout,
            statement_timeout: config.storage.pool.statement_timeout,
            bulkheads,
            fan_outs,
            fan_out_budget: crate::server::fan_out_budget::FanOutBudget::new(
                config.limits.tenant_fan_out_shard_reads_per_second,
            ),
            transfers,
            load: config.storage.load.clone(),
            balancer,
            load_flusher,
            quota_gate,
            collection_gate,
            quota_refusals,
            daily_usage,
            usage_audit,
        });
        app.indexes.follow(app.router.epoch()).await.map_err(|e| anyhow::anyhow!("{}", ApiError::from(e).detail()))?;
        for job in app.router.catalog().running_jobs().await? {
            use shardgate_shard_router::{mover::MOVE_JOB_KINDS, rebalancer::REBALANCE_JOB};
            if MOVE_JOB_KINDS.contains(&job.kind.as_str()) || job.kind == REBALANCE_JOB {
                // `adopt_moves` takes these over once their lease runs out.
                tracing::info!(
                    job = job.id,
                    kind = job.kind,
                    target = job.target,
                    "a move job is left running; adopting it"
                );
                continue;
            }
            tracing::info!(job = job.id, kind = job.kind, target = job.target, "resuming a job");
            let (id, kind) = (job.id.clone(), job.kind.clone());
            if !app.indexes.resume_job(job) {
                tracing::warn!(job = id, kind, "unknown job kind left running");
            }
        }
        tokio::spawn(adopt_moves(Arc::downgrade(&app), app.router.move_config().lease));
        tokio::spawn(follow_catalog(Arc::downgrade(&app)));
        tokio::spawn(watch_shard_health(Arc::downgrade(&app.router)));
        tokio::spawn(blob_janitor(Arc::downgrade(&app)));
        if let Some(flusher) = app.load_flusher.clone() {
            flusher.spawn();
        }
        app.balancer.spawn();
        app.daily_usage.spawn();
        app.usage_audit.spawn();
        crate::startup::instance_report::spawn(&app, &config.instances, listener.local_addr()?);
        // With an admin listener, each listener serves its own plane; without, the one serves both.
        let (public, admin) = match admin_listener {
            Some(_) => (Some(Plane::Public), Some(Plane::Admin)),
            None => (None, None),
        };
        let router = Self::router(app.clone(), &config.limits, &config.cors, public)?;
        let valet = match valet_listener {
            Some(listener) => {
                Some((listener, Self::valet_router(app.clone(), &config.limits, &config.cors)?, valet_tls))
            }
            None => None,
        };
        let admin = match admin_listener {
            Some((listener, tls)) => {
                Some((listener, Self::router(app.clone(), &config.limits, &config.cors, admin)?, tls))
            }
            None => None,
        };
        Ok(Self { listener, router, tls, valet, admin, connections, app })
    }

    /// The valet endpoint alone, for its own listener.
    fn valet_router(app: Arc<App>, limits: &LimitsConfig, cors: &CorsConfig) -> anyhow::Result<Router> {
        let (routes, _) = valet_routes().split_for_parts();
        let routes = routes
            .layer(DeadlineLayer::new(limits.transfer_timeout))
            .route("/healthz", axum::routing::get(ops::healthz))
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed);
        let edge = EdgeLayer::new(limits.max_concurrent_requests, Some(app.metrics.clone()))
            .counting_shed(app.bulkheads.refusals(Limit::Global))
            .recording_health(app.load_flusher.as_ref().map(|f| f.request_meter().clone()));
        let front = edge_stack(edge, cors, &app.valet.cors_allowed_origins)?.layer(FrontDoorLayer::new(app.clone()));
        Ok(routes.layer(front).with_state(app))
    }

    /// The routes of a listener of the API: with `plane` unset (no admin listener), all of them;
    /// on [`Plane::Public`], all but the admin plane ([`crate::wire::admin_plane`]), whose paths
    /// are then unknown there; on [`Plane::Admin`], the admin plane and the probes.
    fn router(app: Arc<App>, limits: &LimitsConfig, cors: &CorsConfig, plane: Option<Plane>) -> anyhow::Result<Router> {
        // One semaphore for every route: the limit is global to the instance (the caps per
        // tenant are the front door's).
        // Each group of routes has its own deadline and body limit.
        // In one `Router::layer` (see `edge_stack`).
        let group = |routes: OpenApiRouter<Arc<App>>, timeout: Duration, body_limit: usize| {
            routes.split_for_parts().0.layer(
                ServiceBuilder::new().layer(DeadlineLayer::new(timeout)).layer(DefaultBodyLimit::max(body_limit)),
            )
        };
        let mut routes = Router::new().merge(group(probe_routes(), limits.request_timeout, ADMIN_BODY_BYTES));
        if plane != Some(Plane::Admin) {
            routes = routes
                .merge(group(data_routes(), limits.request_timeout, limits.max_record_bytes))
                .merge(group(blob_routes(), limits.transfer_timeout, usize::MAX))
                .merge(
                    Router::from(SwaggerUi::new("/docs").url("/openapi.json", openapi_document()).config(
                        // No validator: Swagger UI would send the document's URL to validator.swagger.io.
                        utoipa_swagger_ui::Config::default().validator_url("none"),
                    ))
                    .layer(axum::middleware::map_response(console::forbid_framing)),
                );
        }
        if plane != Some(Plane::Public) {
            routes = routes
                .merge(group(admin_routes(), limits.admin_timeout, ADMIN_BODY_BYTES))
                .merge(group(metrics_routes(), limits.request_timeout, ADMIN_BODY_BYTES))
                .route("/console", axum::routing::get(console::page))
                .route("/console/console.js", axum::routing::get(console::script))
                .route("/console/instances.js", axum::routing::get(console::instances_script))
                .route("/console/health.js", axum::routing::get(console::health_script))
                .route("/console/console.css", axum::routing::get(console::style));
        }
        let routes = routes.fallback(not_found).method_not_allowed_fallback(method_not_allowed);
        let edge = EdgeLayer::new(limits.max_concurrent_requests, Some(app.metrics.clone()))
            .counting_shed(app.bulkheads.refusals(Limit::Global))
            .recording_health(app.load_flusher.as_ref().map(|f| f.request_meter().clone()));
        let routes = routes.layer(
            edge_stack(edge, cors, &app.valet.cors_allowed_origins)?
                .layer(FrontDoorLayer::new(app.clone()))
                .layer(tower::util::MapResponseLayer::new(crate::wire::json_newline::end_json_with_newline)),
        );
        // Outermost: the edge and the front door read which listener a request came in on.
        let routes = match plane {
            Some(plane) => routes.layer(axum::Extension(plane)),
            None => routes,
        };
        Ok(routes.with_state(app))
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// `http://<address>`, or `https://<address>` when the API listener has `tls`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.local_addr())
    }

    /// The valet listener's `http(s)://<address>`, if it has a listener of its own.
    pub fn valet_base_url(&self) -> Option<String> {
        let (listener, _, tls) = self.valet.as_ref()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        Some(format!("{scheme}://{}", listener.local_addr().ok()?))
    }

    /// The bound port (useful with `listen = 127.0.0.1:0`).
    pub fn port(&self) -> u16 {
        self.local_addr().port()
    }

    /// The shared state (for embedding and tests).
    pub fn state(&self) -> Arc<App> {
        self.app.clone()
    }

    /// Serves until `shutdown` completes, then lets in-flight requests finish (up to
    /// [`DRAIN_TIMEOUT`](crate::server::connections::DRAIN_TIMEOUT)), writes the valet audit rows
    /// still queued (up to [`CLOSE_WITHIN`](crate::valet::audit::CLOSE_WITHIN)) and stores the
    /// load windows not yet stored, the open one too, and the daily usage counted.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let app = self.app.clone();
        let served = self.serve(shutdown).await;
        app.valet_audit.close().await;
        if let Some(flusher) = &app.load_flusher {
            flusher.flush_all().await;
        }
        if let Err(e) = app.daily_usage.flush().await {
            tracing::warn!(error = %e, "cannot store the daily usage counted since the last flush");
        }
        crate::startup::instance_report::stopped(&app).await;
        // Other instances may use at once what this one's quota allowances held back.
        if let Err(e) = app.quota_gate.release().await {
            tracing::warn!(error = %e, "cannot give the quota allowances up");
        }
        // Another instance takes the balancer over at once, not when the lease runs out.
        if let Err(e) = app.balancer.release().await {
            tracing::warn!(error = %e, "cannot give the balancer's lease up");
        }
        served
    }

    async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        // One shutdown signal for every listener, and one cap on connections over all of them.
        let others = self.valet.into_iter().chain(self.admin).collect();
        serve_together(&self.connections, (self.listener, self.router, self.tls), others, shutdown).await
    }

    /// The admin listener's `http(s)://<address>`, if the admin plane has one (`admin.listen`).
    pub fn admin_base_url(&self) -> Option<String> {
        let (listener, _, tls) = self.admin.as_ref()?;
        crate::startup::listeners::base_url(listener, tls.as_ref())
    }

    /// The address of the valet endpoint's own listener, if configured.
    pub fn valet_addr(&self) -> Option<SocketAddr> {
        self.valet.as_ref().and_then(|(listener, _, _)| listener.local_addr().ok())
    }
}

/// The layers every front of shardgate has (the gateway, its valet listener and the standalone
/// gatekeeper): its [`EdgeLayer`] (load shedding, request id, span, panic guard, `nosniff`,
/// metrics) inside CORS ([`crate::server::cross_origin`]). A front adds its own layers inside these (`.layer(..)`) and gives the
/// stack to its router in one `Router::layer`: each call of that wraps every route in a boxed
/// service, and a request clones every box below the one it enters, so levels cost per request.
pub fn edge_stack(
    edge: EdgeLayer,
    cors: &CorsConfig,
    valet_origins: &[String],
) -> anyhow::Result<ServiceBuilder<Stack<EdgeLayer, Stack<CrossOriginLayer, Identity>>>> {
    Ok(ServiceBuilder::new().layer(CrossOriginLayer::new(cors, valet_origins)?).layer(edge))
}
