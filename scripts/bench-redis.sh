#!/usr/bin/env bash
# Compares tollgate on Redis with Redis's own ceiling on this machine, in one run:
#   1. redis-benchmark: EVALSHA of tollgate's backoff script (the same script,
#      arguments of the same size), 64 clients, pipelines of 5 as a check sends;
#   2. go test -bench BenchmarkLogin/store=redis: full logins through the engine.
# Prints both and the ratio of script calls per second. Bounded: fixed request
# counts, loopback only; the server it starts is stopped by PID at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-redis.sh
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no --loglevel warning &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat authguard/redisstore/time.lua authguard/redisstore/backoff.lua)")
echo "== redis-benchmark: EVALSHA backoff.lua (charge), 64 clients, -P 5, 200000 calls"
rb=$(redis-benchmark -p "$port" -c 64 -n 200000 -P 5 -r 4096 -q \
  EVALSHA "$sha" 1 "tg:default:login:acct:__rand_int__AAAAAAAAAAAAAAAAAA" charge 5 1000 2 1800000 86400000 "" 86400000 "" 1 0 | tr '\r' '\n' | grep -i 'requests per second' | tail -1)
echo "$rb"
ceiling=$(echo "$rb" | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/')

echo "== go test -bench BenchmarkLogin/store=redis (a login = check + report = 2 round trips, 2 script calls of 5 and 4 ops)"
out=$(go test -run '^$' -bench 'BenchmarkLogin/store=redis/clients=64' -benchtime=20000x -count=3 ./authguard/redisstore | grep Benchmark)
echo "$out"
median_ns=$(echo "$out" | awk '{print $3}' | sort -n | sed -n 2p)
awk -v ns="$median_ns" -v ceil="$ceiling" 'BEGIN {
  logins = 1e9 / ns; ops = logins * 9
  printf "tollgate: %.0f logins/s = %.0f ops/s in 2 script calls a login (median of 3); redis ceiling %.0f backoff.lua calls/s; ratio %.2f\n", logins, ops, ceil, ops / ceil
}'
