//! Routing microbenchmark: one routing decision (`route_tenant`) for pinned and hashed tenants
//! with 1,000,000 pins and 1024 vshards, and the memory the tenant directory takes.
//!
//! Run with `cargo run --release -p shardgate-bench --bin routing`. It reports; it never fails
//! on a figure. Targets (issue 2): < 100 ns per decision, < 128 MiB for 1,000,000 pins.

use std::hint::black_box;
use std::time::Instant;

use parking_lot::RwLock;
use shardgate_shard_router::map::{MapSnapshot, ShardEntry, TenantEntry, TenantKey, spread_vshards};
use shardgate_shard_router::{ShardId, ShardState, TenantId, Tier};

const PINS: usize = 1_000_000;
const HASHED: usize = 100_000;
const SHARDS: usize = 4;
const LOOKUPS: usize = 5_000_000;

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A deterministic pseudo-random sequence (xorshift) so every run looks up the same tenants.
fn indices(n: usize, modulo: usize) -> Vec<usize> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % modulo as u64) as usize
        })
        .collect()
}

/// Times `route_tenant` over the tenants `order` picks. The ids are laid out one after another
/// in the order they are looked up, so reading them streams from memory: as in a request, the
/// tenant id itself is hot, and what is measured is the map.
fn time_routes(label: &str, map: &RwLock<MapSnapshot>, names: &[String], order: &[usize]) -> f64 {
    let mut ids = String::new();
    let mut ends = Vec::with_capacity(order.len());
    for &i in order {
        ids.push_str(&names[i]);
        ends.push(ids.len());
    }
    let (ids, ends) = (ids.as_str(), ends.as_slice());
    let lookups = || {
        let mut start = 0;
        ends.iter().map(move |&end| {
            let id = &ids[start..end];
            start = end;
            id
        })
    };
    for id in lookups().take(100_000) {
        black_box(map.read().route_tenant(id).ok());
    }
    let started = Instant::now();
    for id in lookups() {
        black_box(map.read().route_tenant(black_box(id)).ok());
    }
    let ns = started.elapsed().as_nanos() as f64 / order.len() as f64;
    println!("{label:<34} {ns:>8.1} ns/decision  ({} decisions)", order.len());
    ns
}

/// The latency of one cold memory read on this machine: a pointer chase through a random cycle
/// over a 64 MiB array (the size of the directory). Each read depends on the last, as each routing
/// decision (serialised by the map's lock) does; no structure can route a cold tenant faster.
fn memory_latency_floor(reads: usize) -> f64 {
    let n = 64 * 1024 * 1024 / 8;
    let order = indices(n, usize::MAX);
    // Sattolo's algorithm: a single cycle through every slot.
    let mut next: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = order[i] % i;
        next.swap(i, j);
    }
    let mut at = 0;
    let started = Instant::now();
    for _ in 0..reads {
        at = next[at];
    }
    black_box(at);
    started.elapsed().as_nanos() as f64 / reads as f64
}

fn main() {
    let pinned_names: Vec<String> = (0..PINS).map(|i| format!("tenant-{i:07}")).collect();
    let hashed_names: Vec<String> = (0..HASHED).map(|i| format!("hashed-{i:06}")).collect();

    let before = rss_bytes();
    let mut map = MapSnapshot::empty(1024);
    map.shards = (0..SHARDS)
        .map(|i| ShardEntry { id: ShardId::parse(&format!("shard-{i}")).unwrap(), state: ShardState::Active })
        .collect();
    map.vshards = spread_vshards(1024, SHARDS);
    map.tenants.reserve(PINS + HASHED);
    for (i, name) in pinned_names.iter().enumerate() {
        let entry = TenantEntry {
            pin: Some((i % SHARDS) as u16),
            tier: Tier::Standard,
            rate_limit: None,
            incarnation: Default::default(),
            spread: false,
        };
        map.tenants.insert(TenantKey::from(TenantId::parse(name).unwrap().as_str()), entry);
    }
    let after_pins = rss_bytes();
    for name in &hashed_names {
        map.tenants.insert(
            TenantKey::from(TenantId::parse(name).unwrap().as_str()),
            TenantEntry {
                pin: None,
                tier: Tier::Standard,
                rate_limit: None,
                incarnation: Default::default(),
                spread: false,
            },
        );
    }
    let map = RwLock::new(map);

    println!("shardgate routing microbenchmark: {PINS} pins, {HASHED} hashed tenants, 1024 vshards, {SHARDS} shards");
    let pin_mib = after_pins.saturating_sub(before) as f64 / (1024.0 * 1024.0);
    println!("{:<34} {pin_mib:>8.1} MiB RSS  (target < 128 MiB)", "tenant directory, 1,000,000 pins");

    let pinned = time_routes("route pinned tenant (lookup)", &map, &pinned_names, &indices(LOOKUPS, PINS));
    let hashed = time_routes("route hashed tenant (hash)", &map, &hashed_names, &indices(LOOKUPS, HASHED));
    time_routes("route pinned, 1,000 hot tenants", &map, &pinned_names[..1000], &indices(LOOKUPS, 1000));
    time_routes("route hashed, 1,000 hot tenants", &map, &hashed_names[..1000], &indices(LOOKUPS, 1000));
    let unknown: Vec<String> = (0..1000).map(|i| format!("nobody-{i}")).collect();
    time_routes("route unknown tenant (404)", &map, &unknown, &indices(LOOKUPS / 5, unknown.len()));
    let floor = memory_latency_floor(LOOKUPS);
    println!("{:<34} {floor:>8.1} ns/read  (floor for a cold look-up)", "baseline: memory latency, 64 MiB");
    println!("cold pinned / floor = {:.2}, cold hashed / floor = {:.2}", pinned / floor, hashed / floor);
    println!(
        "targets: pinned {} 100 ns, hashed {} 100 ns, pins {} 128 MiB",
        if pinned < 100.0 { "<" } else { ">=" },
        if hashed < 100.0 { "<" } else { ">=" },
        if pin_mib < 128.0 { "<" } else { ">=" },
    );
}
