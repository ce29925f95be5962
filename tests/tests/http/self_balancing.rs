//! The balancer in `apply` mode on four PostgreSQL shards, running on its own every second over
//! short load windows (1 s) that the tests set:
//!
//! - **convergence**: one shard holds eight of the fourteen busy tenants (the others two each);
//!   the balancer moves vshards off it until every shard is within the threshold, in a bounded
//!   number of moves, each vshard at most once, and the clients' per-key histories stay
//!   linearizable throughout;
//! - **no flapping**: load that alternates between two shards every 3 s, faster than the 12 s
//!   window: no vshard moves twice within the cooldown, and the moves stay under the six a
//!   perfect spread of its tenants would take;
//! - **a transient burst does nothing**: 3 s of heavy traffic on one shard trips the average of a
//!   10 s window, yet nothing moves (the shard was not overfull for most of the window);
//! - **a hot tenant is isolated**: a tenant making most of its shard's load is moved alone by a
//!   tenant move; its neighbours' p99 before and after is printed (a figure for the note, not an
//!   assertion: speed is measured by the bench).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, record_path};
use std::sync::Mutex;

use crate::moves::{KEYS, assert_linearizable, client, ended, seeded_history};

/// A PostgreSQL fleet whose balancer applies its decisions every second over 1 s load windows.
async fn fleet(tune: impl FnOnce(&mut Config)) -> TestApp {
    TestApp::spawn_with(Backend::Postgres, |config| {
        config.storage.load.window = Duration::from_secs(1);
        // Every read reaches its shard.
        config.cache.enabled = false;
        config.storage.moves.cleanup_grace = Duration::from_millis(200);
        config.storage.moves.lease = Duration::from_secs(2);
        config.balancer.mode = shardgate_shard_router::balance::Mode::Apply;
        config.balancer.interval = Duration::from_secs(1);
        config.balancer.cooldown = Duration::from_secs(300);
        config.balancer.min_load_ms_per_s = 1.0;
        tune(config);
    })
    .await
}

/// The shards in the map's order.
pub(crate) async fn shards(app: &TestApp) -> Vec<String> {
    let map = app.shard_map().await;
    map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect()
}

/// Creates tenants `{prefix}0`, `{prefix}1`, ... until the i-th shard of the map holds
/// `wanted[i]` of them (placed by their vshards, each on its own vshard); returns them by shard.
pub(crate) async fn place(app: &TestApp, prefix: &str, wanted: [usize; 4]) -> Vec<(String, Vec<String>)> {
    let shards = shards(app).await;
    let mut placed: Vec<(String, Vec<String>)> = shards.iter().map(|s| (s.clone(), Vec::new())).collect();
    let mut vshards = std::collections::HashSet::new();
    for i in 0..2000 {
        if placed.iter().zip(wanted).all(|((_, t), n)| t.len() == n) {
            return placed;
        }
        let tenant = format!("{prefix}{i}");
        app.create_tenant(&tenant).await;
        let route = app.route(&tenant, "c", "k").await;
        let (shard, vshard) = (route["shard"].as_str().unwrap(), route["vshard"].as_u64().unwrap());
        let at = shards.iter().position(|s| s == shard).unwrap();
        if placed[at].1.len() < wanted[at] && vshards.insert(vshard) {
            placed[at].1.push(tenant);
        }
    }
    panic!("no placement of {wanted:?} found: {placed:?}");
}

async fn balancer(app: &TestApp) -> Value {
    expect_json(app.admin(Method::GET, "/v1/admin/balancer?limit=200", None).await, StatusCode::OK).await
}

/// The runs so far, oldest first.
async fn runs(app: &TestApp) -> Vec<Value> {
    let mut runs = balancer(app).await["runs"].as_array().unwrap().clone();
    runs.reverse();
    runs
}

/// The runs that started a move.
fn started(runs: &[Value]) -> Vec<&Value> {
    runs.iter().filter(|r| r["outcome"] == "started").collect()
}

/// Asserts that no vshard or tenant was moved twice; answers how many moves there were.
fn assert_each_moved_once(runs: &[Value]) -> usize {
    let mut moved: BTreeMap<String, usize> = BTreeMap::new();
    for run in started(runs) {
        let what = format!("{}{}{}", run["move"]["kind"], run["move"]["vshard"], run["move"]["tenant"]);
        *moved.entry(what).or_default() += 1;
    }
    assert!(moved.values().all(|n| *n == 1), "something moved twice within the cooldown: {moved:?}");
    moved.len()
}

/// Requests of the clients of [`Traffic`]: when, whose, how long (µs).
type Timings = Arc<Mutex<Vec<(Instant, String, u64)>>>;

/// Clients that each send, until stopped, puts and gets of the 100 keys of the tenant its
/// `pick` names for the time since the start (`None`: it waits), timing every answer.
struct Traffic {
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
    timings: Timings,
    clients: Vec<tokio::task::JoinHandle<()>>,
}

