//! `GET /v1/admin/load` and `GET /v1/admin/load/heatmap`: where the fleet's load lands, by shard,
//! vshard and tenant, over time (the load picture: `shardgate_shard_router::balance`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use shardgate_shard_router::Strategy;
use shardgate_shard_router::balance::{self, HeatMap, LoadPicture};
use shardgate_shard_router::storage::meter::{Counters, NO_VSHARD, Work};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::spans::{default_step, span_length, span_of, step_length};
use crate::wire::timestamps::rfc3339;

/// The most vshards and tenants a picture lists.
const MAX_TOP: usize = 100;

/// Rates over a span: each measure per second.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Rates {
    /// Statements that read, per second.
    pub reads_per_s: f64,
    /// Statements that wrote, per second.
    pub writes_per_s: f64,
    /// Rows read per second.
    pub rows_read_per_s: f64,
    /// Rows written per second.
    pub rows_written_per_s: f64,
    /// Bytes read per second (record values, blob chunks).
    pub bytes_read_per_s: f64,
    /// Bytes written per second.
    pub bytes_written_per_s: f64,
    /// Statement time per second (ms/s): the shard's time this load took, waiting for a
    /// connection included; 1000 is one statement in progress all the time.
    pub statement_ms_per_s: f64,
    /// Failed or refused statements per second.
    pub errors_per_s: f64,
}

impl Rates {
    fn of(c: &Counters, seconds: f64) -> Self {
        let per_s = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
        Self {
            reads_per_s: per_s(c.reads),
            writes_per_s: per_s(c.writes),
            rows_read_per_s: per_s(c.rows_read),
            rows_written_per_s: per_s(c.rows_written),
            bytes_read_per_s: per_s(c.bytes_read),
            bytes_written_per_s: per_s(c.bytes_written),
            statement_ms_per_s: per_s(c.statement_us) / 1000.0,
            errors_per_s: per_s(c.errors),
        }
    }
}

/// Counts over a span, and the same as rates.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Measures {
    /// Statements that read.
    pub reads: u64,
    /// Statements that wrote.
    pub writes: u64,
    /// Rows read.
    pub rows_read: u64,
    /// Rows written.
    pub rows_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Statement time (ms).
    pub statement_ms: f64,
    /// Failed or refused statements.
    pub errors: u64,
    /// The same per second.
    #[serde(flatten)]
    pub rates: Rates,
}

impl Measures {
    fn of(c: &Counters, seconds: f64) -> Self {
        Self {
            reads: c.reads,
            writes: c.writes,
            rows_read: c.rows_read,
            rows_written: c.rows_written,
            bytes_read: c.bytes_read,
            bytes_written: c.bytes_written,
            statement_ms: c.statement_us as f64 / 1000.0,
            errors: c.errors,
            rates: Rates::of(c, seconds),
        }
    }
}

/// A point of a time series: the rates of one step.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Point {
    /// The step's start, RFC 3339.
    pub start: String,
    /// Its rates.
    #[serde(flatten)]
    pub rates: Rates,
}

/// Load by whose work it is.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkMeasures {
    /// Clients' requests (records, blobs, index entries, listings).
    pub request: Measures,
    /// Jobs moving data (tenant and vshard moves, redistributions, rebalances, drains).
    pub moves: Measures,
    /// The gateway's upkeep (index backfills and audits, garbage collection, purges).
    pub maintenance: Measures,
}

impl WorkMeasures {
    fn of(load: &balance::picture::WorkLoad, seconds: f64) -> Self {
        Self {
            request: Measures::of(&load.request, seconds),
            moves: Measures::of(&load.moves, seconds),
            maintenance: Measures::of(&load.maintenance, seconds),
        }
    }
}

/// One shard's load.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ShardLoadView {
    /// The shard.
    pub shard: String,
    /// Whether it is still registered (load of a shard removed since is listed after the others).
    pub registered: bool,
    /// Its share of the fleet's statement time (every kind of work), 0 to 1.
    pub share_of_statement_time: f64,
    /// Its load by kind of work.
    #[serde(flatten)]
    pub load: WorkMeasures,
    /// Its load of every kind per step (with `step`).
    pub series: Vec<Point>,
}

