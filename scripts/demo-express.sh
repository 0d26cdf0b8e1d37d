#!/usr/bin/env bash
# Builds and starts tollgate (memory store, built-in policy) and the Express
# demo login of examples/express-login (Node, with the TypeScript client of
# clients/typescript) together, on free loopback ports, prints the demo's
# URL and stops both on Ctrl-C or when either ends.
#
# TOLLGATE_ADDR and DEMO_ADDR choose the addresses (loopback host:port; by
# default a free port each, found at start). A port already taken is
# refused. TRUSTED_PROXIES (prefixes, comma-separated) is passed to the demo:
# by default it trusts no proxy and counts each browser under its
# connection's address. Needs go, node (18 or later) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NPM=${NPM:-npm}
client=clients/typescript
app=examples/express-login

for tool in "$GO" node "$NPM" curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "demo-express: $tool is not on PATH" >&2
    exit 1
  fi
done

# free_port prints a port the kernel has free on 127.0.0.1 now.
free_port() {
  node -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => console.log(p)); });'
}

# check_addr refuses an address that is not loopback host:port, or whose
# port another program holds.
check_addr() {
  local name=$1 addr=$2
  node -e '
    const [name, addr] = process.argv.slice(1);
    const m = /^(?:\[([^\]]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(addr);
    const host = m ? (m[1] ?? m[2]) : "", port = m ? Number(m[3]) : -1;
    const net = require("net");
    const loopback = new net.BlockList();
    loopback.addSubnet("127.0.0.0", 8, "ipv4");
    loopback.addAddress("::1", "ipv6");
    const family = net.isIP(host);
    if (!m || family === 0 || port < 1 || port > 65535 || !loopback.check(host, family === 6 ? "ipv6" : "ipv4")) {
      console.error(`demo-express: ${name}=${addr} is not a loopback host:port such as 127.0.0.1:8080`);
      process.exit(2);
    }
    const s = net.createServer();
    s.once("error", (err) => {
      console.error(`demo-express: ${name}=${addr}: ${err.code === "EADDRINUSE" ? "the port is taken by another program" : err.message}`);
      process.exit(1);
    });
    s.listen({ port, host, exclusive: true }, () => s.close(() => process.exit(0)));' "$name" "$addr"
}

# newer_than FILE DIR...: true when FILE is missing or anything in DIR... is newer.
newer_than() {
  local file=$1
  shift
  [ ! -e "$file" ] || [ -n "$(find "$@" -newer "$file" -print -quit 2>/dev/null)" ]
}

TOLLGATE_ADDR=${TOLLGATE_ADDR:-127.0.0.1:$(free_port)}
check_addr TOLLGATE_ADDR "$TOLLGATE_ADDR"
if [ -z "${DEMO_ADDR:-}" ]; then
  DEMO_ADDR=127.0.0.1:$(free_port)
  # The kernel may hand out tollgate's port again: not the same one.
  while [ "$DEMO_ADDR" = "$TOLLGATE_ADDR" ]; do DEMO_ADDR=127.0.0.1:$(free_port); done
fi
check_addr DEMO_ADDR "$DEMO_ADDR"
if [ "$DEMO_ADDR" = "$TOLLGATE_ADDR" ]; then
  echo "demo-express: TOLLGATE_ADDR and DEMO_ADDR are the same address" >&2
  exit 2
fi
echo "demo-express: tollgate on $TOLLGATE_ADDR, the demo on $DEMO_ADDR" >&2

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

echo "demo-express: building tollgate" >&2
"$GO" build -o "$bin/tollgate" ./cmd/tollgate

# The client and the demo: installed and built when missing or out of date.
if newer_than "$client/node_modules/.package-lock.json" "$client/package-lock.json"; then
  echo "demo-express: npm ci in $client" >&2
  (cd "$client" && "$NPM" ci --no-audit --no-fund)
fi
if newer_than "$client/dist/index.js" "$client/src" "$client/package.json" "$client/tsconfig.json"; then
  echo "demo-express: building $client" >&2
  (cd "$client" && "$NPM" run build)
fi
if newer_than "$app/node_modules/.package-lock.json" "$app/package-lock.json"; then
  echo "demo-express: npm ci in $app" >&2
  (cd "$app" && "$NPM" ci --no-audit --no-fund)
fi
if newer_than "$app/dist/server.js" "$app/src" "$app/tsconfig.json" "$client/dist"; then
  echo "demo-express: building $app" >&2
  (cd "$app" && "$NPM" run build)
fi

# The memory store and the built-in policy: no config file, no Redis.
env -u TOLLGATE_CONFIG -u TOLLGATE_REDIS_URL -u TOLLGATE_REDIS_CLUSTER_ADDRS \
  -u TOLLGATE_REDIS_SENTINEL_ADDRS TOLLGATE_LISTEN="$TOLLGATE_ADDR" \
  "$bin/tollgate" serve &
pids+=($!)

# wait_for NAME PID URL: waits (at most 10 s) until URL answers while PID
# runs; fails when PID ends first (its port taken, say).
wait_for() {
  local name=$1 pid=$2 url=$3
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "demo-express: $name did not start" >&2
      return 1
    fi
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then
      # Answered: by our process only if it still runs.
      sleep 0.2
      if kill -0 "$pid" 2>/dev/null; then
        return 0
      fi
      echo "demo-express: $name did not start (something else answers at $url)" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "demo-express: $name did not answer at $url in 10 s" >&2
  return 1
}
wait_for tollgate "${pids[0]}" "http://$TOLLGATE_ADDR/healthz"

(cd "$app" && exec env TOLLGATE_URL="http://$TOLLGATE_ADDR" LISTEN="$DEMO_ADDR" node dist/server.js) &
pids+=($!)
wait_for "the Express demo" "${pids[1]}" "http://$DEMO_ADDR/login"

echo "demo-express: open http://$DEMO_ADDR/login (Ctrl-C stops tollgate and the demo)" >&2
# Returns when either process ends, or on Ctrl-C; the traps stop the other.
wait -n "${pids[@]}"