impl Traffic {
    fn start(
        app: &TestApp,
        tenants: &[String],
        clients: usize,
        pick: impl Fn(usize, Duration) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let (stop, errors) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let timings: Timings = Arc::default();
        let pick = Arc::new(pick);
        let began = Instant::now();
        let tokens: Arc<HashMap<String, String>> =
            Arc::new(tenants.iter().map(|t| (t.clone(), app.rw_token(t))).collect());
        let clients = (0..clients)
            .map(|id| {
                let (stop, errors, timings, pick) = (stop.clone(), errors.clone(), timings.clone(), pick.clone());
                let (base, tokens) = (app.base_url.clone(), tokens.clone());
                tokio::spawn(async move {
                    let http = shardgate_tests::http_client();
                    let mut n = id as u64 * 7919;
                    while !stop.load(Ordering::Relaxed) {
                        let Some(tenant) = pick(id, began.elapsed()) else {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            continue;
                        };
                        let token = &tokens[&tenant];
                        n += 1;
                        let url = format!("{base}{}", record_path(&tenant, "c", &format!("k{}", n % 100)));
                        let sent = Instant::now();
                        let answer = if n.is_multiple_of(2) {
                            http.put(&url).bearer_auth(token).json(&json!({"n": n})).send().await
                        } else {
                            http.get(&url).bearer_auth(token).send().await
                        };
                        let ok = match answer {
                            Ok(r) => r.status().is_success() || r.status() == StatusCode::NOT_FOUND,
                            Err(_) => false,
                        };
                        if ok {
                            timings.lock().unwrap().push((sent, tenant, sent.elapsed().as_micros() as u64));
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        Self { stop, errors, timings, clients }
    }

    async fn finish(self) -> (u64, Vec<(Instant, String, u64)>) {
        self.stop.store(true, Ordering::Relaxed);
        for client in self.clients {
            client.await.unwrap();
        }
        let timings = std::mem::take(&mut *self.timings.lock().unwrap());
        (self.errors.load(Ordering::Relaxed), timings)
    }
}

/// The 99th percentile of `micros` (µs); 0 for none.
fn p99(mut micros: Vec<u64>) -> u64 {
    micros.sort_unstable();
    micros.get((micros.len() * 99 / 100).min(micros.len().saturating_sub(1))).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_balancer_moves_load_off_a_hot_shard_until_every_shard_is_within_the_threshold() {
    let app = fleet(|config| {
        config.balancer.window = Duration::from_secs(8);
        config.balancer.threshold = 0.25;
        config.balancer.sustained = 0.6;
        config.balancer.max_concurrent_moves = 2;
    })
    .await;
    // Eight busy tenants on the first shard, two on each other one: each gets the same traffic.
    let placed = place(&app, "t", [8, 2, 2, 2]).await;
    let hot = placed[0].0.clone();
    let tenants: Vec<String> = placed.iter().flat_map(|(_, t)| t.clone()).collect();
    let history = seeded_history(&app, &tenants).await;
    let tokens: Vec<(String, String)> = tenants.iter().map(|t| (t.clone(), app.rw_token(t))).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (errors, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let clients: Vec<_> = (0..8)
        .map(|id| {
            let (history, stop, errors, refused) = (history.clone(), stop.clone(), errors.clone(), refused.clone());
            tokio::spawn(client(app.base_url.clone(), tokens.clone(), id, history, stop, errors, refused))
        })
        .collect();

    // Converged: moves were made, none runs, and the last runs found the fleet balanced.
    let converged = eventually(Duration::from_secs(150), async || {
        let runs = runs(&app).await;
        let last: Vec<&Value> = runs.iter().rev().take(3).collect();
        let settled = last.len() == 3 && last.iter().all(|r| r["outcome"] == "balanced");
        (settled && !started(&runs).is_empty()).then_some(runs)
    })
    .await;
    let Some(runs) = converged else { panic!("not balanced in 150 s: {:#}", balancer(&app).await) };
    let moves = assert_each_moved_once(&runs);
    println!("moves: {moves}; runs: {}", runs.len());
    for run in started(&runs) {
        println!("run {}: {}", run["id"], run["reason"]);
        assert_eq!(run["move"]["from"], hot.as_str(), "only the hot shard sends: {run:#}");
        let job = ended(&app, run["job"].as_str().unwrap(), Duration::from_secs(60)).await;
        assert_eq!(job["state"], "done", "{job:#}");
    }
    // Four moves make [4, 3, 3, 4] of [8, 2, 2, 2]; every further move is a wasted one.
    assert!((3..=6).contains(&moves), "{moves} moves");

    // A window later, with nothing attributed but what landed, every shard is within the threshold.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let plan = expect_json(app.admin(Method::GET, "/v1/admin/balancer/plan", None).await, StatusCode::OK).await;
    let line = plan["overfull_above_ms_per_s"].as_f64().unwrap();
    for shard in plan["shards"].as_array().unwrap() {
        assert!(shard["statement_ms_per_s"].as_f64().unwrap() <= line, "{plan:#}");
    }

    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected answers");
    let operations = assert_linearizable(&history, tenants.len() * KEYS);
    println!("{operations} operations checked; {} refused while fenced", refused.load(Ordering::Relaxed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_alternating_faster_than_the_window_moves_nothing_twice() {
    let app = fleet(|config| {
        config.balancer.window = Duration::from_secs(12);
    })
    .await;
    let placed = place(&app, "a", [4, 4, 0, 0]).await;
    let (first, second) = (placed[0].1.clone(), placed[1].1.clone());
    // Every 3 s the traffic goes from the first shard's tenants to the second's and back.
    let all: Vec<String> = first.iter().chain(&second).cloned().collect();
    let traffic = Traffic::start(&app, &all, 6, move |id, elapsed| {
        let group = if (elapsed.as_secs() / 3) % 2 == 0 { &first } else { &second };
        Some(group[id % group.len()].clone())
    });
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (errors, timings) = traffic.finish().await;
    assert!(timings.len() > 100, "traffic flowed: {}", timings.len());
    let runs = runs(&app).await;
    let moves = assert_each_moved_once(&runs);
    println!("{} runs, {moves} moves, {errors} failed requests", runs.len());
    for run in started(&runs) {
        println!("run {}: {}", run["id"], run["reason"]);
    }
    assert!(runs.iter().any(|r| r["reason"].as_str().unwrap().contains("overfull")), "the load was felt");
    // Six moves spread the eight tenants perfectly (one of each group on every shard): any
    // more would be churn. Each tenant's vshard moving at most once bounds it at eight anyway.
    assert!(moves <= 6, "{moves} moves");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_shorter_than_the_window_moves_nothing() {
    let app = fleet(|config| {
        config.balancer.window = Duration::from_secs(10);
    })
    .await;
    let placed = place(&app, "b", [4, 1, 1, 1]).await;
    let busy = placed[0].1.clone();
    let traffic = Traffic::start(&app, &placed[0].1, 8, move |id, elapsed| {
        (elapsed < Duration::from_secs(3)).then(|| busy[id % busy.len()].clone())
    });
    tokio::time::sleep(Duration::from_secs(15)).await;
    let (_, timings) = traffic.finish().await;
    assert!(timings.len() > 100, "the burst was sent: {}", timings.len());
    let runs = runs(&app).await;
    assert!(started(&runs).is_empty(), "a burst moved something: {runs:#?}");
    assert!(
        runs.iter().any(|r| r["reason"].as_str().unwrap().contains("overfull on average")),
        "the burst tripped the window's average: {runs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_making_most_of_its_shards_load_is_moved_alone() {
    let app = fleet(|config| {
        config.balancer.window = Duration::from_secs(8);
        config.balancer.sustained = 0.6;
    })
    .await;
    // The first shard: the hot tenant (six clients) and three neighbours; two tenants on each
    // other shard; one client each.
    let placed = place(&app, "h", [4, 2, 2, 2]).await;
    let hot = placed[0].1[0].clone();
    let neighbours: Vec<String> = placed[0].1[1..].to_vec();
    let others: Vec<String> = placed.iter().skip(1).flat_map(|(_, t)| t.clone()).collect();
    let home = placed[0].0.clone();
    let (h, n, o) = (hot.clone(), neighbours.clone(), others.clone());
    let all: Vec<String> = placed.iter().flat_map(|(_, t)| t.clone()).collect();
    let traffic = Traffic::start(&app, &all, 15, move |id, _| {
        Some(match id {
            0..6 => h.clone(),
            6..9 => n[id - 6].clone(),
            _ => o[id - 9].clone(),
        })
    });
    let isolated = eventually(Duration::from_secs(90), async || {
        let runs = runs(&app).await;
        runs.into_iter().find(|r| r["outcome"] == "started" && r["move"]["kind"] == "tenant")
    })
    .await;
    let Some(isolated) = isolated else { panic!("the hot tenant was not isolated: {:#}", balancer(&app).await) };
    let moved_at = Instant::now();
    assert_eq!(isolated["move"]["tenant"], hot.as_str(), "{isolated:#}");
    assert_eq!(isolated["move"]["from"], home.as_str());
    let job = ended(&app, isolated["job"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!((job["kind"].as_str(), job["state"].as_str()), (Some("tenant.move"), Some("done")), "{job:#}");
    let now = app.route(&hot, "c", "k").await;
    assert_eq!(now["shard"], isolated["move"]["to"], "pinned where it went: {now}");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (_, timings) = traffic.finish().await;
    // The neighbours' p99 before the move was decided and after it was done (a figure only).
    let of_neighbours = |after: bool| {
        let decided = moved_at - Duration::from_secs(1);
        timings
            .iter()
            .filter(|(at, tenant, _)| neighbours.contains(tenant) && if after { *at > moved_at } else { *at < decided })
            .map(|(_, _, us)| *us)
            .collect::<Vec<_>>()
    };
    println!(
        "neighbours' p99 before: {} us, after: {} us; {}",
        p99(of_neighbours(false)),
        p99(of_neighbours(true)),
        isolated["reason"]
    );
}