/// One vshard's request load on one shard.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VshardLoadView {
    /// The vshard; `null` for load that no vshard placed on the shard (pinned tenants' data,
    /// range-distributed collections).
    pub vshard: Option<u32>,
    /// The shard the load landed on.
    pub shard: String,
    /// The shard that owns the vshard now (differs from `shard` after a move).
    pub owner: Option<String>,
    /// Its request load.
    #[serde(flatten)]
    pub load: Measures,
    /// Per step (with `step`).
    pub series: Vec<Point>,
}

/// One tenant's request load, as the windows kept it (each window keeps its heaviest tenants).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantLoadView {
    /// The tenant.
    pub tenant: String,
    /// Its home vshard (`h(tenant) mod V`, whose shard holds its data), on this instance's
    /// shard map: the heat map's row its home load falls in. `null` when it is pinned to a
    /// shard (its load is charged to no vshard) or no longer exists.
    pub vshard: Option<u32>,
    /// The shards its load landed on.
    pub shards: Vec<String>,
    /// Its request load.
    #[serde(flatten)]
    pub load: Measures,
    /// How much statement time (ms) its rank may have inherited from lighter tenants it
    /// displaced in a window's top list: 0 means its counts are exact.
    pub overcount_ms: f64,
    /// Per step (with `step`).
    pub series: Vec<Point>,
}

/// The fleet's load over a span of time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LoadView {
    /// The span's start, RFC 3339 (a window boundary).
    pub since: String,
    /// Its end, RFC 3339: the end of the last window that has closed.
    pub until: String,
    /// Its length (seconds): the rates are the counts divided by it.
    pub window_s: f64,
    /// The width of a series' step (seconds), if series were asked for.
    pub step_s: Option<f64>,
    /// How many instances stored load in the span (the fleet's load is their sum).
    pub instances: usize,
    /// The fleet's load by kind of work.
    pub fleet: WorkMeasures,
    /// Every shard, in the map's order.
    pub shards: Vec<ShardLoadView>,
    /// The vshards with the most request statement time, heaviest first (at most `top`).
    pub vshards: Vec<VshardLoadView>,
    /// The tenants with the most request statement time, heaviest first (at most `top`).
    pub tenants: Vec<TenantLoadView>,
}

/// What span of the load picture to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LoadQuery {
    /// How far back (`10m`, `1h`, `1d`): the span ends at the end of the last closed window.
    /// Default `10m`; at least one window (`storage.load.window`), at most `storage.load.retention`.
    window: Option<String>,
    /// Add time series with points this wide (`10s`, `1m`): at least one window, at most 1440
    /// points. Default: no series.
    step: Option<String>,
    /// How many vshards and tenants to list (1 to 100). Default 10.
    #[param(minimum = 1, maximum = 100)]
    top: Option<usize>,
}

errors!(GetLoadErrors: InvalidQuery, CatalogUnavailable);

/// The load picture: the fleet's load on the shards over a span of time (every instance's,
/// summed), per shard and kind of work, the heaviest vshards and tenants, with optional time
/// series. Counted at each shard statement into windows of `storage.load.window` (default 10 s);
/// windows still open (the last one) are not in it.
#[utoipa::path(get, path = "/v1/admin/load", params(LoadQuery), responses(
    (status = 200, description = "The load picture", body = LoadView),
    GetLoadErrors,
))]
pub async fn get_load(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<LoadQuery>,
) -> Result<axum::Json<LoadView>, ApiError> {
    let length = span_length(&app.load, query.window.as_deref(), "window", Duration::from_secs(600))?;
    let step = query.step.as_deref().map(|s| step_length(&app.load, s, length)).transpose()?;
    let top = query.top.unwrap_or(10);
    if !(1..=MAX_TOP).contains(&top) {
        return Err(ApiError::new(Code::InvalidQuery, format!("top: from 1 to {MAX_TOP}")));
    }
    let span = span_of(&app.load, length, step);
    let picture = balance::picture(&app.router, span, top).await?;
    let homes: Vec<Option<u32>> = app.router.with_map(|map| {
        let home = |tenant: &str| map.route_tenant(tenant).ok().filter(|r| r.strategy == Strategy::Hash);
        picture.tenants.iter().map(|t| home(&t.tenant).map(|route| route.vshard)).collect()
    });
    Ok(axum::Json(load_view(&picture, homes)))
}

