-- Downloads the URL given on the command line, no credentials (valet URLs and nginx), and prints
-- one machine-readable line for bench/valet.sh: bytes read (headers included, a few hundred
-- bytes per answer; partial answers at the end of the run count too) and latencies in
-- microseconds. Defines no response() hook, so wrk never buffers the bodies.

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "SGBENCH requests=%d rps=%.2f bytes=%d secs=%.3f p50_us=%d p99_us=%d non2xx=%d socket_errors=%d\n",
    summary.requests, summary.requests / secs, summary.bytes, secs, latency:percentile(50),
    latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
