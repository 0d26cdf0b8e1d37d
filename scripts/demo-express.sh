#!/usr/bin/env bash
# Builds and starts tollgate (memory store, built-in policy) and the Express
# demo login of examples/express-login (Node, with the TypeScript client of
# clients/typescript, installed from its npm tarball) together, on free
# loopback ports, prints the demo's URL and stops both on Ctrl-C or when
# either ends.
#
# TOLLGATE_ADDR and DEMO_ADDR choose the addresses (loopback IP and port; by
# default a free port each, found at start). A port another program holds is
# refused, and the script checks that each address answers from the process
# it started (scripts/demo-lib.sh, shared with scripts/demo.sh).
# TRUSTED_PROXIES (prefixes, comma-separated) is passed to the demo: by
# default it trusts no proxy and counts each browser under its connection's
# address. Needs go, node (18 or later) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NPM=${NPM:-npm}
client=clients/typescript
app=examples/express-login
DEMO_NAME=demo-express
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh

for tool in "$GO" node "$NPM" curl; do
  command -v "$tool" >/dev/null || demo_fail "$tool is not on PATH"
done

# newer_than FILE DIR...: true when FILE is missing or anything in DIR... is newer.
newer_than() {
  local file=$1
  shift
  [ ! -e "$file" ] || [ -n "$(find "$@" -newer "$file" -print -quit 2>/dev/null)" ]
}

demo_addrs

echo "demo-express: building tollgate" >&2
"$GO" build -o "$DEMO_DIR/tollgate" ./cmd/tollgate

# The client, packed as its npm tarball (which the demo installs, as a
# user would), and the demo: installed and built when missing or out of date.
tarball=build/npm/tollgate-client-0.1.0.tgz
if newer_than "$client/node_modules/.package-lock.json" "$client/package-lock.json"; then
  echo "demo-express: npm ci in $client" >&2
  (cd "$client" && "$NPM" ci --no-audit --no-fund)
fi
if newer_than "$tarball" "$client/src" "$client/package.json" "$client/tsconfig.json" "$client/README.md"; then
  echo "demo-express: packing $client" >&2
  NPM=$NPM scripts/build-npm.sh build/npm >/dev/null
fi
if newer_than "$app/node_modules/.package-lock.json" "$app/package-lock.json" "$tarball"; then
  echo "demo-express: npm ci in $app" >&2
  (cd "$app" && "$NPM" ci --no-audit --no-fund)
fi
if newer_than "$app/dist/server.js" "$app/src" "$app/tsconfig.json" "$app/node_modules/@tollgate/client"; then
  echo "demo-express: building $app" >&2
  (cd "$app" && "$NPM" run build)
fi

# The memory store and the built-in policy: no config file, no Redis. Its
# log goes to the terminal and to a file demo_wait reads.
env -u TOLLGATE_CONFIG -u TOLLGATE_REDIS_URL -u TOLLGATE_REDIS_CLUSTER_ADDRS \
  -u TOLLGATE_REDIS_SENTINEL_ADDRS TOLLGATE_LISTEN="$TOLLGATE_ADDR" \
  "$DEMO_DIR/tollgate" serve 2> >(tee "$DEMO_DIR/tollgate.log" >&2) &
DEMO_PIDS+=($!)
demo_wait_tollgate "${DEMO_PIDS[0]}" "$DEMO_DIR/tollgate.log"

# The app prints "listening http://ADDR" on stdout once it holds its port.
(cd "$app" && exec env TOLLGATE_URL="http://$TOLLGATE_ADDR" LISTEN="$DEMO_ADDR" node dist/server.js) \
  > >(tee "$DEMO_DIR/express.log" >&2) &
DEMO_PIDS+=($!)
demo_wait "the Express demo" "${DEMO_PIDS[1]}" "$DEMO_DIR/express.log" "listening http://$DEMO_ADDR" "http://$DEMO_ADDR/login"

echo "demo-express: open http://$DEMO_ADDR/login (Ctrl-C stops tollgate and the demo)" >&2
# Returns when either process ends, or on Ctrl-C; the traps stop the other.
wait -n "${DEMO_PIDS[@]}"