/// The view of `picture`; `homes` has the home vshard of each of its tenants, in order.
fn load_view(picture: &LoadPicture, homes: Vec<Option<u32>>) -> LoadView {
    let span = picture.span;
    let seconds = span.seconds();
    let step_s = span.step_ms.map(|s| s as f64 / 1000.0);
    let series = |points: &[Counters]| -> Vec<Point> {
        let (Some(step_ms), Some(step_s)) = (span.step_ms, step_s) else { return Vec::new() };
        points
            .iter()
            .enumerate()
            .map(|(i, c)| Point { start: rfc3339(span.since_ms + step_ms * i as i64), rates: Rates::of(c, step_s) })
            .collect()
    };
    let fleet_time = picture.fleet.all().statement_us;
    LoadView {
        since: rfc3339(span.since_ms),
        until: rfc3339(span.until_ms),
        window_s: seconds,
        step_s,
        instances: picture.instances.len(),
        fleet: WorkMeasures::of(&picture.fleet, seconds),
        shards: picture
            .shards
            .iter()
            .map(|s| ShardLoadView {
                shard: s.shard.clone(),
                registered: s.registered,
                share_of_statement_time: share(s.load.all().statement_us, fleet_time),
                load: WorkMeasures::of(&s.load, seconds),
                series: series(&s.series),
            })
            .collect(),
        vshards: picture
            .vshards
            .iter()
            .map(|v| VshardLoadView {
                vshard: vshard_of(v.vshard),
                shard: v.shard.clone(),
                owner: v.owner.clone(),
                load: Measures::of(&v.load, seconds),
                series: series(&v.series),
            })
            .collect(),
        tenants: picture
            .tenants
            .iter()
            .zip(homes)
            .map(|(t, vshard)| TenantLoadView {
                tenant: t.tenant.clone(),
                vshard,
                shards: t.shards.clone(),
                load: Measures::of(&t.load, seconds),
                overcount_ms: t.overcount_us as f64 / 1000.0,
                series: series(&t.series),
            })
            .collect(),
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

fn vshard_of(vshard: i32) -> Option<u32> {
    (vshard != NO_VSHARD).then(|| u32::try_from(vshard).ok()).flatten()
}

/// The measure a heat map shows.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeatMetric {
    /// Statement time per second (ms/s).
    #[default]
    StatementMsPerS,
    /// Statements that read, per second.
    ReadsPerS,
    /// Statements that wrote, per second.
    WritesPerS,
    /// Rows read per second.
    RowsReadPerS,
    /// Rows written per second.
    RowsWrittenPerS,
    /// Bytes read per second.
    BytesReadPerS,
    /// Bytes written per second.
    BytesWrittenPerS,
    /// Failed or refused statements per second.
    ErrorsPerS,
}

impl HeatMetric {
    fn of(self, rates: &Rates) -> f64 {
        match self {
            HeatMetric::StatementMsPerS => rates.statement_ms_per_s,
            HeatMetric::ReadsPerS => rates.reads_per_s,
            HeatMetric::WritesPerS => rates.writes_per_s,
            HeatMetric::RowsReadPerS => rates.rows_read_per_s,
            HeatMetric::RowsWrittenPerS => rates.rows_written_per_s,
            HeatMetric::BytesReadPerS => rates.bytes_read_per_s,
            HeatMetric::BytesWrittenPerS => rates.bytes_written_per_s,
            HeatMetric::ErrorsPerS => rates.errors_per_s,
        }
    }
}

/// Whose work a heat map shows.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeatWork {
    /// Clients' requests.
    #[default]
    Request,
    /// Jobs moving data.
    Move,
    /// The gateway's upkeep.
    Maintenance,
}

