-- PUT a small JSON body at a random key among the seeded keys (an update: the keys exist).
dofile((os.getenv("WRK_DIR") or "bench/wrk") .. "/common.lua")

wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"

function request()
  local body = string.format('{"n":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}', math.random(0, 1000000))
  return wrk.format("PUT", random_key_path(), nil, body)
end
