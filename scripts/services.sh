#!/usr/bin/env bash
# Makes sure the local PostgreSQL (127.0.0.1:5432, trust auth) and Redis (127.0.0.1:6379) the
# tests use are running; starts them if not. Safe to run repeatedly.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
fi
if ! redis_up; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
for _ in $(seq 1 30); do
    if pg_up && redis_up; then
        echo "PostgreSQL and Redis are up"
        exit 0
    fi
    sleep 1
done
echo "services did not come up: PostgreSQL $(pg_up && echo up || echo down), Redis $(redis_up && echo up || echo down)" >&2
exit 1