impl HeatWork {
    fn work(self) -> Work {
        match self {
            HeatWork::Request => Work::Request,
            HeatWork::Move => Work::Move,
            HeatWork::Maintenance => Work::Maintenance,
        }
    }
}

/// What heat map to draw.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HeatMapQuery {
    /// The measure. Default `statement_ms_per_s`.
    metric: Option<HeatMetric>,
    /// Whose work. Default `request`.
    work: Option<HeatWork>,
    /// How far back (`1h`, `1d`). Default `1h`; at least one window, at most
    /// `storage.load.retention`.
    since: Option<String>,
    /// The width of a column (`10s`, `1m`): at least one window, at most 1440 columns. Default:
    /// the span in about 60 columns, a whole number of windows.
    step: Option<String>,
}

/// One row of the heat map.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HeatRowView {
    /// The vshard; `null` for the row of a shard's load that no vshard placed (pinned tenants'
    /// data, range-distributed collections).
    pub vshard: Option<u32>,
    /// The shard that owns the vshard now (for a `null` vshard, the shard itself).
    pub shard: String,
    /// The measure in each column.
    pub values: Vec<f64>,
}

/// A heat map of vshards (rows) by time (columns), as a Key Visualizer draws it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HeatMapView {
    /// The measure of the cells.
    pub metric: HeatMetric,
    /// Whose work.
    pub work: HeatWork,
    /// The first column's start, RFC 3339.
    pub since: String,
    /// The last column's end, RFC 3339: the end of the last closed window.
    pub until: String,
    /// The width of a column (seconds).
    pub step_s: f64,
    /// Each column's start, RFC 3339.
    pub columns: Vec<String>,
    /// Every vshard in vshard order, then one row per shard (in the map's order) for its load
    /// that no vshard placed.
    pub rows: Vec<HeatRowView>,
}

errors!(GetHeatMapErrors: InvalidQuery, CatalogUnavailable);

/// The heat map of the load picture: a matrix of vshards (rows, in vshard order, each labelled
/// with the shard that owns it now) by time (columns), the data of a Key Visualizer. Hot spots,
/// sequential writes and periodic jobs show as bright cells, lines and stripes.
#[utoipa::path(get, path = "/v1/admin/load/heatmap", params(HeatMapQuery), responses(
    (status = 200, description = "The heat map", body = HeatMapView),
    GetHeatMapErrors,
))]
pub async fn get_heat_map(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<HeatMapQuery>,
) -> Result<axum::Json<HeatMapView>, ApiError> {
    let length = span_length(&app.load, query.since.as_deref(), "since", Duration::from_secs(3600))?;
    let step = match query.step.as_deref() {
        Some(step) => step_length(&app.load, step, length)?,
        None => default_step(&app.load, length),
    };
    let (metric, work) = (query.metric.unwrap_or_default(), query.work.unwrap_or_default());
    let map = balance::heat_map(&app.router, span_of(&app.load, length, Some(step)), work.work()).await?;
    Ok(axum::Json(heat_map_view(&map, metric, work)))
}

fn heat_map_view(map: &HeatMap, metric: HeatMetric, work: HeatWork) -> HeatMapView {
    let span = map.span;
    let step_ms = span.step_ms.unwrap_or(1);
    let step_s = step_ms as f64 / 1000.0;
    HeatMapView {
        metric,
        work,
        since: rfc3339(span.since_ms),
        until: rfc3339(span.until_ms),
        step_s,
        columns: (0..span.points()).map(|i| rfc3339(span.since_ms + step_ms * i as i64)).collect(),
        rows: map
            .rows
            .iter()
            .map(|row| HeatRowView {
                vshard: vshard_of(row.vshard),
                shard: row.shard.clone(),
                values: row.cells.iter().map(|c| metric.of(&Rates::of(c, step_s))).collect(),
            })
            .collect(),
    }
}
