-- Shared by the load scripts (loaded with dofile): bearer token from $TOKEN, random keys
-- k-00000 .. k-(KEYS-1) from $KEYS (default 10000), a per-thread random seed, and a done()
-- that prints one machine-readable line the harness parses (latencies in microseconds).

local token = os.getenv("TOKEN") or ""
local keys = tonumber(os.getenv("KEYS") or "10000")
local tenant = os.getenv("TENANT") or "bench"
local base = "/v1/tenants/" .. tenant .. "/collections/items/records/"

local next_id = 0
function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
end

function init(args)
  math.randomseed(os.time() * 1000 + (id or 0))
  if token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
end

function random_key_path()
  return string.format("%sk-%05d", base, math.random(0, keys - 1))
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "SGBENCH requests=%d rps=%.1f p50_us=%d p99_us=%d non2xx=%d socket_errors=%d\n",
    summary.requests, summary.requests / secs, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
