-- GET one record at a fixed total rate (bench/fairness.sh: the noisy tenant's flood).
--
-- Environment: TOKEN (bearer token), TENANT, RECORD_PATH (collection/records/key, default
-- items/records/k), RATE (requests per second over all threads), THREADS (the -t given to wrk).
--
-- Pacing: wrk calls delay() before each request of a connection and waits that many milliseconds.
-- Each thread keeps one schedule of send times, RATE/THREADS per second, shared by its
-- connections: a connection ready to send takes the next slot and waits until it is due. With
-- enough connections (more than rate x latency per thread) the attempt rate is the schedule's
-- whatever the answers' latency; slots more than 100 ms overdue are dropped and counted as
-- `missed` instead of being sent in a catch-up burst. The clock is CLOCK_MONOTONIC through
-- LuaJIT's FFI (wrk's Lua has no sub-second clock).
--
-- done() prints one line: SGPACED requests=... secs=... rps=... n2xx=... n429=... other=...
-- socket_errors=... missed=...

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } sg_timespec;
  int clock_gettime(int clk_id, sg_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("sg_timespec")
local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local token = os.getenv("TOKEN") or ""
local tenant = os.getenv("TENANT") or "noisy"
local record_path = os.getenv("RECORD_PATH") or "items/records/k"
local rate = tonumber(os.getenv("RATE") or "2000")
local threads = tonumber(os.getenv("THREADS") or "1")
local path = "/v1/tenants/" .. tenant .. "/collections/" .. record_path

local all_threads = {}
function setup(thread)
  table.insert(all_threads, thread)
end

-- Per-thread state (each wrk thread has its own Lua state).
local interval_ms = 1000 * threads / rate
local next_ms = nil
n2xx, n429, other, missed = 0, 0, 0, 0

function init(args)
  if token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
end

function delay()
  local now = now_ms()
  if next_ms == nil then
    next_ms = now
  elseif next_ms < now - 100 then
    missed = missed + math.floor((now - next_ms) / interval_ms)
    next_ms = now
  end
  local wait = next_ms - now
  next_ms = next_ms + interval_ms
  if wait < 0 then
    return 0
  end
  return wait
end

function request()
  return wrk.format("GET", path)
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    n2xx = n2xx + 1
  elseif status == 429 then
    n429 = n429 + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local t2xx, t429, tother, tmissed = 0, 0, 0, 0
  for _, thread in ipairs(all_threads) do
    t2xx = t2xx + thread:get("n2xx")
    t429 = t429 + thread:get("n429")
    tother = tother + thread:get("other")
    tmissed = tmissed + thread:get("missed")
  end
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "SGPACED requests=%d secs=%.3f rps=%.1f n2xx=%d n429=%d other=%d socket_errors=%d missed=%d\n",
    summary.requests, secs, summary.requests / secs, t2xx, t429, tother,
    e.connect + e.read + e.write + e.timeout, tmissed))
end
