-- Plain GET / against the ceiling server (no token, no key).
dofile((os.getenv("WRK_DIR") or "bench/wrk") .. "/common.lua")

function request()
  return wrk.format("GET", "/")
end
