-- GET a random record among the seeded keys.
dofile((os.getenv("WRK_DIR") or "bench/wrk") .. "/common.lua")

function request()
  return wrk.format("GET", random_key_path())
end
