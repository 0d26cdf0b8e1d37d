#!/usr/bin/env bash
# Builds and starts tollgate (memory store, built-in policy, 127.0.0.1:8080)
# and the demo login of examples/demo-login (127.0.0.1:8081) together, prints
# the demo's URL and stops both on Ctrl-C. TOLLGATE_ADDR and DEMO_ADDR change
# the addresses (loopback only).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TOLLGATE_ADDR=${TOLLGATE_ADDR:-127.0.0.1:8080}
DEMO_ADDR=${DEMO_ADDR:-127.0.0.1:8081}

bin=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$bin"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "demo: building tollgate and demo-login" >&2
"$GO" build -o "$bin/tollgate" ./cmd/tollgate
"$GO" build -o "$bin/demo-login" ./examples/demo-login

# The memory store and the built-in policy: no config file, no Redis.
env -u TOLLGATE_CONFIG -u TOLLGATE_REDIS_URL -u TOLLGATE_REDIS_CLUSTER_ADDRS \
  -u TOLLGATE_REDIS_SENTINEL_ADDRS TOLLGATE_LISTEN="$TOLLGATE_ADDR" \
  "$bin/tollgate" serve &
pids+=($!)

# Wait (at most 10 s) until tollgate answers.
for _ in $(seq 1 100); do
  if curl -fsS -o /dev/null "http://$TOLLGATE_ADDR/healthz" 2>/dev/null; then
    break
  fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "demo: tollgate did not start" >&2
    exit 1
  fi
  sleep 0.1
done

"$bin/demo-login" -listen "$DEMO_ADDR" -tollgate "http://$TOLLGATE_ADDR" &
pids+=($!)

echo "demo: open http://$DEMO_ADDR/login (Ctrl-C stops tollgate and the demo)" >&2
# Returns when either process ends, or on Ctrl-C; the traps stop the other.
wait -n "${pids[@]}"
