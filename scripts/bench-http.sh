#!/usr/bin/env bash
# Compares tollgate with the Go ceiling over HTTP on this machine:
#   1. builds bin/tollgate and bin/tollgate-bench;
#   2. starts `tollgate serve` (memory store, or Redis when REDIS_URL is set)
#      and `tollgate-bench ceiling`, each on a free loopback port;
#   3. with REDIS_URL set and envoy's ratelimit on the PATH (as `ratelimit`:
#      go build -o ratelimit ./src/service_cmd in envoyproxy/ratelimit),
#      starts it too, on the same Redis, with a limit on descriptor "ip";
#   4. runs `tollgate-bench` against them, in interleaved rounds, measuring
#      each server's CPU per request (and Redis's with REDIS_URL).
# Arguments go to tollgate-bench before the defaults' URLs, so they override
# the defaults: scripts/bench-http.sh -duration 5s -load cycle
# Environment: REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run tollgate on
# Redis; TOLLGATE_LOG_LEVEL as for tollgate serve (default info). Bounded by
# bench's own limits; both servers are stopped by PID at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/tollgate ./cmd/tollgate
go build -o bin/tollgate-bench ./cmd/tollgate-bench

dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -s "$dir/serve.log" ]; then
    problems=$(grep -c -E '"level":"(WARN|ERROR)"' "$dir/serve.log" || true)
    echo "tollgate log: $(wc -l <"$dir/serve.log") lines, $problems warnings or errors"
    grep -E '"level":"(WARN|ERROR)"' "$dir/serve.log" | head -5 || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_listening PORT PID: waits up to 10s for PID to accept connections on PORT.
wait_listening() {
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || { echo "bench-http: process $2 exited at start" >&2; return 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench-http: nothing listens on port $1 after 10s" >&2
  return 1
}

tg_port=$(free_port)
ceiling_port=$(free_port)
redis_args=()
store="memory store"
if [ -n "${REDIS_URL:-}" ]; then
  export TOLLGATE_REDIS_URL="$REDIS_URL"
  export TOLLGATE_SECRET="${TOLLGATE_SECRET:-$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')}"
  redis_args=(-redis "$REDIS_URL")
  store="Redis"
fi

TOLLGATE_LISTEN="127.0.0.1:$tg_port" bin/tollgate serve 2>"$dir/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
bin/tollgate-bench ceiling -listen "127.0.0.1:$ceiling_port" >"$dir/ceiling.log" 2>&1 &
ceiling_pid=$!
pids+=("$ceiling_pid")
wait_listening "$tg_port" "$serve_pid" || { cat "$dir/serve.log" >&2; exit 1; }
wait_listening "$ceiling_port" "$ceiling_pid" || { cat "$dir/ceiling.log" >&2; exit 1; }

echo "tollgate serve: pid $serve_pid, $store, log level ${TOLLGATE_LOG_LEVEL:-info}; bench-ceiling: pid $ceiling_pid"
targets=(-pid "$serve_pid" -pid "$ceiling_pid" "${redis_args[@]}" "http://127.0.0.1:$tg_port" "http://127.0.0.1:$ceiling_port")

if [ -n "${REDIS_URL:-}" ] && command -v ratelimit >/dev/null; then
  mkdir -p "$dir/rt/ratelimit/config"
  cp cmd/tollgate-bench/ratelimit.yaml "$dir/rt/ratelimit/config/bench.yaml"
  envoy_port=$(free_port)
  redis_hostport=$(python3 -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(f"{p.hostname}:{p.port or 6379}")' "$REDIS_URL")
  env USE_STATSD=false REDIS_SOCKET_TYPE=tcp REDIS_URL="$redis_hostport" LOG_LEVEL=warn \
    HOST=127.0.0.1 PORT="$envoy_port" GRPC_HOST=127.0.0.1 GRPC_PORT="$(free_port)" \
    DEBUG_HOST=127.0.0.1 DEBUG_PORT="$(free_port)" RUNTIME_ROOT="$dir/rt" \
    RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false ratelimit >"$dir/envoy.log" 2>&1 &
  envoy_pid=$!
  pids+=("$envoy_pid")
  wait_listening "$envoy_port" "$envoy_pid" || { cat "$dir/envoy.log" >&2; exit 1; }
  echo "envoy ratelimit: pid $envoy_pid, on the same Redis"
  targets=(-pid "$serve_pid" -pid "$ceiling_pid" -pid "$envoy_pid" "${redis_args[@]}"
    "http://127.0.0.1:$tg_port" "http://127.0.0.1:$ceiling_port" "envoy+http://127.0.0.1:$envoy_port")
fi

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version)"
bin/tollgate-bench -rounds 3 -duration 10s -load check -subjects random "$@" "${targets[@]}"
